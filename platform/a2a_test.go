package platform

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/netguard"
	"github.com/weftlabs/weft/platform/a2a"
	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/provider/scripted"
)

// rpcAnswer is a JSON-RPC response as a test reads it.
type rpcAnswer struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  map[string]any  `json:"result"`
	Error   *a2a.Error      `json:"error"`
}

// rpc posts a JSON-RPC request (body a string, or method and params).
func (e *testEnv) rpc(key, agent string, body any) (*http.Response, rpcAnswer) {
	e.t.Helper()
	var out rpcAnswer
	resp := e.do(key, "POST", "/a2a/agents/"+agent, body, nil)
	if resp.Header.Get("Content-Type") == "application/json" || strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			e.t.Fatalf("decode: %v", err)
		}
	}
	return resp, out
}

func call(method string, params any) map[string]any {
	return map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
}

func userMessage(text, contextID string) map[string]any {
	m := map[string]any{"messageId": "m-" + text, "role": "ROLE_USER", "parts": []any{map[string]any{"text": text}}}
	if contextID != "" {
		m["contextId"] = contextID
	}
	return m
}

// path reads a nested field of a decoded JSON object.
func path(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func TestA2ACards(t *testing.T) {
	e := newEnv(t, nil)
	a := e.createAgent(e.admin, map[string]any{"name": "helper"})
	e.createAgent(e.admin, map[string]any{"name": "off", "enabled": false})

	var card map[string]any
	resp := e.do(e.admin, "GET", "/a2a/agents/helper/.well-known/agent-card.json", nil, &card, "A2A-Version", "1.0")
	if resp.StatusCode != http.StatusOK || card["name"] != "helper" || path(card, "capabilities", "streaming") != true {
		t.Fatalf("1.0 card = %d %v", resp.StatusCode, card)
	}
	ifaces, _ := card["supportedInterfaces"].([]any)
	if len(ifaces) != 2 || path(ifaces[0], "url") != e.http.URL+"/a2a/agents/"+a.ID || path(ifaces[0], "protocolVersion") != "1.0" ||
		path(ifaces[0], "protocolBinding") != "JSONRPC" || path(ifaces[1], "protocolVersion") != "0.3" {
		t.Fatalf("interfaces = %v", ifaces)
	}
	if path(card, "securitySchemes", "bearer", "httpAuthSecurityScheme", "scheme") != "Bearer" || card["url"] != nil {
		t.Fatalf("1.0 card security = %v", card)
	}
	// Without A2A-Version, the 0.3 form.
	card = nil
	e.do(e.admin, "GET", "/a2a/agents/"+a.ID+"/.well-known/agent-card.json", nil, &card)
	if card["url"] != e.http.URL+"/a2a/agents/"+a.ID || card["protocolVersion"] != "0.3.0" || card["preferredTransport"] != "JSONRPC" ||
		path(card, "securitySchemes", "bearer", "type") != "http" || card["supportedInterfaces"] != nil {
		t.Fatalf("0.3 card = %v", card)
	}
	parsed, err := a2a.ParseCard([]byte(mustMarshal(card)))
	if err != nil || parsed.Dialect != a2a.V03 || !parsed.Streaming {
		t.Fatalf("ParseCard(0.3) = %+v, %v", parsed, err)
	}
	// The tenant's card lists its enabled agents.
	card = nil
	e.do(e.admin, "GET", "/.well-known/agent-card.json", nil, &card, "A2A-Version", "1.0")
	skills, _ := card["skills"].([]any)
	if len(skills) != 1 || path(skills[0], "id") != "helper" || !strings.Contains(path(skills[0], "description").(string), "/a2a/agents/"+a.ID+"/.well-known/agent-card.json") {
		t.Fatalf("tenant card = %v", card)
	}
	// Everything is authenticated.
	for _, p := range []string{"/.well-known/agent-card.json", "/a2a/agents/helper/.well-known/agent-card.json"} {
		e.wantError(e.do("", "GET", p, nil, nil), http.StatusUnauthorized, CodeUnauthorized)
	}
	e.wantError(e.do("", "POST", "/a2a/agents/helper", call("SendMessage", map[string]any{"message": userMessage("hi", "")}), nil), http.StatusUnauthorized, CodeUnauthorized)
	// Another tenant does not see the agent.
	other := e.tenantKey("other")
	e.wantError(e.do(other, "GET", "/a2a/agents/helper/.well-known/agent-card.json", nil, nil), http.StatusNotFound, CodeNotFound)
}

func mustMarshal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestA2ASendMultiTurnAndGet(t *testing.T) {
	model := scripted.New(scripted.Echo(), scripted.RecordRequests(true))
	e := newEnv(t, model)
	a := e.createAgent(e.admin, map[string]any{"name": "echo", "system_prompt": "Repeat."})

	resp, ans := e.rpc(e.admin, "echo", call("SendMessage", map[string]any{"message": userMessage("first question", "")}))
	task, _ := ans.Result["task"].(map[string]any)
	if resp.StatusCode != http.StatusOK || ans.Error != nil || string(ans.ID) != "7" || task == nil {
		t.Fatalf("SendMessage = %d %+v", resp.StatusCode, ans)
	}
	if path(task, "status", "state") != "TASK_STATE_COMPLETED" || path(task, "status", "message", "role") != "ROLE_AGENT" {
		t.Fatalf("task = %v", task)
	}
	arts, _ := task["artifacts"].([]any)
	parts, _ := path(arts[0], "parts").([]any)
	if len(arts) != 1 || path(parts[0], "text") != "first question" {
		t.Fatalf("artifacts = %v", arts)
	}
	ctxID, _ := task["contextId"].(string)
	taskID, _ := task["id"].(string)
	if !strings.HasPrefix(ctxID, "ses") || taskID == "" {
		t.Fatalf("ids = %q %q", ctxID, taskID)
	}
	// The context is the Weft session: the next message continues it.
	_, ans = e.rpc(e.admin, a.ID, call("SendMessage", map[string]any{"message": userMessage("second question", ctxID)}))
	if path(ans.Result, "task", "contextId") != ctxID || path(ans.Result, "task", "status", "state") != "TASK_STATE_COMPLETED" {
		t.Fatalf("second turn = %+v", ans)
	}
	reqs := model.Requests()
	last := reqs[len(reqs)-1].Messages
	var texts []string
	for _, m := range last {
		if m.Role != llm.RoleSystem {
			texts = append(texts, m.Text())
		}
	}
	if strings.Join(texts, "|") != "first question|first question|second question" {
		t.Fatalf("the model saw %q", texts)
	}
	// GetTask, in both versions, with the history cut.
	_, ans = e.rpc(e.admin, "echo", call("GetTask", map[string]any{"id": taskID, "historyLength": 1}))
	hist, _ := path(ans.Result, "history").([]any)
	if ans.Error != nil || ans.Result["id"] != taskID || path(ans.Result, "status", "state") != "TASK_STATE_COMPLETED" || len(hist) != 1 || path(hist[0], "role") != "ROLE_AGENT" {
		t.Fatalf("GetTask = %+v", ans)
	}
	_, ans = e.rpc(e.admin, "echo", call("tasks/get", map[string]any{"id": taskID}))
	hist, _ = path(ans.Result, "history").([]any)
	if ans.Result["kind"] != "task" || path(ans.Result, "status", "state") != "completed" || len(hist) != 2 || path(hist[0], "parts") == nil || path(hist[0], "role") != "user" {
		t.Fatalf("tasks/get = %+v", ans)
	}
	// The 0.3 method: the result is the task itself, tagged with its kind.
	_, ans = e.rpc(e.admin, "echo", call("message/send", map[string]any{"message": map[string]any{"kind": "message", "messageId": "x", "role": "user", "contextId": ctxID,
		"parts": []any{map[string]any{"kind": "text", "text": "third"}}}}))
	if ans.Result["kind"] != "task" || path(ans.Result, "status", "state") != "completed" || ans.Result["contextId"] != ctxID {
		t.Fatalf("message/send = %+v", ans)
	}
	// The session is an ordinary Weft session.
	var msgs []map[string]any
	e.do(e.admin, "GET", "/v1/sessions/"+ctxID+"/messages", nil, &msgs)
	if len(msgs) != 6 || msgs[1]["id"] != taskID {
		t.Fatalf("session messages = %v", msgs)
	}
}

// streamFrames posts a streaming request and returns its events' results.
func (e *testEnv) streamFrames(agent string, req any) []rpcAnswer {
	e.t.Helper()
	resp := e.do(e.admin, "POST", "/a2a/agents/"+agent, req, nil, "Accept", "text/event-stream")
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		e.t.Fatalf("stream answered %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body(resp))
	}
	var out []rpcAnswer
	for data, err := range a2aSSE(resp) {
		if err != nil {
			e.t.Fatal(err)
		}
		var a rpcAnswer
		if err := json.Unmarshal(data, &a); err != nil {
			e.t.Fatalf("frame %q: %v", data, err)
		}
		out = append(out, a)
	}
	return out
}

func a2aSSE(resp *http.Response) func(func([]byte, error) bool) {
	return func(yield func([]byte, error) bool) {
		for _, line := range strings.Split(body(resp), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				if !yield([]byte(d), nil) {
					return
				}
			}
		}
	}
}

