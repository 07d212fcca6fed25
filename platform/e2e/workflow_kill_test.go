package e2e

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/weftlabs/weft/platform/client"
)

// workflowAPI is the outside service a test workflow calls: /first
// answers at once; /second hangs (until the test ends) on its first call
// and answers later ones. It counts the calls of each.
type workflowAPI struct {
	srv           *httptest.Server
	first, second atomic.Int32
	hung          chan struct{}
}

func newWorkflowAPI(t *testing.T) *workflowAPI {
	a := &workflowAPI{hung: make(chan struct{}, 1)}
	done := make(chan struct{})
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/first":
			a.first.Add(1)
			io.WriteString(w, "one")
		case "/second":
			if a.second.Add(1) == 1 {
				a.hung <- struct{}{}
				select {
				case <-done:
				case <-r.Context().Done():
				}
				return
			}
			io.WriteString(w, "two")
		}
	}))
	t.Cleanup(func() { close(done); a.srv.Close() })
	return a
}

// definition: start → a (GET /first) → b (GET /second, idempotent) → end.
func (a *workflowAPI) definition() []byte {
	return []byte(mustJSON(map[string]any{"name": "durable", "nodes": []any{
		map[string]any{"id": "start", "kind": "start"},
		map[string]any{"id": "a", "kind": "http", "url": a.srv.URL + "/first", "depends_on": []string{"start"}},
		map[string]any{"id": "b", "kind": "http", "url": a.srv.URL + "/second", "depends_on": []string{"a"}, "idempotent": true},
		map[string]any{"id": "end", "kind": "end", "outputs": map[string]any{"a": "{{ nodes.a.outputs.body }}", "b": "{{ nodes.b.outputs.body }}"}},
	}}))
}

// startRun saves the workflow and starts a run through c, returning when
// the run is inside node b.
func (a *workflowAPI) startRun(t *testing.T, c *client.Client) {
	t.Helper()
	if _, _, err := c.ApplyWorkflow(t.Context(), a.definition()); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = c.RunWorkflow(context.Background(), "durable", nil) }()
	select {
	case <-a.hung:
	case <-time.After(60 * time.Second):
		t.Fatal("the run did not reach node b")
	}
}

// waitRun waits for the workflow's one run to finish and checks that it
// succeeded with both nodes' outputs, node a having run once.
func (a *workflowAPI) waitRun(t *testing.T, c *client.Client) {
	t.Helper()
	var run client.WorkflowRun
	waitFor(t, "the run to be resumed and finish", func() bool {
		runs, err := c.ListWorkflowRuns(t.Context(), "durable", 0)
		if err != nil || len(runs) != 1 {
			return false
		}
		run = runs[0]
		return run.Status != "running" && run.Status != "queued"
	})
	if run.Status != "succeeded" || string(run.Outputs) != `{"a":"one","b":"two"}` {
		t.Fatalf("run %+v: %s", run, run.Outputs)
	}
	if a.first.Load() != 1 || a.second.Load() != 2 {
		t.Fatalf("node a ran %d times (want 1: finished before the kill), node b %d (want 2)", a.first.Load(), a.second.Load())
	}
}

// TestWorkflowSurvivesSIGKILL: weft serve is killed with SIGKILL in the
// middle of a workflow run and restarted on the same data directory (and
// store): the run resumes from its checkpoints at once, and the node that
// had finished does not run again. On the embedded store and on
// PostgreSQL.
func TestWorkflowSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, storeArgs []string) {
		api := newWorkflowAPI(t)
		vars := map[string]string{"WEFT_ADMIN_KEY": adminKey, "WEFT_HTTP_TOOLS_ALLOW": "127.0.0.1"}
		dir := t.TempDir()
		args := append([]string{"--addr", "127.0.0.1:0", "--log-format", "json"}, storeArgs...)
		p := startServe(t, dir, vars, args...)
		api.startRun(t, client.New(p.url(), adminKey))
		p.signal(syscall.SIGKILL, 30*time.Second)

		p = startServe(t, dir, vars, args...)
		api.waitRun(t, client.New(p.url(), adminKey))
	}
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		run(t, nil)
	})
	t.Run("postgres", func(t *testing.T) {
		pgURL := os.Getenv("WEFT_TEST_POSTGRES_URL")
		if pgURL == "" {
			t.Skip("set WEFT_TEST_POSTGRES_URL to run on PostgreSQL")
		}
		t.Parallel()
		run(t, []string{"--postgres", freshSchema(t, pgURL)})
	})
}

// TestWorkflowTakeover: two replicas share PostgreSQL; the one running a
// workflow is killed, and the other takes the run over once its lease
// expired, without running the finished node again.
func TestWorkflowTakeover(t *testing.T) {
	t.Parallel()
	pgURL := os.Getenv("WEFT_TEST_POSTGRES_URL")
	if pgURL == "" {
		t.Skip("set WEFT_TEST_POSTGRES_URL to run the takeover test")
	}
	dsn := freshSchema(t, pgURL)
	api := newWorkflowAPI(t)
	vars := map[string]string{"WEFT_ADMIN_KEY": adminKey, "WEFT_HTTP_TOOLS_ALLOW": "127.0.0.1", "WEFT_WORKFLOW_LEASE": "2s"}
	args := []string{"--addr", "127.0.0.1:0", "--log-format", "json", "--postgres", dsn}
	pa := startServe(t, "", vars, args...)
	pb := startServe(t, "", vars, args...)
	api.startRun(t, client.New(pa.url(), adminKey))
	pa.signal(syscall.SIGKILL, 30*time.Second)
	api.waitRun(t, client.New(pb.url(), adminKey))
}
