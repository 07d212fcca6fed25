package ai_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/provider/scripted"
)

// recorder is a TracerProvider that keeps the spans it starts.
type recorder struct {
	noop.TracerProvider
	mu    sync.Mutex
	spans []*span
}

type recTracer struct {
	noop.Tracer
	r *recorder
}

type span struct {
	noop.Span
	name  string
	attrs map[attribute.Key]attribute.Value
	code  codes.Code
	ended bool
}

func (r *recorder) Tracer(string, ...trace.TracerOption) trace.Tracer { return recTracer{r: r} }

func (t recTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	cfg := trace.NewSpanStartConfig(opts...)
	s := &span{name: name, attrs: map[attribute.Key]attribute.Value{}}
	s.SetAttributes(cfg.Attributes()...)
	t.r.mu.Lock()
	t.r.spans = append(t.r.spans, s)
	t.r.mu.Unlock()
	return trace.ContextWithSpan(ctx, s), s
}

func (s *span) SetAttributes(kv ...attribute.KeyValue) {
	for _, a := range kv {
		s.attrs[a.Key] = a.Value
	}
}
func (s *span) SetStatus(c codes.Code, _ string)        { s.code = c }
func (s *span) End(...trace.SpanEndOption)              { s.ended = true }
func (s *span) RecordError(error, ...trace.EventOption) {}

func TestTracing(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	m := scripted.New(steps(calls(call("1", "weather", CityArgs{"fail"})), text("sorry")))
	f, err := ai.Func[string, string](m, ai.Tools(weatherTool()), ai.Tracing(rec))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f(context.Background(), "weather?"); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range rec.spans {
		names = append(names, s.name)
		if !s.ended {
			t.Errorf("span %s not ended", s.name)
		}
	}
	want := []string{"invoke_agent weft", "chat scripted/model", "execute_tool weather", "chat scripted/model"}
	if !slices.Equal(names, want) {
		t.Fatalf("spans %q, want %q", names, want)
	}
	chat := rec.spans[1]
	if chat.attrs["gen_ai.operation.name"].AsString() != "chat" || chat.attrs["gen_ai.request.model"].AsString() != "scripted/model" ||
		chat.attrs["gen_ai.usage.input_tokens"].AsInt64() != 10 {
		t.Errorf("chat span attributes %v", chat.attrs)
	}
	tool := rec.spans[2]
	if tool.attrs["gen_ai.tool.name"].AsString() != "weather" || tool.attrs["gen_ai.tool.call.id"].AsString() != "1" || tool.code != codes.Error {
		t.Errorf("tool span %v %v", tool.attrs, tool.code)
	}
	if rec.spans[0].attrs["gen_ai.usage.output_tokens"].AsInt64() != 10 {
		t.Errorf("turn span attributes %v", rec.spans[0].attrs)
	}
}
