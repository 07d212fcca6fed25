package platform

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/provider/scripted"
	"github.com/weftlabs/weft/tool"
)

// TestToolContext: a tool an agent calls reads the turn's session
// (tool.MemoryID) and the request's end user (tool.User) from its context,
// whatever its arguments say; a delegate's tools see the delegate's session
// and the same user.
func TestToolContext(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	whoami := tool.Func("whoami", "Who the user is.", func(ctx context.Context, in struct {
		User string `json:"user,omitempty"`
	}) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, tool.MemoryID(ctx)+"|"+tool.User(ctx))
		return "ok", nil
	})
	models := map[string]*scripted.Model{
		"expert": scripted.New(scripted.Sequence(scripted.CallTool("whoami", `{"user":"mallory"}`), scripted.Reply("42"))),
	}
	e := newEnv(t, nil, multiModel(models))
	e.srv.toolSources = append(e.srv.toolSources, func(context.Context, meta.Agent, turnInput) ([]tool.Tool, error) {
		return []tool.Tool{whoami}, nil
	})
	expert := e.createAgent(e.admin, map[string]any{"name": "expert", "model": "scripted/expert"})
	models["front"] = scripted.New(scripted.Sequence(
		scripted.CallTool("whoami", `{"user":"mallory"}`),
		scripted.CallTool(delegateToolName(expert.ID), `{"query":"who?"}`),
		scripted.Reply("done"),
	))
	front := e.createAgent(e.admin, map[string]any{"name": "front", "model": "scripted/front", "delegate_agent_ids": []string{expert.ID}})

	var ans api.ChatAnswer
	resp := e.do(e.admin, "POST", "/v1/agents/"+front.ID+"/chat", map[string]any{"query": "who am I?", "user": "ada"}, &ans)
	if resp.StatusCode != 200 || ans.Answer != "done" {
		t.Fatalf("chat: %d %+v", resp.StatusCode, ans)
	}
	var sessions []api.Session
	e.do(e.admin, "GET", "/v1/sessions?agent_id="+expert.ID, nil, &sessions)
	if len(sessions) != 1 {
		t.Fatalf("expert sessions = %+v", sessions)
	}
	want := []string{ans.SessionID + "|ada", sessions[0].ID + "|ada"}
	if strings.Join(seen, " ") != strings.Join(want, " ") {
		t.Errorf("tools saw %q, want %q", seen, want)
	}
}
