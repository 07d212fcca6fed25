package platform

import (
	"net/http"
	"strings"
	"testing"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/netguard"
	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/provider/scripted"
)

// multiModel gives each "scripted/<name>" spec its own scripted model.
func multiModel(models map[string]*scripted.Model) envOption {
	return func(c *Config) {
		c.OpenModel = func(spec string) (*llm.Model, error) {
			m, ok := models[strings.TrimPrefix(spec, "scripted/")]
			if !ok {
				m = scripted.New(scripted.Echo())
			}
			return llm.New(m, llm.WithName(spec), llm.WithRetries(0)), nil
		}
	}
}

func TestDelegation(t *testing.T) {
	expert := scripted.New(scripted.Reply("The answer is 42."))
	models := map[string]*scripted.Model{"expert": expert}
	e := newEnv(t, nil, multiModel(models))
	b := e.createAgent(e.admin, map[string]any{"name": "expert", "model": "scripted/expert", "system_prompt": "You know everything."})
	models["front"] = scripted.New(scripted.SummarizeToolResults(), scripted.CallTool(delegateToolName(b.ID), `{"query":"what is the answer?"}`))
	a := e.createAgent(e.admin, map[string]any{"name": "front", "model": "scripted/front", "delegate_agent_ids": []string{b.ID}})

	resp := e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "ask the expert", "stream": true}, nil)
	frames, _ := readSSE(t, resp.Body)
	var kinds []string
	for _, f := range frames {
		kinds = append(kinds, f.Event)
	}
	got := strings.Join(kinds, ",")
	for _, want := range []string{"tool.call", "delegate.start", "delegate.delta", "delegate.end", "tool.result", "chat.completed"} {
		if !strings.Contains(got, want) {
			t.Fatalf("events %s lack %s", got, want)
		}
	}
	var start map[string]any
	for _, f := range frames {
		if f.Event == "delegate.start" {
			start = f.Data
		}
	}
	if start["agent_id"] != b.ID || start["depth"].(float64) != 1 {
		t.Fatalf("delegate.start = %v", start)
	}
	done := frames[len(frames)-1].Data
	if !strings.Contains(done["answer"].(string), "The answer is 42.") {
		t.Fatalf("answer %q does not carry the delegate's answer", done["answer"])
	}
	// The expert saw only the delegated query, with its own system prompt.
	reqs := expert.Requests()
	if len(reqs) != 1 || reqs[0].Messages[0].Text() != "You know everything." || reqs[0].Messages[len(reqs[0].Messages)-1].Text() != "what is the answer?" {
		t.Fatalf("expert requests = %+v", reqs)
	}
	// The delegate's session is tied to the parent session.
	var sessions []api.Session
	e.do(e.admin, "GET", "/v1/sessions?agent_id="+b.ID, nil, &sessions)
	if len(sessions) != 1 || sessions[0].ParentID != done["session_id"] || sessions[0].MessageCount != 2 {
		t.Fatalf("delegate sessions = %+v", sessions)
	}
}

func TestDelegationDepthAndCycles(t *testing.T) {
	models := map[string]*scripted.Model{}
	e := newEnv(t, nil, multiModel(models))
	a := e.createAgent(e.admin, map[string]any{"name": "a", "model": "scripted/a"})
	b := e.createAgent(e.admin, map[string]any{"name": "b", "model": "scripted/b", "delegate_agent_ids": []string{a.ID}})
	// a delegates to b, b delegates back to a: a cycle.
	e.do(e.admin, "PUT", "/v1/agents/"+a.ID, map[string]any{"delegate_agent_ids": []string{b.ID}, "max_delegate_depth": 5}, nil)
	models["a"] = scripted.New(scripted.SummarizeToolResults(), scripted.CallTool(delegateToolName(b.ID), `{"query":"over to you"}`))
	models["b"] = scripted.New(scripted.SummarizeToolResults(), scripted.CallTool(delegateToolName(a.ID), `{"query":"back to you"}`))
	var ans api.ChatAnswer
	resp := e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "go"}, &ans)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("chat: %d %s", resp.StatusCode, body(resp))
	}
	if !strings.Contains(ans.Answer, "cycle") {
		t.Fatalf("answer %q does not report the refused cycle", ans.Answer)
	}

	// Depth: c → d → e2 with max depth 1 refuses the second hop.
	e2 := e.createAgent(e.admin, map[string]any{"name": "e2", "model": "scripted/e2"})
	d := e.createAgent(e.admin, map[string]any{"name": "d", "model": "scripted/d", "delegate_agent_ids": []string{e2.ID}})
	c := e.createAgent(e.admin, map[string]any{"name": "c", "model": "scripted/c", "delegate_agent_ids": []string{d.ID}, "max_delegate_depth": 1})
	models["c"] = scripted.New(scripted.SummarizeToolResults(), scripted.CallTool(delegateToolName(d.ID), `{"query":"hop 1"}`))
	models["d"] = scripted.New(scripted.SummarizeToolResults(), scripted.CallTool(delegateToolName(e2.ID), `{"query":"hop 2"}`))
	models["e2"] = scripted.New(scripted.Reply("deep"))
	e.do(e.admin, "POST", "/v1/agents/"+c.ID+"/chat", map[string]any{"query": "go"}, &ans)
	if !strings.Contains(ans.Answer, "depth limit (1)") || strings.Contains(ans.Answer, "deep") {
		t.Fatalf("answer %q: the second hop was not refused", ans.Answer)
	}
}

