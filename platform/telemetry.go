package platform

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	otelprom "go.opentelemetry.io/contrib/bridges/prometheus"
	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// OpenTelemetry export. weft serve sends traces and metrics over OTLP when
// the standard variables ask for it, and nothing otherwise:
//
//   - traces are on when OTEL_TRACES_EXPORTER names an exporter (otlp,
//     console) or, unset, when OTEL_EXPORTER_OTLP_ENDPOINT or
//     OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set; metrics likewise with
//     OTEL_METRICS_EXPORTER and OTEL_EXPORTER_OTLP_METRICS_ENDPOINT;
//   - OTEL_SDK_DISABLED=true, or "none" as the exporter, turns a signal off;
//   - OTEL_EXPORTER_OTLP_PROTOCOL (or the per-signal variable) chooses
//     http/protobuf (the default) or grpc; endpoints, headers, timeouts,
//     OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, the sampler and the
//     batch settings are the SDK's own variables, read from the process
//     environment.
//
// The metrics sent are the server's Prometheus metrics (the same as
// GET /metrics) and the GenAI client metrics (gen_ai.client.token.usage,
// gen_ai.client.operation.duration). Spans follow the GenAI semantic
// conventions: an HTTP server span per request, "invoke_agent {agent}" per
// turn, "retrieval" for knowledge-base recall, "chat {model}" per model
// call, "execute_tool {tool}" per tool call, and a delegate's turn as a
// child of the tool call that delegated.

// telemetry is the process's OpenTelemetry providers and how to stop them.
type telemetry struct {
	tracerProvider trace.TracerProvider
	meterProvider  metric.MeterProvider
	// gatherer is the Prometheus registry bridged to OTLP, bound once the
	// server (which owns the registry) exists.
	gatherer lateGatherer
	shutdown []func(context.Context) error
}

// otelSignalOn reports whether a signal ("TRACES" or "METRICS") is to be
// exported, by the OTEL_* variables.
func otelSignalOn(getenv func(string) string, signal string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	switch strings.TrimSpace(getenv("OTEL_" + signal + "_EXPORTER")) {
	case "none":
		return false
	case "":
		return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") != ""
	}
	return true
}

// startTelemetry builds the tracer and meter providers the OTEL_* variables
// ask for (no-op providers for the signals that are off). getenv decides
// what is on; the exporters read their settings from the process
// environment, as the SDK does.
func startTelemetry(ctx context.Context, getenv func(string) string) (*telemetry, error) {
	t := &telemetry{tracerProvider: tracenoop.NewTracerProvider(), meterProvider: metricnoop.NewMeterProvider()}
	traces, metrics := otelSignalOn(getenv, "TRACES"), otelSignalOn(getenv, "METRICS")
	if !traces && !metrics {
		return t, nil
	}
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceName(serviceName(getenv))))
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("opentelemetry resource: %w", err)
	}
	if traces {
		exp, err := autoexport.NewSpanExporter(ctx)
		if err != nil {
			return nil, fmt.Errorf("opentelemetry traces: %w", err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		t.tracerProvider = tp
		t.shutdown = append(t.shutdown, tp.Shutdown)
	}
	if metrics {
		reader, err := t.metricReader(ctx, getenv)
		if err != nil {
			t.close(ctx)
			return nil, fmt.Errorf("opentelemetry metrics: %w", err)
		}
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res))
		t.meterProvider = mp
		t.shutdown = append(t.shutdown, mp.Shutdown)
	}
	return t, nil
}

// serviceName is OTEL_SERVICE_NAME, else "weft".
func serviceName(getenv func(string) string) string {
	if n := strings.TrimSpace(getenv("OTEL_SERVICE_NAME")); n != "" {
		return n
	}
	return "weft"
}

