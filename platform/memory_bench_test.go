package platform

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/weftlabs/weft/memory/facts"
	"github.com/weftlabs/weft/provider/scripted"
)

// BenchmarkTurnMemory measures what an agent's memory costs a blocking
// chat turn on the embedded stores, one turn at a time: "plain" has no
// memory setting; "memory" recalls the user's facts (100 kept, on
// SQLite), learns after the turn in the background and keeps a running
// summary; "memory-quiet" is "memory" with each turn's learning waited
// for outside the timer, so that a turn never shares the machine and the
// metadata store's connections with the previous turn's learning. ns/op
// is a turn's latency as the client sees it; cpu-µs/turn counts the whole
// process, background learning included.
func BenchmarkTurnMemory(b *testing.B) {
	for _, name := range []string{"plain", "memory", "memory-quiet"} {
		b.Run(name, func(b *testing.B) {
			e, _ := newMemoryEnv(b, "sqlite")
			fields := map[string]any{"name": "bench", "system_prompt": "You answer questions."}
			if name != "plain" {
				fields["memory"] = map[string]any{"long_term": true, "model": "scripted/extract", "summary": map[string]any{"model": "scripted/summarize", "threshold_tokens": 1024}}
			}
			a := e.createAgent(e.admin, fields)
			fs, err := e.srv.factStore(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			sc := facts.Scope{Tenant: e.tenant(), User: "ada"}
			for i := range 100 {
				text := fmt.Sprintf("Fact number %d about the user and topic%d.", i, i)
				if _, err := fs.Put(context.Background(), facts.Fact{Scope: sc, Text: text, Embedding: scripted.Vector(text, 0)}); err != nil {
					b.Fatal(err)
				}
			}
			first := e.chatAs(e.admin, a.ID, "ada", "", "Hello, I live in Berlin.")
			path := "/v1/agents/" + a.ID + "/chat"
			cpu0 := cpuTime()
			i := 0
			for b.Loop() {
				i++
				body := fmt.Appendf(nil, `{"query":"Question %d: what about topic%d, given where I live?","session_id":%q,"user":"ada"}`, i, i%100, first.SessionID)
				req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+e.admin)
				req.Header.Set("Content-Type", "application/json")
				w := httptest.NewRecorder()
				e.srv.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("turn: %d %s", w.Code, w.Body.String())
				}
				if name == "memory-quiet" {
					b.StopTimer()
					e.srv.memories.learning.Wait()
					b.StartTimer()
				}
			}
			e.srv.memories.learning.Wait()
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/turn")
		})
	}
}
