package platform

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"testing"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an in-process OTLP collector: it decodes what the
// exporters send, over HTTP (protobuf) or gRPC, and keeps it.
type otlpReceiver struct {
	coltracepb.UnimplementedTraceServiceServer
	colmetricpb.UnimplementedMetricsServiceServer

	mu       sync.Mutex
	spans    []*tracepb.Span
	service  []string // service.name of each resource that sent spans
	metrics  []string // names of the metrics received
	requests int
}

func (o *otlpReceiver) addTraces(req *coltracepb.ExportTraceServiceRequest) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.requests++
	for _, rs := range req.ResourceSpans {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				o.service = append(o.service, kv.Value.GetStringValue())
			}
		}
		for _, ss := range rs.ScopeSpans {
			o.spans = append(o.spans, ss.Spans...)
		}
	}
}

func (o *otlpReceiver) addMetrics(req *colmetricpb.ExportMetricsServiceRequest) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.requests++
	for _, rm := range req.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				o.metrics = append(o.metrics, m.Name)
			}
		}
	}
}

// Export implements the gRPC trace service.
func (o *otlpReceiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	o.addTraces(req)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// metricsService adapts the receiver to the gRPC metrics service (both
// services name their method Export).
type metricsService struct {
	colmetricpb.UnimplementedMetricsServiceServer
	o *otlpReceiver
}

func (m metricsService) Export(_ context.Context, req *colmetricpb.ExportMetricsServiceRequest) (*colmetricpb.ExportMetricsServiceResponse, error) {
	m.o.addMetrics(req)
	return &colmetricpb.ExportMetricsServiceResponse{}, nil
}

// ServeHTTP implements OTLP/HTTP with protobuf bodies.
func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var resp proto.Message
	switch r.URL.Path {
	case "/v1/traces":
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		o.addTraces(&req)
		resp = &coltracepb.ExportTraceServiceResponse{}
	case "/v1/metrics":
		var req colmetricpb.ExportMetricsServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		o.addMetrics(&req)
		resp = &colmetricpb.ExportMetricsServiceResponse{}
	default:
		http.NotFound(w, r)
		return
	}
	out, _ := proto.Marshal(resp)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// span returns the first span named name.
func (o *otlpReceiver) span(name string) *tracepb.Span {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, s := range o.spans {
		if s.Name == name {
			return s
		}
	}
	return nil
}

func (o *otlpReceiver) spanNames() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var names []string
	for _, s := range o.spans {
		names = append(names, s.Name)
	}
	return names
}

func (o *otlpReceiver) hasMetric(name string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Contains(o.metrics, name)
}

func attr(kvs []*commonpb.KeyValue, key string) *commonpb.AnyValue {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.Value
		}
	}
	return nil
}

// clearOTelEnv unsets every OTEL_* variable for the test.
func clearOTelEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		if k, _, _ := cutEnv(kv); len(k) > 5 && k[:5] == "OTEL_" {
			t.Setenv(k, "")
		}
	}
}