// metricReader is a periodic OTLP reader (OTEL_METRIC_EXPORT_INTERVAL)
// over the protocol the variables name, carrying the Prometheus registry
// too.
func (t *telemetry) metricReader(ctx context.Context, getenv func(string) string) (sdkmetric.Reader, error) {
	switch exp := strings.TrimSpace(getenv("OTEL_METRICS_EXPORTER")); exp {
	case "", "otlp":
	default:
		return nil, fmt.Errorf("OTEL_METRICS_EXPORTER=%q is not supported: use otlp or none (Prometheus is served at /metrics)", exp)
	}
	proto := getenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL")
	if proto == "" {
		proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var exp sdkmetric.Exporter
	var err error
	switch proto {
	case "", "http/protobuf":
		exp, err = otlpmetrichttp.New(ctx)
	case "grpc":
		exp, err = otlpmetricgrpc.New(ctx)
	default:
		return nil, fmt.Errorf("OTLP protocol %q is not supported: use http/protobuf or grpc", proto)
	}
	if err != nil {
		return nil, err
	}
	return sdkmetric.NewPeriodicReader(exp, sdkmetric.WithProducer(otelprom.NewMetricProducer(otelprom.WithGatherer(&t.gatherer)))), nil
}

// close flushes and stops the exporters.
func (t *telemetry) close(ctx context.Context) error {
	var errs []error
	for _, f := range t.shutdown {
		errs = append(errs, f(ctx))
	}
	t.shutdown = nil
	return errors.Join(errs...)
}

// lateGatherer is a Prometheus gatherer bound after construction: the
// meter provider exists before the server whose registry it exports.
type lateGatherer struct {
	g atomic.Pointer[prometheus.Gatherer]
}

func (l *lateGatherer) bind(g prometheus.Gatherer) { l.g.Store(&g) }

// Gather implements prometheus.Gatherer.
func (l *lateGatherer) Gather() ([]*dto.MetricFamily, error) {
	if g := l.g.Load(); g != nil {
		return (*g).Gather()
	}
	return nil, nil
}

// otelInstruments are what the server records through OpenTelemetry.
type otelInstruments struct {
	tracer     trace.Tracer
	on         bool // the tracer records (not the no-op one)
	prop       propagation.TextMapPropagator
	tokenUsage metric.Int64Histogram
	opDuration metric.Float64Histogram
}

func newOtelInstruments(tp trace.TracerProvider, mp metric.MeterProvider) *otelInstruments {
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	_, noop := tp.(tracenoop.TracerProvider)
	o := &otelInstruments{
		tracer: tp.Tracer("github.com/weftlabs/weft/platform"),
		on:     !noop,
		prop:   propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	}
	m := mp.Meter("github.com/weftlabs/weft/platform")
	// Names, units and bucket boundaries of the GenAI semantic conventions.
	o.tokenUsage, _ = m.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"),
		metric.WithDescription("Number of input and output tokens used."),
		metric.WithExplicitBucketBoundaries(1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864))
	o.opDuration, _ = m.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("GenAI operation duration."),
		metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92))
	return o
}

// recordModelCall records one model call's GenAI metrics.
func (o *otelInstruments) recordModelCall(ctx context.Context, model string, seconds float64, input, output int, failed string) {
	provider, name := splitModel(model)
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.provider.name", provider),
		attribute.String("gen_ai.request.model", name),
	}
	if failed != "" {
		attrs = append(attrs, attribute.String("error.type", failed))
	}
	o.opDuration.Record(ctx, seconds, metric.WithAttributes(attrs...))
	if failed != "" {
		return
	}
	o.tokenUsage.Record(ctx, int64(input), metric.WithAttributes(append(attrs, attribute.String("gen_ai.token.type", "input"))...))
	o.tokenUsage.Record(ctx, int64(output), metric.WithAttributes(append(attrs, attribute.String("gen_ai.token.type", "output"))...))
}

// splitModel splits "provider/model" (a model's name as the platform
// knows it); a name without provider is its own.
func splitModel(spec string) (provider, model string) {
	if p, m, ok := strings.Cut(spec, "/"); ok {
		return p, m
	}
	return spec, spec
}

// serverSpan starts the span of an HTTP request to route, continuing the
// caller's trace (traceparent); span is nil when tracing is off.
func (o *otelInstruments) serverSpan(r *http.Request, route string) (*http.Request, trace.Span) {
	if !o.on {
		return r, nil
	}
	ctx := o.prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	ctx, span := o.tracer.Start(ctx, route, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
		attribute.String("http.request.method", r.Method),
		attribute.String("http.route", strings.TrimPrefix(route, r.Method+" ")),
		attribute.String("url.path", r.URL.Path),
	))
	return r.WithContext(ctx), span
}

// endServerSpan ends an HTTP request's span with its status.
func endServerSpan(span trace.Span, status int) {
	if span == nil {
		return
	}
	span.SetAttributes(attribute.Int("http.response.status_code", status))
	if status >= 500 {
		span.SetStatus(codes.Error, http.StatusText(status))
	}
	span.End()
}
