package platform

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/weftlabs/weft/internal/pgtest"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/workflow"
)

// BenchmarkWorkflowResume100 measures the resumption of a 100-node run
// (a chain of template nodes) interrupted before its last node: reading
// its 99 checkpoints, restoring them and running the end node with its
// checkpoint saved under the lease. On SQLite, and on PostgreSQL when
// WEFT_TEST_POSTGRES_URL is set.
func BenchmarkWorkflowResume100(b *testing.B) {
	ctx := context.Background()
	b.Run("sqlite", func(b *testing.B) {
		store, err := meta.OpenSQLite(ctx, filepath.Join(b.TempDir(), "meta.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer store.Close()
		benchResume(b, store)
	})
	b.Run("postgres", func(b *testing.B) {
		if os.Getenv("WEFT_TEST_POSTGRES_URL") == "" {
			b.Skip("set WEFT_TEST_POSTGRES_URL")
		}
		store, err := meta.OpenPostgres(ctx, pgtest.DSN(b, "wf_bench"))
		if err != nil {
			b.Fatal(err)
		}
		defer store.Close()
		benchResume(b, store)
	})
}

func benchResume(b *testing.B, store *meta.SQL) {
	ctx := context.Background()
	nodes := []any{map[string]any{"id": "start", "kind": "start"}}
	prev := "start"
	for i := 1; i <= 98; i++ {
		id := fmt.Sprintf("n%d", i)
		nodes = append(nodes, map[string]any{"id": id, "kind": "template", "template": "x", "depends_on": []string{prev}})
		prev = id
	}
	nodes = append(nodes, map[string]any{"id": "end", "kind": "end", "outputs": map[string]any{"last": "{{ nodes." + prev + ".outputs.text }}"}})
	raw, _ := json.Marshal(map[string]any{"name": "chain", "nodes": nodes})
	def, err := workflow.Parse(raw)
	if err != nil {
		b.Fatal(err)
	}
	if err := def.Validate(); err != nil {
		b.Fatal(err)
	}
	now := time.Now().UTC()
	var cps []meta.WorkflowCheckpoint
	for _, n := range def.Nodes[:len(def.Nodes)-1] {
		out := `{"text":"x"}`
		if n.Kind == workflow.KindStart {
			out = `{}`
		}
		cps = append(cps, meta.WorkflowCheckpoint{Key: n.ID, NodeID: n.ID, Outputs: json.RawMessage(out), StartedAt: now, FinishedAt: now})
	}
	eng := workflow.New(workflow.Services{})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		id := fmt.Sprintf("run%d", i)
		if err := store.CreateWorkflowRun(ctx, meta.WorkflowRun{ID: id, TenantID: "t", WorkflowID: "wf", Version: 1, Status: meta.RunRunning,
			Owner: "me", LeaseUntil: now.Add(time.Hour), CreatedAt: now}); err != nil {
			b.Fatal(err)
		}
		for _, cp := range cps {
			if err := store.SaveWorkflowCheckpoint(ctx, "t", id, "me", cp); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		cp := &runCheckpointer{store: store, tenant: "t", owner: "me", red: &runSecrets{}}
		res, err := workflow.Collect(eng.Run(ctx, def, map[string]any{}, workflow.WithRunID(id), workflow.WithCheckpointer(cp)))
		if err != nil || res.Outputs["last"] != "x" {
			b.Fatalf("resume: %v, %v", res, err)
		}
	}
}

// BenchmarkWorkflowNeighbour measures what one tenant's large run costs
// another tenant: tenant A runs a workflow of two nested iterations, 80
// items each (6,400 template nodes; concurrency 64 at each level) while
// tenant B lists its agents every 5 ms; it reports B's latency (p50, p99
// and max, in ms) during the run and alone, the run's length and status.
// On SQLite, as weft serve runs by default. Under the default limits the
// run fails when an inner iteration would take it over 5,000 node runs;
// under a limit of 10,000 it runs to its end.
//
//	go test -run '^$' -bench WorkflowNeighbour -benchtime 1x ./platform
func BenchmarkWorkflowNeighbour(b *testing.B) {
	b.Run("node_runs=default", func(b *testing.B) { benchNeighbour(b, 0) })
	b.Run("node_runs=10000", func(b *testing.B) { benchNeighbour(b, 10_000) })
}

func benchNeighbour(b *testing.B, nodeRuns int) {
	e := newEnv(b, nil, func(c *Config) { c.WorkflowLimits.Run.NodeRuns = nodeRuns })
	other := e.tenantKey("neighbour")
	e.createAgent(other, map[string]any{"name": "helper", "system_prompt": "Help."})
	const def = `{"name":"nest","nodes":[{"id":"start","kind":"start","inputs":{"xs":{"type":"array"}}},` +
		`{"id":"outer","kind":"iteration","items":"{{inputs.xs}}","concurrency":64,"output":"{{nodes.inner.outputs.results}}","nodes":[` +
		`{"id":"inner","kind":"iteration","items":"{{inputs.xs}}","concurrency":64,"output":"{{nodes.t.outputs.text}}","nodes":[` +
		`{"id":"t","kind":"template","template":"{{item}}"}]}]},` +
		`{"id":"end","kind":"end","outputs":{"n":"{{nodes.outer.outputs.results}}"}}]}`
	var wf map[string]any
	json.Unmarshal([]byte(def), &wf)
	e.saveWorkflow(wf)
	xs := make([]any, 80)
	for i := range xs {
		xs[i] = i
	}
	get := func() (time.Duration, error) {
		req, _ := http.NewRequest("GET", e.http.URL+"/v1/agents", nil)
		req.Header.Set("Authorization", "Bearer "+other)
		began := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("GET /v1/agents: %d", resp.StatusCode)
		}
		return time.Since(began), nil
	}
	// The neighbour alone first, for comparison: the machine's own noise.
	var alone []time.Duration
	for range 200 {
		time.Sleep(5 * time.Millisecond)
		d, err := get()
		if err != nil {
			b.Fatal(err)
		}
		alone = append(alone, d)
	}
	var lat []time.Duration
	var runTime time.Duration
	var status string
	b.ResetTimer()
	for range b.N {
		done := make(chan runAnswer, 1)
		began := time.Now()
		go func() {
			var run runAnswer
			e.do(e.admin, "POST", "/v1/workflows/nest/runs", map[string]any{"inputs": map[string]any{"xs": xs}}, &run)
			done <- run
		}()
	loop:
		for {
			select {
			case run := <-done:
				runTime, status = time.Since(began), run.Status
				if run.Status != meta.RunSucceeded {
					status += ": " + run.Error
				}
				break loop
			case <-time.After(5 * time.Millisecond):
			}
			d, err := get()
			if err != nil {
				b.Fatal(err)
			}
			lat = append(lat, d)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	slices.Sort(alone)
	b.ReportMetric(quantileMS(lat, 0.5), "neighbour-p50-ms")
	b.ReportMetric(quantileMS(lat, 0.99), "neighbour-p99-ms")
	b.ReportMetric(quantileMS(lat, 1), "neighbour-max-ms")
	b.ReportMetric(float64(len(lat)), "neighbour-requests")
	b.ReportMetric(runTime.Seconds(), "run-s")
	b.Logf("run %s in %v", status, runTime.Round(time.Millisecond))
	b.Logf("neighbour GET /v1/agents during the run: %d requests, p50 %.1f ms, p99 %.1f ms, max %.1f ms", len(lat), quantileMS(lat, 0.5), quantileMS(lat, 0.99), quantileMS(lat, 1))
	b.Logf("neighbour GET /v1/agents alone:          %d requests, p50 %.1f ms, p99 %.1f ms, max %.1f ms", len(alone), quantileMS(alone, 0.5), quantileMS(alone, 0.99), quantileMS(alone, 1))
}

// quantileMS is the q quantile of sorted, in milliseconds.
func quantileMS(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return float64(sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]) / 1e6
}