func cutEnv(kv string) (string, string, bool) {
	for i := range len(kv) {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return kv, "", false
}

// telemetryEnv starts telemetry from the environment and a server that
// uses it.
func telemetryEnv(t *testing.T) (*testEnv, *telemetry) {
	t.Helper()
	tel, err := startTelemetry(context.Background(), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, nil, func(c *Config) { c.TracerProvider, c.MeterProvider = tel.tracerProvider, tel.meterProvider })
	tel.gatherer.bind(env.srv.metrics.reg)
	return env, tel
}

func exportTurn(t *testing.T, env *testEnv, tel *telemetry) {
	t.Helper()
	a := env.createAgent(env.admin, map[string]any{"name": "otel-agent"})
	resp := env.do(env.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "hello"}, nil,
		"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("chat: %d %s", resp.StatusCode, body(resp))
	}
	if err := tel.close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func checkExported(t *testing.T, rcv *otlpReceiver) {
	t.Helper()
	chat := rcv.span("POST /v1/agents/{id}/chat")
	if chat == nil {
		t.Fatalf("no chat request span among %q", rcv.spanNames())
	}
	if chat.Kind != tracepb.Span_SPAN_KIND_SERVER || attr(chat.Attributes, "http.response.status_code").GetIntValue() != 200 ||
		attr(chat.Attributes, "http.route").GetStringValue() != "/v1/agents/{id}/chat" {
		t.Errorf("chat span = %v", chat)
	}
	// The caller's traceparent was continued.
	if got := chat.TraceId; len(got) != 16 || got[0] != 0x0a || got[1] != 0xf7 {
		t.Errorf("trace id = %x, want the caller's", got)
	}
	if !slices.Contains(rcv.service, "weft-test") {
		t.Errorf("service names = %q", rcv.service)
	}
	// The turn's spans, GenAI conventions: invoke_agent under the request,
	// chat under the turn.
	turn := rcv.span("invoke_agent otel-agent")
	call := rcv.span("chat demo")
	if turn == nil || call == nil {
		t.Fatalf("no turn or model call span among %q", rcv.spanNames())
	}
	if string(turn.ParentSpanId) != string(chat.SpanId) || string(call.ParentSpanId) != string(turn.SpanId) {
		t.Errorf("span tree: turn's parent %x (want %x), call's parent %x (want %x)", turn.ParentSpanId, chat.SpanId, call.ParentSpanId, turn.SpanId)
	}
	if attr(turn.Attributes, "gen_ai.operation.name").GetStringValue() != "invoke_agent" || attr(turn.Attributes, "gen_ai.conversation.id").GetStringValue() == "" ||
		attr(call.Attributes, "gen_ai.provider.name").GetStringValue() != "scripted" || attr(call.Attributes, "gen_ai.usage.input_tokens").GetIntValue() == 0 ||
		call.Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("turn span %v\ncall span %v", turn.Attributes, call.Attributes)
	}
	if !rcv.hasMetric("gen_ai.client.token.usage") || !rcv.hasMetric("gen_ai.client.operation.duration") {
		t.Errorf("metrics = %q, want the GenAI client metrics", rcv.metrics)
	}
	// The Prometheus registry went out over OTLP too.
	if !rcv.hasMetric("weft_chat_turns_total") {
		t.Errorf("metrics = %q, want weft_chat_turns_total", rcv.metrics)
	}
}

func TestOTLPExportHTTP(t *testing.T) {
	clearOTelEnv(t)
	rcv := &otlpReceiver{}
	hs := httptest.NewServer(rcv)
	defer hs.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", hs.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_SERVICE_NAME", "weft-test")
	env, tel := telemetryEnv(t)
	exportTurn(t, env, tel)
	checkExported(t, rcv)
}

func TestOTLPExportGRPC(t *testing.T) {
	clearOTelEnv(t)
	rcv := &otlpReceiver{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(gs, rcv)
	colmetricpb.RegisterMetricsServiceServer(gs, metricsService{o: rcv})
	go gs.Serve(ln)
	defer gs.Stop()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+ln.Addr().String())
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
	t.Setenv("OTEL_SERVICE_NAME", "weft-test")
	env, tel := telemetryEnv(t)
	exportTurn(t, env, tel)
	checkExported(t, rcv)
}

// TestOTLPOffWhenUnset: without OTEL_* variables, or with the SDK
// disabled, nothing is exported and the providers are no-ops.
func TestOTLPOffWhenUnset(t *testing.T) {
	clearOTelEnv(t)
	rcv := &otlpReceiver{}
	hs := httptest.NewServer(rcv)
	defer hs.Close()
	for _, c := range []map[string]string{
		{},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": hs.URL, "OTEL_SDK_DISABLED": "true"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": hs.URL, "OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"},
	} {
		getenv := func(k string) string { return c[k] }
		if otelSignalOn(getenv, "TRACES") || otelSignalOn(getenv, "METRICS") {
			t.Errorf("%v: a signal is on", c)
		}
	}
	env, tel := telemetryEnv(t)
	if env.srv.otel.on {
		t.Error("tracing on without configuration")
	}
	exportTurn(t, env, tel)
	if rcv.requests != 0 {
		t.Errorf("%d export requests without configuration", rcv.requests)
	}
}
