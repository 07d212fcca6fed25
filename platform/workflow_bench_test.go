package platform

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
