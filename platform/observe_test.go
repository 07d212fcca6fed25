package platform

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/provider/scripted"
)

// logLines decodes the JSON log lines whose message is msg.
func logLines(t *testing.T, buf *syncBuffer, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(buf.String(), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

func withLog(buf *syncBuffer) envOption {
	return func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
}

// TestTurnObserved: a turn with a delegation leaves a trace (model and tool
// steps, tokens, arguments and results), its cost on the answer, usage rows
// for both agents, and one log line each — without content.
func TestTurnObserved(t *testing.T) {
	var logs syncBuffer
	expert := scripted.New(scripted.Reply("The answer is 42."))
	models := map[string]*scripted.Model{"expert": expert}
	e := newEnv(t, nil, multiModel(models), withLog(&logs), func(c *Config) {
		c.Prices = map[string]Price{"scripted/front": {Input: 1000, Output: 2000}}
	})
	b := e.createAgent(e.admin, map[string]any{"name": "expert", "model": "scripted/expert"})
	models["front"] = scripted.New(scripted.SummarizeToolResults(), scripted.CallTool(delegateToolName(b.ID), `{"query":"what is the answer?"}`))
	a := e.createAgent(e.admin, map[string]any{"name": "front", "model": "scripted/front", "delegate_agent_ids": []string{b.ID}})

	var ans struct {
		SessionID string  `json:"session_id"`
		MessageID string  `json:"message_id"`
		CostUSD   float64 `json:"cost_usd"`
		Usage     struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if resp := e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "ask the expert"}, &ans); resp.StatusCode != 200 {
		t.Fatalf("chat: %d %s", resp.StatusCode, body(resp))
	}
	wantCost := (float64(ans.Usage.PromptTokens)*1000 + float64(ans.Usage.CompletionTokens)*2000) / 1e6
	if ans.Usage.PromptTokens == 0 || !near(ans.CostUSD, wantCost) {
		t.Errorf("cost_usd = %v, want %v for usage %+v", ans.CostUSD, wantCost, ans.Usage)
	}

	var tr turnTrace
	if resp := e.do(e.admin, "GET", "/v1/sessions/"+ans.SessionID+"/messages/"+ans.MessageID+"/trace", nil, &tr); resp.StatusCode != 200 {
		t.Fatalf("trace: %d %s", resp.StatusCode, body(resp))
	}
	if tr.Outcome != "ok" || tr.AgentID != a.ID || tr.Model != "scripted/front" || tr.Usage.PromptTokens != ans.Usage.PromptTokens || !near(tr.CostUSD, ans.CostUSD) {
		t.Errorf("trace = %+v", tr)
	}
	var kinds []string
	var tool *traceStep
	for i, st := range tr.Steps {
		kinds = append(kinds, st.Kind)
		if st.Kind == "tool" {
			tool = &tr.Steps[i]
		}
	}
	if got := strings.Join(kinds, ","); got != "model,tool,model" {
		t.Errorf("steps = %s, want model,tool,model", got)
	}
	if tool == nil || tool.Tool != delegateToolName(b.ID) || tool.AgentID != b.ID || !strings.Contains(tool.Arguments, "what is the answer?") ||
		tool.OK == nil || !*tool.OK || !strings.Contains(tool.Result, "42") {
		t.Errorf("tool step = %+v", tool)
	}
	// Another tenant cannot read it, and an unknown message is a 404.
	var other keyResponse
	e.do(e.admin, "POST", "/v1/api-keys", map[string]any{"name": "o", "tenant": "other"}, &other)
	e.wantError(e.do(other.Key, "GET", "/v1/sessions/"+ans.SessionID+"/messages/"+ans.MessageID+"/trace", nil, nil), 404, CodeNotFound)
	e.wantError(e.do(e.admin, "GET", "/v1/sessions/"+ans.SessionID+"/messages/msg_nope/trace", nil, nil), 404, CodeNotFound)

	// Usage: the front agent's turn and the expert's delegated one.
	var u usageResponse
	e.do(e.admin, "GET", "/v1/usage?group_by=agent,model", nil, &u)
	if len(u.Rows) != 2 || u.Total.Turns != 2 {
		t.Fatalf("usage = %+v", u)
	}
	for _, r := range u.Rows {
		if r.AgentID == a.ID && (r.Model != "scripted/front" || !near(r.CostUSD, ans.CostUSD) || r.PromptTokens != int64(ans.Usage.PromptTokens)) {
			t.Errorf("front's usage = %+v", r)
		}
		if r.AgentID == b.ID && (r.Model != "scripted/expert" || r.CostUSD != 0 || r.Turns != 1) {
			t.Errorf("expert's usage = %+v", r)
		}
	}

	// One info line per turn, the delegate's included; no content.
	lines := logLines(t, &logs, "turn")
	if len(lines) != 2 {
		t.Fatalf("%d turn log lines, want 2:\n%s", len(lines), logs.String())
	}
	front := lines[1]
	for k, want := range map[string]any{"agent": a.ID, "session": ans.SessionID, "model": "scripted/front", "outcome": "ok", "tenant": e.tenant()} {
		if front[k] != want {
			t.Errorf("turn line %s = %v, want %v (%v)", k, front[k], want, front)
		}
	}
	if front["prompt_tokens"].(float64) != float64(ans.Usage.PromptTokens) || front["latency_ms"] == nil {
		t.Errorf("turn line = %v", front)
	}
	for _, secretish := range []string{"ask the expert", "The answer is 42", "what is the answer"} {
		if strings.Contains(logs.String(), secretish) {
			t.Errorf("the log holds content %q:\n%s", secretish, logs.String())
		}
	}
}

// TestFailedTurnTraceByQuestion: a turn that fails before any text stores
// only the user's message; its trace is found from that message's id, as
// it is from the answer's id. Another session's message is not found.
func TestFailedTurnTraceByQuestion(t *testing.T) {
	failing := scripted.New(scripted.Fail(errors.New("upstream: 529 overloaded")))
	e := newEnv(t, nil, multiModel(map[string]*scripted.Model{"failing": failing}))
	a := e.createAgent(e.admin, map[string]any{"name": "fragile", "model": "scripted/failing"})
	resp := e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "hello"}, nil)
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("chat: %d %s", resp.StatusCode, body(resp))
	}
	session := resp.Header.Get("X-Weft-Session")
	if session == "" {
		t.Fatal("a failed blocking turn does not name its session (X-Weft-Session)")
	}
	var msgs []struct {
		ID   string `json:"id"`
		Role string `json:"role"`
	}
	e.do(e.admin, "GET", "/v1/sessions/"+session+"/messages", nil, &msgs)
	if len(msgs) != 1 || msgs[0].Role != "user" || msgs[0].ID == "" {
		t.Fatalf("messages %+v, want the user's message only", msgs)
	}
	var tr turnTrace
	if resp := e.do(e.admin, "GET", "/v1/sessions/"+session+"/messages/"+msgs[0].ID+"/trace", nil, &tr); resp.StatusCode != 200 {
		t.Fatalf("trace: %d %s", resp.StatusCode, body(resp))
	}
	if tr.Outcome != CodeModelError || !strings.Contains(tr.Error, "overloaded") || tr.MessageID+"-q" != msgs[0].ID {
		t.Fatalf("trace %+v", tr)
	}
	var other api.ChatAnswer
	e.do(e.admin, "POST", "/v1/agents/"+e.createAgent(e.admin, map[string]any{"name": "steady"}).ID+"/chat", map[string]any{"query": "hi"}, &other)
	e.wantError(e.do(e.admin, "GET", "/v1/sessions/"+other.SessionID+"/messages/"+msgs[0].ID+"/trace", nil, nil), 404, CodeNotFound)
}

