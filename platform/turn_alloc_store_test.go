package platform

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/weftlabs/weft/memory/sqlstore"
	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/provider/scripted"
)

// sqliteTurnAllocBudget bounds the allocations of one blocking chat turn
// over the embedded SQLite session store, from the request to the answer
// (the handler called directly: auth, decoding, the session registry
// cache, lock, window load, both appends, the answer's encoding): the
// store's share of a turn, which TestTurnAllocationBudget (in-memory
// sessions) does not see. Measured 1,050 (1,709 before plain messages
// were stored without JSON and the window load stopped at the window's
// end); most of the rest is the SQLite driver's per-row and per-statement
// allocations. The lease release and the session's update time are
// written by goroutines of their own, so the count varies by a few.
// Observing the turn (usage row and trace in the metadata store) measured
// 1,120.
const sqliteTurnAllocBudget = 1200

func TestSQLiteTurnAllocationBudget(t *testing.T) {
	st, err := sqlstore.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "sessions.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := newEnv(t, scripted.New(scripted.Reply("Paris is the capital of France.")), func(c *Config) { c.Sessions = st })
	a := e.createAgent(e.admin, map[string]any{"name": "geo", "system_prompt": "You answer geography questions.",
		"context_window_tokens": 1024, "reserve_tokens": 256})
	var first api.ChatAnswer
	e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "Capital of France?"}, &first)
	body := []byte(`{"query":"Capital of France?","session_id":"` + first.SessionID + `"}`)
	turn := func() {
		req := httptest.NewRequest(http.MethodPost, "/v1/agents/"+a.ID+"/chat", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+e.admin)
		w := httptest.NewRecorder()
		e.srv.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			t.Fatalf("turn: %d %s", w.Code, w.Body)
		}
	}
	// A session of a typical length, whose window is full.
	for range 10 {
		turn()
	}
	allocs := testing.AllocsPerRun(50, turn)
	t.Logf("%.0f allocations per blocking turn over SQLite sessions", allocs)
	if allocs > sqliteTurnAllocBudget {
		t.Errorf("a turn over SQLite sessions made %.0f allocations, over the budget of %d", allocs, sqliteTurnAllocBudget)
	}
}