func TestA2AStream(t *testing.T) {
	e := newEnv(t, scripted.New(scripted.Reply("the answer in several words")))
	e.createAgent(e.admin, map[string]any{"name": "s"})
	frames := e.streamFrames("s", call("SendStreamingMessage", map[string]any{"message": userMessage("go", "")}))
	if len(frames) < 4 {
		t.Fatalf("frames = %+v", frames)
	}
	first := frames[0].Result
	taskID, _ := path(first, "task", "id").(string)
	if path(first, "task", "status", "state") != "TASK_STATE_SUBMITTED" || taskID == "" || string(frames[0].ID) != "7" {
		t.Fatalf("first frame = %v", first)
	}
	if path(frames[1].Result, "statusUpdate", "status", "state") != "TASK_STATE_WORKING" {
		t.Fatalf("second frame = %v", frames[1].Result)
	}
	var text strings.Builder
	for _, f := range frames[2 : len(frames)-1] {
		u, _ := f.Result["artifactUpdate"].(map[string]any)
		if u == nil || u["taskId"] != taskID {
			t.Fatalf("middle frame = %v", f.Result)
		}
		parts, _ := path(u, "artifact", "parts").([]any)
		text.WriteString(path(parts[0], "text").(string))
	}
	last := frames[len(frames)-1].Result
	if text.String() != "the answer in several words" || path(last, "statusUpdate", "status", "state") != "TASK_STATE_COMPLETED" || path(frames[len(frames)-2].Result, "artifactUpdate", "lastChunk") != true {
		t.Fatalf("text %q, last frame %v", text.String(), last)
	}
	// The 0.3 stream: kinds, and final on the last status update.
	frames = e.streamFrames("s", call("message/stream", map[string]any{"message": map[string]any{"messageId": "y", "role": "user", "parts": []any{map[string]any{"kind": "text", "text": "go"}}}}))
	last = frames[len(frames)-1].Result
	if frames[0].Result["kind"] != "task" || frames[1].Result["kind"] != "status-update" || frames[2].Result["kind"] != "artifact-update" ||
		last["kind"] != "status-update" || last["final"] != true || path(last, "status", "state") != "completed" || frames[1].Result["final"] != false {
		t.Fatalf("0.3 frames = %+v", frames)
	}
}