func near(a, b float64) bool { d := a - b; return d < 1e-9 && d > -1e-9 }

// TestBudgetRefusesTurn: once a budget is spent, turns of that key are
// refused with 429 before the model is called, blocking, streamed or
// OpenAI-compatible (there insufficient_quota, as OpenAI says it), for an
// agent or a workflow model (whose spent budget failed its llm node: a 502);
// other keys of the tenant go on.
func TestBudgetRefusesTurn(t *testing.T) {
	var logs syncBuffer
	model := scripted.New(scripted.Echo())
	e := newEnv(t, model, withLog(&logs))
	a := e.createAgent(e.admin, map[string]any{"name": "budgeted"})
	e.saveWorkflow(map[string]any{"name": "ask", "nodes": []any{
		map[string]any{"id": "start", "kind": "start", "inputs": map[string]any{"q": map[string]any{"type": "string"}}},
		map[string]any{"id": "think", "kind": "llm", "model": "scripted/demo", "prompt": "{{ inputs.q }}"},
		map[string]any{"id": "end", "kind": "end", "outputs": map[string]any{"answer": "{{ nodes.think.outputs.text }}"}},
	}})
	var key keyResponse
	e.do(e.admin, "POST", "/v1/api-keys", map[string]any{"name": "limited"}, &key)
	if resp := e.do(e.admin, "PUT", "/v1/budgets", map[string]any{"key_id": key.ID, "period": "day", "max_tokens": 1}, nil); resp.StatusCode != 200 {
		t.Fatalf("budget: %d %s", resp.StatusCode, body(resp))
	}
	if resp := e.do(key.Key, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "first"}, nil); resp.StatusCode != 200 {
		t.Fatalf("first turn: %d %s", resp.StatusCode, body(resp))
	}
	calls := len(model.Requests())
	const quota = `"code":"insufficient_quota","message":"the day`
	for _, c := range []struct{ path, body, want string }{
		{"/v1/agents/" + a.ID + "/chat", `{"query": "again"}`, CodeBudgetExceeded},
		{"/v1/agents/" + a.ID + "/chat", `{"query": "again", "stream": true}`, CodeBudgetExceeded},
		{"/v1/chat/completions", `{"model": "budgeted", "messages": [{"role": "user", "content": "again"}]}`, quota},
		{"/v1/chat/completions", `{"model": "workflow:ask", "messages": [{"role": "user", "content": "again"}]}`, quota},
		{"/v1/chat/completions", `{"model": "workflow:ask", "stream": true, "messages": [{"role": "user", "content": "again"}]}`, quota},
	} {
		resp := e.do(key.Key, "POST", c.path, c.body, nil)
		if b := body(resp); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(b, c.want) ||
			(c.want == quota && !strings.Contains(b, `"type":"insufficient_quota"`)) {
			t.Errorf("%s %s: %d %v %s", c.path, c.body, resp.StatusCode, resp.Header, b)
		}
	}
	if n := len(model.Requests()); n != calls {
		t.Errorf("the model was called %d times after the budget was spent", n-calls)
	}
	if resp := e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "admin"}, nil); resp.StatusCode != 200 {
		t.Errorf("another key: %d %s", resp.StatusCode, body(resp))
	}
	if len(logLines(t, &logs, "turn refused: budget exceeded")) != 5 {
		t.Errorf("budget refusals not logged as warnings:\n%s", logs.String())
	}
}

