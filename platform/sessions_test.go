package platform

import (
	"testing"

	"github.com/weftlabs/weft/platform/api"
)

// A turn's update time is written off the turn's path (gathered with other
// turns'), yet the session routes of the same replica read it at once: the
// session talked to last is listed first.
func TestSessionTouchedByTurnListedFirst(t *testing.T) {
	e := newEnv(t, nil)
	a := e.createAgent(e.admin, map[string]any{"name": "echo"})
	var first, second api.ChatAnswer
	e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "one"}, &first)
	e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "two"}, &second)
	for _, want := range []string{first.SessionID, second.SessionID, first.SessionID} {
		e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "again", "session_id": want}, nil)
		var list []api.Session
		e.do(e.admin, "GET", "/v1/sessions?agent_id="+a.ID, nil, &list)
		if len(list) != 2 || list[0].ID != want {
			t.Fatalf("after a turn on %s the list is %+v, want it first", want, list)
		}
		var got api.Session
		e.do(e.admin, "GET", "/v1/sessions/"+want, nil, &got)
		if !got.UpdatedAt.Equal(list[0].UpdatedAt) || !got.UpdatedAt.After(got.CreatedAt) {
			t.Fatalf("session %+v: update time not the turn's", got)
		}
	}
}