func TestRemoteAgentDelegation(t *testing.T) {
	// The remote server: a plain agent answering "remote hello".
	remote := newEnv(t, scripted.New(scripted.Reply("remote hello")))
	ra := remote.createAgent(remote.admin, map[string]any{"name": "far"})

	models := map[string]*scripted.Model{}
	local := newEnv(t, nil, multiModel(models), func(c *Config) {
		c.Getenv = func(k string) string {
			switch k {
			case "REMOTE_KEY":
				return remote.admin
			case netguard.AllowEnv: // the remote server is on loopback
				return "127.0.0.1"
			case EnvSecretsAllowEnv: // the admin-registered agent may read it
				return "REMOTE_KEY"
			}
			return ""
		}
	})
	proxy := local.createAgent(local.admin, map[string]any{"name": "proxy", "remote": map[string]any{"url": remote.http.URL, "agent_id": ra.ID, "api_key_env": "REMOTE_KEY"}})
	front := local.createAgent(local.admin, map[string]any{"name": "front", "model": "scripted/front", "delegate_agent_ids": []string{proxy.ID}})
	models["front"] = scripted.New(scripted.SummarizeToolResults(), scripted.CallTool(delegateToolName(proxy.ID), `{"query":"hello over there"}`))
	var ans api.ChatAnswer
	resp := local.do(local.admin, "POST", "/v1/agents/"+front.ID+"/chat", map[string]any{"query": "call the remote"}, &ans)
	if resp.StatusCode != http.StatusOK || !strings.Contains(ans.Answer, "remote hello") {
		t.Fatalf("chat = %d %+v %s", resp.StatusCode, ans, body(resp))
	}
	if len(ans.ToolCalls) != 1 || !ans.ToolCalls[0].OK {
		t.Fatalf("tool calls = %+v", ans.ToolCalls)
	}
	// Chatting with the proxy agent directly is answered by the remote too.
	local.do(local.admin, "POST", "/v1/agents/"+proxy.ID+"/chat", map[string]any{"query": "direct"}, &ans)
	if ans.Answer != "remote hello" {
		t.Fatalf("direct remote chat = %+v", ans)
	}
	// The next turn of that local session continues the same remote
	// session (the remote model sees the first turn), and streams the
	// remote's deltas as they come.
	resp = local.do(local.admin, "POST", "/v1/agents/"+proxy.ID+"/chat", map[string]any{"query": "again", "session_id": ans.SessionID, "stream": true}, nil)
	frames, _ := readSSE(t, resp.Body)
	deltas := 0
	for _, f := range frames {
		if f.Event == "message.delta" {
			deltas++
		}
	}
	if deltas < 2 || frames[len(frames)-1].Event != "chat.completed" || frames[len(frames)-1].Data["answer"] != "remote hello" {
		t.Fatalf("streamed remote turn: %d deltas, frames %+v", deltas, frames)
	}
	reqs := remote.model.Requests()
	last := reqs[len(reqs)-1].Messages
	if len(last) != 3 || last[0].Text() != "direct" || last[2].Text() != "again" {
		t.Fatalf("the remote model saw %+v", last)
	}
	var msgs []api.Message
	local.do(local.admin, "GET", "/v1/sessions/"+ans.SessionID+"/messages", nil, &msgs)
	if len(msgs) != 4 || msgs[0].Content != "direct" || msgs[3].Content != "remote hello" {
		t.Fatalf("local session messages = %+v", msgs)
	}
}