func TestA2ACancel(t *testing.T) {
	slow := &slowModel{started: make(chan struct{})}
	e := newEnv(t, nil, func(c *Config) {
		c.OpenModel = func(spec string) (*llm.Model, error) { return llm.New(slow, llm.WithRetries(0)), nil }
	})
	e.createAgent(e.admin, map[string]any{"name": "slow"})
	// A task the client does not wait for runs on; it is cancelled.
	_, ans := e.rpc(e.admin, "slow", call("SendMessage", map[string]any{"message": userMessage("talk", ""), "configuration": map[string]any{"returnImmediately": true}}))
	taskID, _ := path(ans.Result, "task", "id").(string)
	if path(ans.Result, "task", "status", "state") != "TASK_STATE_WORKING" || taskID == "" {
		t.Fatalf("SendMessage = %+v", ans)
	}
	waitStarted(t, slow)
	_, ans = e.rpc(e.admin, "slow", call("CancelTask", map[string]any{"id": taskID}))
	if ans.Error != nil || path(ans.Result, "status", "state") != "TASK_STATE_CANCELED" {
		t.Fatalf("CancelTask = %+v", ans)
	}
	_, ans = e.rpc(e.admin, "slow", call("CancelTask", map[string]any{"id": taskID}))
	if ans.Error == nil || ans.Error.Code != a2a.CodeTaskNotCancelable {
		t.Fatalf("second CancelTask = %+v", ans)
	}
	// The turn ends (the registry empties) and the task stays cancelled.
	for i := 0; e.srv.turns.active() > 0; i++ {
		if i == 30000 {
			t.Fatal("the cancelled turn did not end")
		}
		time.Sleep(time.Millisecond)
	}
	_, ans = e.rpc(e.admin, "slow", call("GetTask", map[string]any{"id": taskID}))
	if path(ans.Result, "status", "state") != "TASK_STATE_CANCELED" {
		t.Fatalf("GetTask after cancel = %+v", ans)
	}
	// Another tenant cannot cancel or read it.
	other := e.tenantKey("other")
	e.createAgent(other, map[string]any{"name": "slow"})
	_, ans = e.rpc(other, "slow", call("CancelTask", map[string]any{"id": taskID}))
	if ans.Error == nil || ans.Error.Code != a2a.CodeTaskNotFound {
		t.Fatalf("other tenant's CancelTask = %+v", ans)
	}
}