func TestScrub(t *testing.T) {
	in := `{"url":"postgres://app:hunter2@db/x","auth":"Bearer abcdefghijklmnop","key":"wk_key_abc_defghijklmnop","openai":"sk-abcdefghijklmnopqrstuvwx"}`
	got := scrub(in)
	for _, leak := range []string{"hunter2", "abcdefghijklmnop", "defghijklmnop", "sk-abcdefghijklmnopqrstuvwx"} {
		if strings.Contains(got, leak) {
			t.Errorf("scrub left %q in %s", leak, got)
		}
	}
	long := strings.Repeat("é", maxTraceText)
	if got := scrub(long); len(got) > maxTraceText+len("…[truncated]") || !strings.HasSuffix(got, "…[truncated]") {
		t.Errorf("long text: %d bytes", len(got))
	}
}

func TestParseRetention(t *testing.T) {
	for in, want := range map[string]int64{"": 0, "off": -1, "0": -1, "30d": 30 * 24, "72h": 72} {
		d, err := parseRetention(in)
		if err != nil || (want > 0 && d.Hours() != float64(want)) || (want <= 0 && int64(d) != want) {
			t.Errorf("parseRetention(%q) = %v, %v", in, d, err)
		}
	}
	for _, bad := range []string{"-1h", "xd", "soon"} {
		if _, err := parseRetention(bad); err == nil {
			t.Errorf("parseRetention(%q) accepted", bad)
		}
	}
}
