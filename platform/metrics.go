package platform

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the server's Prometheus collectors, in a registry of the
// server's own (no global state).
type metrics struct {
	reg           *prometheus.Registry
	requests      *prometheus.CounterVec
	requestTime   *prometheus.HistogramVec
	turns         *prometheus.CounterVec
	turnLatency   prometheus.Histogram
	firstToken    prometheus.Histogram
	tokens        *prometheus.CounterVec
	modelErrors   *prometheus.CounterVec
	activeStreams prometheus.Gauge
	authFailures  prometheus.Counter
	toolCalls     *prometheus.CounterVec
	// cost and budgetRefusals: see usage.go.
	cost           *prometheus.CounterVec
	budgetRefusals prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{
		reg: newMetricsRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weft_http_requests_total", Help: "HTTP requests by route and status.",
		}, []string{"route", "status"}),
		requestTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "weft_http_request_duration_seconds", Help: "HTTP request latency by route.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 14),
		}, []string{"route"}),
		turns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weft_chat_turns_total", Help: "Chat turns by outcome (ok, model_error, cancelled, …).",
		}, []string{"outcome"}),
		turnLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "weft_chat_turn_duration_seconds", Help: "Whole chat turn latency.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14),
		}),
		firstToken: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "weft_chat_first_token_seconds", Help: "Time to the first streamed answer token.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14),
		}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weft_tokens_total", Help: "Model tokens by kind (prompt, completion) and model.",
		}, []string{"kind", "model"}),
		modelErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weft_model_errors_total", Help: "Failed model calls by model.",
		}, []string{"model"}),
		activeStreams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "weft_active_streams", Help: "Open streaming responses.",
		}),
		authFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "weft_auth_failures_total", Help: "Requests refused for a missing or invalid API key.",
		}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weft_tool_calls_total", Help: "Tool calls by outcome (ok, error).",
		}, []string{"outcome"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weft_cost_usd_total", Help: "Model cost in US dollars by model, from the price table.",
		}, []string{"model"}),
		budgetRefusals: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "weft_budget_refusals_total", Help: "Turns refused because a budget was spent.",
		}),
	}
	m.reg.MustRegister(m.cost, m.budgetRefusals)
	m.reg.MustRegister(m.requests, m.requestTime, m.turns, m.turnLatency, m.firstToken, m.tokens, m.modelErrors, m.activeStreams, m.authFailures, m.toolCalls)
	return m
}

func (m *metrics) observeRequest(route string, status int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.requestTime.WithLabelValues(route).Observe(d.Seconds())
}