func TestA2AErrors(t *testing.T) {
	e := newEnv(t, nil)
	e.createAgent(e.admin, map[string]any{"name": "a"})
	e.createAgent(e.admin, map[string]any{"name": "b"})
	_, ok := e.rpc(e.admin, "a", call("SendMessage", map[string]any{"message": userMessage("hi", "")}))
	ctxA, _ := path(ok.Result, "task", "contextId").(string)
	taskA, _ := path(ok.Result, "task", "id").(string)
	cases := []struct {
		name string
		body any
		code int
		id   string
	}{
		{"not JSON", `{"jsonrpc":`, a2a.CodeParseError, "null"},
		{"not an object", `"hello"`, a2a.CodeInvalidRequest, "null"},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}]`, a2a.CodeInvalidRequest, "null"},
		{"no id", `{"jsonrpc":"2.0","method":"GetTask","params":{"id":"x"}}`, a2a.CodeInvalidRequest, "null"},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"GetTask","params":{"id":"x"}}`, a2a.CodeInvalidRequest, "null"},
		{"wrong version", `{"jsonrpc":"1.0","id":"r1","method":"GetTask","params":{"id":"x"}}`, a2a.CodeInvalidRequest, `"r1"`},
		{"unknown method", call("tasks/list", map[string]any{}), a2a.CodeMethodNotFound, "7"},
		{"params not an object", `{"jsonrpc":"2.0","id":3,"method":"GetTask","params":[1]}`, a2a.CodeInvalidParams, "3"},
		{"no message", call("SendMessage", map[string]any{}), a2a.CodeInvalidParams, "7"},
		{"agent role", call("SendMessage", map[string]any{"message": map[string]any{"messageId": "1", "role": "ROLE_AGENT", "parts": []any{map[string]any{"text": "x"}}}}), a2a.CodeInvalidParams, "7"},
		{"file part", call("SendMessage", map[string]any{"message": map[string]any{"messageId": "1", "role": "ROLE_USER", "parts": []any{map[string]any{"url": "http://x/y.pdf"}}}}), a2a.CodeContentTypeNotSupported, "7"},
		{"unknown context", call("SendMessage", map[string]any{"message": userMessage("hi", "ses_nope")}), a2a.CodeInvalidParams, "7"},
		{"another agent's context", call("SendMessage", map[string]any{"message": userMessage("hi", "CTX_A")}), a2a.CodeInvalidParams, "7"},
		{"a task continued", call("SendMessage", map[string]any{"message": map[string]any{"messageId": "1", "role": "ROLE_USER", "taskId": "t", "parts": []any{map[string]any{"text": "x"}}}}), a2a.CodeUnsupportedOperation, "7"},
		{"unknown task", call("GetTask", map[string]any{"id": "nope"}), a2a.CodeTaskNotFound, "7"},
		{"another agent's task", call("GetTask", map[string]any{"id": "TASK_A"}), a2a.CodeTaskNotFound, "7"},
		{"cancel unknown task", call("CancelTask", map[string]any{"id": "nope"}), a2a.CodeTaskNotFound, "7"},
	}
	for _, c := range cases {
		b := c.body
		if s, ok := b.(map[string]any); ok {
			raw := strings.NewReplacer("CTX_A", ctxA, "TASK_A", taskA).Replace(mustMarshal(s))
			b = raw
		}
		resp, ans := e.rpc(e.admin, "b", b)
		if resp.StatusCode != http.StatusOK || ans.JSONRPC != "2.0" || ans.Error == nil || ans.Error.Code != c.code || string(ans.ID) != c.id || ans.Result != nil {
			t.Errorf("%s: %d %+v (error %+v)", c.name, resp.StatusCode, ans, ans.Error)
		}
	}
	// An unknown agent is no endpoint (HTTP 404); a body over the limit an
	// HTTP 413.
	e.wantError(e.do(e.admin, "POST", "/a2a/agents/nobody", call("GetTask", map[string]any{"id": "x"}), nil), http.StatusNotFound, CodeNotFound)
	big := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"1","role":"ROLE_USER","parts":[{"text":"` + strings.Repeat("x", a2a.MaxRequestBytes) + `"}]}}}`
	if resp, ans := e.rpc(e.admin, "a", big); resp.StatusCode != http.StatusRequestEntityTooLarge || ans.Error == nil || ans.Error.Code != a2a.CodeInvalidRequest {
		t.Errorf("oversized: %d %+v", resp.StatusCode, ans)
	}
}

func TestRemoteA2AAgent(t *testing.T) {
	// The remote: a Weft agent served over A2A.
	remote := newEnv(t, scripted.New(scripted.Echo(), scripted.RecordRequests(true)))
	remote.createAgent(remote.admin, map[string]any{"name": "far"})

	local := newEnv(t, nil, func(c *Config) {
		c.Getenv = func(k string) string {
			switch k {
			case "REMOTE_KEY":
				return remote.admin
			case netguard.AllowEnv: // the remote server is on loopback
				return "127.0.0.1"
			case EnvSecretsAllowEnv:
				return "REMOTE_KEY"
			}
			return ""
		}
	})
	// Validation of the new protocol.
	local.wantError(local.do(local.admin, "POST", "/v1/agents", map[string]any{"name": "x", "remote": map[string]any{"protocol": "a2a"}}, nil), http.StatusBadRequest, CodeInvalidRequest)
	local.wantError(local.do(local.admin, "POST", "/v1/agents", map[string]any{"name": "x", "remote": map[string]any{"protocol": "grpc", "url": remote.http.URL}}, nil), http.StatusBadRequest, CodeInvalidRequest)
	local.wantError(local.do(local.admin, "POST", "/v1/agents", map[string]any{"name": "x", "remote": map[string]any{"protocol": "a2a", "url": "http://10.0.0.1/"}}, nil), http.StatusBadRequest, CodeInvalidRequest)

	proxy := local.createAgent(local.admin, map[string]any{"name": "proxy", "remote": map[string]any{"protocol": "a2a", "url": remote.http.URL + "/a2a/agents/far/", "api_key_env": "REMOTE_KEY"}})
	var ans api.ChatAnswer
	resp := local.do(local.admin, "POST", "/v1/agents/"+proxy.ID+"/chat", map[string]any{"query": "hello over there"}, &ans)
	if resp.StatusCode != http.StatusOK || ans.Answer != "hello over there" || !strings.HasPrefix(ans.Model, "a2a:") {
		t.Fatalf("chat = %d %+v %s", resp.StatusCode, ans, body(resp))
	}
	// The next turn of the local session continues the remote context,
	// streamed: the remote's artifact chunks are the local deltas.
	resp = local.do(local.admin, "POST", "/v1/agents/"+proxy.ID+"/chat", map[string]any{"query": "and again", "session_id": ans.SessionID, "stream": true}, nil)
	frames, _ := readSSE(t, resp.Body)
	var text strings.Builder
	for _, f := range frames {
		if f.Event == "message.delta" {
			text.WriteString(f.Data["text"].(string))
		}
	}
	if last := frames[len(frames)-1]; last.Event != "chat.completed" || last.Data["answer"] != "and again" || text.String() != "and again" {
		t.Fatalf("streamed turn: %q, frames %+v", text.String(), frames)
	}
	reqs := remote.model.Requests()
	var seen []string
	for _, m := range reqs[len(reqs)-1].Messages {
		seen = append(seen, m.Text())
	}
	if strings.Join(seen, "|") != "hello over there|hello over there|and again" {
		t.Fatalf("the remote model saw %q", seen)
	}
	// A remote that refuses the key: a model_error naming the remote.
	bad := local.createAgent(local.admin, map[string]any{"name": "bad", "remote": map[string]any{"protocol": "a2a", "url": remote.http.URL + "/a2a/agents/far/.well-known/agent-card.json"}})
	eb := local.wantError(local.do(local.admin, "POST", "/v1/agents/"+bad.ID+"/chat", map[string]any{"query": "hi"}, nil), http.StatusBadGateway, CodeModelError)
	if !strings.Contains(eb.Error.Message, "401") {
		t.Fatalf("error = %+v", eb)
	}
}

// TestA2AVersionNegotiation: the A2A-Version a request names (header, or
// query parameter) is 1.0 or 0.3, a patch number ignored, none meaning
// 0.3; any other is VersionNotSupportedError: -32009 at the JSON-RPC
// endpoint (with the request's id), a 400 for a card.
func TestA2AVersionNegotiation(t *testing.T) {
	e := newEnv(t, nil)
	e.createAgent(e.admin, map[string]any{"name": "a"})
	for _, v := range []string{"1.0", "1.0.2", "0.3", "0.3.0", " 1.0 "} {
		resp := e.do(e.admin, "POST", "/a2a/agents/a", call("GetTask", map[string]any{"id": "nope"}), nil, "A2A-Version", v)
		var ans rpcAnswer
		json.Unmarshal([]byte(body(resp)), &ans)
		if ans.Error == nil || ans.Error.Code != a2a.CodeTaskNotFound {
			t.Errorf("A2A-Version %q: %+v", v, ans.Error)
		}
	}
	for _, v := range []string{"2.0", "1.1", "0.2", "1", "0.3.x", "latest"} {
		resp := e.do(e.admin, "POST", "/a2a/agents/a", `{"jsonrpc":"2.0","id":"v1","method":"GetTask","params":{"id":"nope"}}`, nil, "A2A-Version", v)
		var ans rpcAnswer
		json.Unmarshal([]byte(body(resp)), &ans)
		if resp.StatusCode != http.StatusOK || ans.Error == nil || ans.Error.Code != a2a.CodeVersionNotSupported || string(ans.ID) != `"v1"` ||
			!strings.Contains(ans.Error.Message, "1.0 and 0.3") {
			t.Errorf("A2A-Version %q: %d %+v", v, resp.StatusCode, ans.Error)
		}
		e.wantError(e.do(e.admin, "GET", "/a2a/agents/a/.well-known/agent-card.json", nil, nil, "A2A-Version", v), http.StatusBadRequest, CodeInvalidRequest)
	}
	// The query parameter, when no header is sent.
	var card map[string]any
	e.do(e.admin, "GET", "/a2a/agents/a/.well-known/agent-card.json?A2A-Version=1.0", nil, &card)
	if card["supportedInterfaces"] == nil {
		t.Fatalf("card for ?A2A-Version=1.0 = %v", card)
	}
	e.wantError(e.do(e.admin, "GET", "/.well-known/agent-card.json?A2A-Version=9.9", nil, nil), http.StatusBadRequest, CodeInvalidRequest)
}

// GetExtendedAgentCard: the card declares no extended card, so protocol
// 1.0 answers UnsupportedOperationError (-32004); 0.3's
// agent/getAuthenticatedExtendedCard answers -32007. Neither needs params.
func TestA2AExtendedCard(t *testing.T) {
	e := newEnv(t, nil)
	e.createAgent(e.admin, map[string]any{"name": "a"})
	for body, code := range map[string]int{
		`{"jsonrpc":"2.0","id":6,"method":"GetExtendedAgentCard"}`:                             a2a.CodeUnsupportedOperation,
		`{"jsonrpc":"2.0","id":6,"method":"GetExtendedAgentCard","params":{}}`:                 a2a.CodeUnsupportedOperation,
		`{"jsonrpc":"2.0","id":6,"method":"agent/getAuthenticatedExtendedCard"}`:               a2a.CodeExtendedCardNotConfigured,
		`{"jsonrpc":"2.0","id":6,"method":"agent/getAuthenticatedExtendedCard","params":null}`: a2a.CodeExtendedCardNotConfigured,
	} {
		resp, ans := e.rpc(e.admin, "a", body)
		if resp.StatusCode != http.StatusOK || ans.Error == nil || ans.Error.Code != code || string(ans.ID) != "6" {
			t.Errorf("%s: %d %+v", body, resp.StatusCode, ans.Error)
		}
	}
	var card map[string]any
	e.do(e.admin, "GET", "/a2a/agents/a/.well-known/agent-card.json", nil, &card, "A2A-Version", "1.0")
	if path(card, "capabilities", "extendedAgentCard") == true {
		t.Fatalf("the card declares an extended card: %v", card)
	}
}

// The cards name the server at Config.PublicURL, whatever Host and
// X-Forwarded-Proto a client sends; without it, at the Host the request
// was addressed to, over http unless the connection is TLS (forwarded
// headers are not trusted).
func TestA2ACardURL(t *testing.T) {
	spoof := []string{"X-Forwarded-Proto", "https", "X-Forwarded-Host", "evil.example"}
	e := newEnv(t, nil)
	a := e.createAgent(e.admin, map[string]any{"name": "a"})
	var card map[string]any
	e.do(e.admin, "GET", "/a2a/agents/a/.well-known/agent-card.json", nil, &card, spoof...)
	if card["url"] != e.http.URL+"/a2a/agents/"+a.ID {
		t.Fatalf("without a public URL: %v", card["url"])
	}

	pub := newEnv(t, nil, func(c *Config) { c.PublicURL = "https://agents.example.com/weft/" })
	b := pub.createAgent(pub.admin, map[string]any{"name": "b"})
	req, _ := http.NewRequest("GET", pub.http.URL+"/a2a/agents/b/.well-known/agent-card.json", nil)
	req.Host = "evil.example"
	req.Header.Set("Authorization", "Bearer "+pub.admin)
	for i := 0; i < len(spoof); i += 2 {
		req.Header.Set(spoof[i], spoof[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	card = nil
	json.Unmarshal([]byte(body(resp)), &card)
	if card["url"] != "https://agents.example.com/weft/a2a/agents/"+b.ID {
		t.Fatalf("with a public URL: %v", card["url"])
	}
	card = nil
	pub.do(pub.admin, "GET", "/.well-known/agent-card.json", nil, &card, "A2A-Version", "1.0")
	skills, _ := card["skills"].([]any)
	if len(skills) != 1 || !strings.Contains(path(skills[0], "description").(string), "https://agents.example.com/weft/a2a/agents/"+b.ID+"/") {
		t.Fatalf("tenant card = %v", card)
	}

	for _, bad := range []string{"agents.example.com", "ftp://x/", "https://", "https://u:p@x/", "https://x/?a=1", "https://x/#f", "http:x"} {
		cfg := e.srv.cfg
		cfg.PublicURL = bad
		if _, err := New(cfg); err == nil {
			t.Errorf("PublicURL %q accepted", bad)
		}
	}
}
