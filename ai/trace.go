package ai

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/tool"
)

// Spans follow the OpenTelemetry GenAI semantic conventions: a turn span,
// a "chat {model}" span per model call and an "execute_tool {name}" span
// per tool call. They exist only with the Tracing option.

func (e *Engine) startTurn(ctx context.Context, t *Turn) (context.Context, trace.Span) {
	if e.cfg.tracer == nil {
		return ctx, nil
	}
	attrs := []attribute.KeyValue{attribute.String("gen_ai.operation.name", "invoke_agent")}
	if t.MemoryID != "" {
		attrs = append(attrs, attribute.String("gen_ai.conversation.id", t.MemoryID))
	}
	return e.cfg.tracer.Start(ctx, "invoke_agent weft", trace.WithAttributes(attrs...), trace.WithSpanKind(trace.SpanKindInternal))
}

func endSpan(span trace.Span, out *Outcome, err error) {
	if span == nil {
		return
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	} else if out != nil {
		span.SetAttributes(
			attribute.Int("gen_ai.usage.input_tokens", out.Usage.PromptTokens),
			attribute.Int("gen_ai.usage.output_tokens", out.Usage.CompletionTokens),
		)
	}
	span.End()
}

func (e *Engine) startCall(ctx context.Context, req *llm.Request) (context.Context, trace.Span) {
	if e.cfg.tracer == nil {
		return ctx, nil
	}
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.request.model", e.modelName),
	}
	if req.Temperature != nil {
		attrs = append(attrs, attribute.Float64("gen_ai.request.temperature", *req.Temperature))
	}
	if req.MaxTokens > 0 {
		attrs = append(attrs, attribute.Int("gen_ai.request.max_tokens", req.MaxTokens))
	}
	return e.cfg.tracer.Start(ctx, "chat "+e.modelName, trace.WithAttributes(attrs...), trace.WithSpanKind(trace.SpanKindClient))
}

func endCall(span trace.Span, resp *llm.Response, err error) {
	if span == nil {
		return
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	} else if resp != nil {
		span.SetAttributes(
			attribute.String("gen_ai.response.id", resp.ID),
			attribute.String("gen_ai.response.model", resp.Model),
			attribute.StringSlice("gen_ai.response.finish_reasons", []string{string(resp.FinishReason)}),
			attribute.Int("gen_ai.usage.input_tokens", resp.Usage.PromptTokens),
			attribute.Int("gen_ai.usage.output_tokens", resp.Usage.CompletionTokens),
		)
	}
	span.End()
}

// traceTools records a span per finished tool call, backdated to when it
// ran (the executor runs calls concurrently and knows nothing of tracing).
func (s *turnState) traceTools(ctx context.Context, execs []tool.Execution) {
	tr := s.e.cfg.tracer
	if tr == nil {
		return
	}
	end := time.Now()
	for i := range execs {
		x := &execs[i]
		_, span := tr.Start(ctx, "execute_tool "+x.Call.Name,
			trace.WithTimestamp(end.Add(-x.Duration)),
			trace.WithAttributes(
				attribute.String("gen_ai.operation.name", "execute_tool"),
				attribute.String("gen_ai.tool.name", x.Call.Name),
				attribute.String("gen_ai.tool.call.id", x.Call.ID),
			))
		if x.IsError {
			span.SetStatus(codes.Error, x.Content)
		}
		span.End(trace.WithTimestamp(end))
	}
}
