package platform

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/memory/redisstore"
	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/provider/scripted"
)

// approvalsEnv is an agent whose delegation to a helper waits for
// approval under policy; the model delegates when asked for a refund.
func approvalsEnv(t *testing.T, policy string) (e *testEnv, tool, helperID, deskID string) {
	t.Helper()
	e = newEnv(t, approvalsModel())
	helperID, deskID = approvalsAgents(e, policy)
	return e, delegateToolName(helperID), helperID, deskID
}

// approvalsModel delegates when asked for a refund, answers the helper's
// query, and sums up tool results.
func approvalsModel() *scripted.Model {
	refund := regexp.MustCompile(`refund`)
	delegate := scripted.Rule{
		Match: func(req *llm.Request) bool {
			last := req.Messages[len(req.Messages)-1]
			return last.Role == llm.RoleUser && refund.MatchString(last.Text()) && !strings.HasPrefix(last.Text(), "process")
		},
		Respond: func(req *llm.Request) (*llm.Response, error) {
			for _, tl := range req.Tools {
				if strings.HasPrefix(tl.Name, "delegate_agent") {
					return scripted.CallTool(tl.Name, `{"query":"process refund 7"}`).Respond(req)
				}
			}
			return nil, errors.New("no delegation tool offered")
		},
	}
	return scripted.New(
		scripted.SummarizeToolResults(),
		scripted.WhenUserSays(regexp.MustCompile(`^process`), scripted.Reply("processed by the helper")),
		delegate,
		scripted.Reply("plain answer"),
	)
}

// approvalsAgents creates the helper and the desk agent that delegates to
// it under policy.
func approvalsAgents(e *testEnv, policy string) (helperID, deskID string) {
	helper := e.createAgent(e.admin, map[string]any{"name": "helper", "system_prompt": "You help."})
	desk := e.createAgent(e.admin, map[string]any{"name": "desk", "delegate_agent_ids": []string{helper.ID},
		"tool_approvals": map[string]string{delegateToolName(helper.ID): policy}})
	return helper.ID, desk.ID
}

func (e *testEnv) mustAgent(ref string) meta.Agent {
	e.t.Helper()
	var a meta.Agent
	if resp := e.do(e.admin, "GET", "/v1/agents/"+ref, nil, &a); resp.StatusCode != 200 {
		e.t.Fatalf("agent %s: %d", ref, resp.StatusCode)
	}
	a.TenantID = e.tenant()
	return a
}

func (e *testEnv) mustSession(id string) meta.Session {
	e.t.Helper()
	ss, err := e.srv.meta.Session(context.Background(), e.tenant(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return ss
}

// TestTurnApproval pauses a turn before a call its agent's tool_approvals
// name, lists it, refuses a new message, resumes it once — of two
// concurrent resumes one wins, a third is a 409 — and the tool runs once.
func TestTurnApproval(t *testing.T) {
	e, tool, helperID, desk := approvalsEnv(t, "always")
	var ans api.ChatAnswer
	if resp := e.do(e.admin, "POST", "/v1/agents/"+desk+"/chat", map[string]any{"query": "please refund order 7"}, &ans); resp.StatusCode != 200 {
		t.Fatalf("chat: %d %s", resp.StatusCode, body(resp))
	}
	in := ans.Interrupt
	if in == nil || in.Kind != api.InterruptTurn || len(in.Calls) != 1 || in.Calls[0].Name != tool || in.SessionID != ans.SessionID ||
		!strings.Contains(string(in.Calls[0].Arguments), "process refund 7") || in.Resume != "/v1/sessions/"+ans.SessionID+"/interrupts/"+in.ID+"/resume" {
		t.Fatalf("answer %+v, interrupt %+v", ans, in)
	}
	if len(ans.ToolCalls) != 0 {
		t.Fatalf("a call ran before its approval: %+v", ans.ToolCalls)
	}
	// Listed on the session and in the inbox.
	var ss struct {
		Interrupt *struct{ ID string } `json:"interrupt"`
	}
	e.do(e.admin, "GET", "/v1/sessions/"+ans.SessionID, nil, &ss)
	if ss.Interrupt == nil || ss.Interrupt.ID != in.ID {
		t.Fatalf("session's interrupt %+v, want %s", ss.Interrupt, in.ID)
	}
	var inbox api.InterruptList
	e.do(e.admin, "GET", "/v1/interrupts?kind=turn", nil, &inbox)
	if len(inbox.Data) != 1 || inbox.Data[0].ID != in.ID || inbox.Data[0].Resume != in.Resume {
		t.Fatalf("inbox %+v", inbox)
	}
	// A new message waits for the decision.
	e.wantError(e.do(e.admin, "POST", "/v1/agents/"+desk+"/chat", map[string]any{"query": "hello?", "session_id": ans.SessionID}, nil), 409, CodeConflict)
	// Bad decisions change nothing.
	e.wantError(e.do(e.admin, "POST", in.Resume, map[string]any{"decisions": []map[string]any{{"call_id": "nope", "action": "approve"}}}, nil), 404, CodeNotFound)
	e.wantError(e.do(e.admin, "POST", "/v1/sessions/"+ans.SessionID+"/interrupts/other/resume", map[string]any{"decisions": []map[string]any{{"call_id": in.Calls[0].ID, "action": "approve"}}}, nil), 404, CodeNotFound)
	e.wantError(e.do(e.admin, "POST", in.Resume, map[string]any{}, nil), 400, CodeInvalidRequest)

	// Two concurrent resumes: one runs the call.
	approve := []byte(`{"decisions":[{"call_id":"` + in.Calls[0].ID + `","action":"approve"}]}`)
	var wg sync.WaitGroup
	codes := make([]int, 2)
	bodies := make([]string, 2)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", e.http.URL+in.Resume, bytes.NewReader(approve))
			req.Header.Set("Authorization", "Bearer "+e.admin)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			codes[i], bodies[i] = resp.StatusCode, body(resp)
			resp.Body.Close()
		}()
	}
	wg.Wait()
	won := -1
	for i, c := range codes {
		switch c {
		case 200:
			if won >= 0 {
				t.Fatalf("both resumes ran: %q", bodies)
			}
			won = i
		case 409:
		default:
			t.Fatalf("resume: %d %s", c, bodies[i])
		}
	}
	if won < 0 || !strings.Contains(bodies[won], "processed by the helper") {
		t.Fatalf("resumes %v %q", codes, bodies)
	}
	e.wantError(e.do(e.admin, "POST", in.Resume, string(approve), nil), 409, CodeConflict)

	// Resolved everywhere; the session takes messages again.
	ss.Interrupt = nil
	e.do(e.admin, "GET", "/v1/sessions/"+ans.SessionID, nil, &ss)
	e.do(e.admin, "GET", "/v1/interrupts", nil, &inbox)
	if ss.Interrupt != nil || len(inbox.Data) != 0 {
		t.Fatalf("after the resume: session interrupt %+v, inbox %+v", ss.Interrupt, inbox)
	}
	var next api.ChatAnswer
	if resp := e.do(e.admin, "POST", "/v1/agents/"+desk+"/chat", map[string]any{"query": "thanks", "session_id": ans.SessionID}, &next); resp.StatusCode != 200 || next.Answer != "plain answer" {
		t.Fatalf("next turn: %d %+v", resp.StatusCode, next)
	}
	// The helper ran once: one answer in its session.
	child, ae := e.srv.childSession(context.Background(), turnInput{agent: e.mustAgent(desk), session: e.mustSession(ans.SessionID)}, e.mustAgent(helperID))
	if ae != nil {
		t.Fatal(ae)
	}
	recs, err := e.sessions.Load(context.Background(), sessionKey(child), memory.Window{})
	if err != nil {
		t.Fatal(err)
	}
	answers := 0
	for _, r := range recs {
		if r.Message.Text() == "processed by the helper" {
			answers++
		}
	}
	if answers != 1 {
		t.Fatalf("the helper answered %d times: %+v", answers, recs)
	}
}

// TestTurnApprovalReject rejects the waiting call: the tool does not run,
// and the model hears the reason as the tool's answer.
func TestTurnApprovalReject(t *testing.T) {
	e, _, _, desk := approvalsEnv(t, "args.query contains 'refund'")
	var ans api.ChatAnswer
	e.do(e.admin, "POST", "/v1/agents/"+desk+"/chat", map[string]any{"query": "please refund order 7"}, &ans)
	if ans.Interrupt == nil {
		t.Fatalf("the expression did not pause the call: %+v", ans)
	}
	var done api.ChatAnswer
	resp := e.do(e.admin, "POST", ans.Interrupt.Resume, map[string]any{"decisions": []map[string]any{
		{"call_id": ans.Interrupt.Calls[0].ID, "action": "reject", "reason": "refunds need a manager"}}}, &done)
	if resp.StatusCode != 200 || !strings.Contains(done.Answer, "refunds need a manager") || strings.Contains(done.Answer, "processed by the helper") {
		t.Fatalf("rejected resume: %d %+v", resp.StatusCode, done)
	}
}

// TestToolApprovalsValidation refuses a policy that is not always, never
// or an expression over args.
func TestToolApprovalsValidation(t *testing.T) {
	e := newEnv(t, nil)
	eb := e.wantError(e.do(e.admin, "POST", "/v1/agents", map[string]any{"name": "x", "tool_approvals": map[string]string{"t": "args.("}}, nil), 400, CodeInvalidRequest)
	if !strings.Contains(eb.Error.Message, "tool_approvals") || !strings.Contains(eb.Error.Message, `tool "t"`) {
		t.Errorf("error %q", eb.Error.Message)
	}
	e.wantError(e.do(e.admin, "POST", "/v1/agents", map[string]any{"name": "y", "tool_approvals": map[string]string{"t": strings.Repeat("x", 2000)}}, nil), 400, CodeInvalidRequest)
}

// TestTurnApprovalStream ends a streamed turn with the interrupt event
// before chat.completed.
func TestTurnApprovalStream(t *testing.T) {
	e, tool, _, desk := approvalsEnv(t, "always")
	resp := e.do(e.admin, "POST", "/v1/agents/"+desk+"/chat", map[string]any{"query": "please refund", "stream": true}, nil)
	frames, _ := readSSE(t, resp.Body)
	var names []string
	for _, f := range frames {
		names = append(names, f.Event)
	}
	if len(frames) < 3 || names[len(names)-2] != api.EventInterrupt || names[len(names)-1] != api.EventCompleted {
		t.Fatalf("events %v", names)
	}
	in := frames[len(frames)-2].Data
	calls, _ := in["calls"].([]any)
	if in["kind"] != "turn" || len(calls) != 1 || path(calls[0], "name") != tool {
		t.Fatalf("interrupt event %v", in)
	}
	if path(frames[len(frames)-1].Data, "interrupt", "id") != in["id"] {
		t.Fatalf("chat.completed %v", frames[len(frames)-1].Data)
	}
}

// TestTurnApprovalReplicas pauses a turn on one replica (PostgreSQL and
// Redis sessions shared), restarts it, and resumes on both replicas at
// once: one resume runs the call, once; the other replica then takes the
// session's next message (its cache heard of the resume).
func TestTurnApprovalReplicas(t *testing.T) {
	url := os.Getenv("WEFT_TEST_REDIS_URL")
	if url == "" || os.Getenv("WEFT_TEST_POSTGRES_URL") == "" {
		t.Skip("WEFT_TEST_POSTGRES_URL and WEFT_TEST_REDIS_URL not set")
	}
	ro, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	store := openTestPostgres(t)
	admin, err := Bootstrap(ctx, store, "")
	if err != nil {
		t.Fatal(err)
	}
	prefix := "weftapproval" + strconv.FormatInt(time.Now().UnixNano(), 36)
	model := approvalsModel()
	replica := func(instance string) (*testEnv, func()) {
		rdb := redis.NewClient(ro)
		sessions, err := redisstore.New(rdb, redisstore.WithPrefix(prefix), redisstore.WithTTL(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Meta: store, Sessions: sessions, Redis: rdb, RateLimit: -1, Instance: instance,
			Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
			OpenModel: func(spec string) (*llm.Model, error) { return llm.New(model, llm.WithName(spec)), nil }}
		srv, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv)
		stop := func() { hs.CloseClientConnections(); hs.Close(); srv.Close(); rdb.Close() }
		return &testEnv{t: t, srv: srv, http: hs, admin: admin, sessions: sessions}, stop
	}
	a, stopA := replica("replica-a")
	b, stopB := replica("replica-b")
	defer stopB()
	helperID, desk := approvalsAgents(a, "always")
	var ans api.ChatAnswer
	a.do(admin, "POST", "/v1/agents/"+desk+"/chat", map[string]any{"query": "please refund order 7"}, &ans)
	if ans.Interrupt == nil {
		t.Fatalf("no interrupt: %+v", ans)
	}
	// b cached the session before the pause; the bus tells it.
	b.wantError(b.do(admin, "POST", "/v1/agents/"+desk+"/chat", map[string]any{"query": "hello?", "session_id": ans.SessionID}, nil), 409, CodeConflict)
	stopA() // the restart: nothing of the paused turn lived in a
	a2, stopA2 := replica("replica-a")
	defer stopA2()

	approve := `{"decisions":[{"call_id":"` + ans.Interrupt.Calls[0].ID + `","action":"approve"}]}`
	var wg sync.WaitGroup
	codes := make([]int, 4)
	for i := range codes {
		env := a2
		if i%2 == 1 {
			env = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", env.http.URL+ans.Interrupt.Resume, strings.NewReader(approve))
			req.Header.Set("Authorization", "Bearer "+admin)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			codes[i] = resp.StatusCode
		}()
	}
	wg.Wait()
	won := 0
	for _, c := range codes {
		switch c {
		case 200:
			won++
		case 409:
		default:
			t.Fatalf("resumes answered %v", codes)
		}
	}
	if won != 1 {
		t.Fatalf("resumes answered %v: want one 200", codes)
	}
	var next api.ChatAnswer
	if resp := b.do(admin, "POST", "/v1/agents/"+desk+"/chat", map[string]any{"query": "thanks", "session_id": ans.SessionID}, &next); resp.StatusCode != 200 {
		t.Fatalf("next turn on b: %d %s", resp.StatusCode, body(resp))
	}
	child, ae := b.srv.childSession(ctx, turnInput{agent: b.mustAgent(desk), session: b.mustSession(ans.SessionID)}, b.mustAgent(helperID))
	if ae != nil {
		t.Fatal(ae)
	}
	recs, err := b.sessions.Load(ctx, sessionKey(child), memory.Window{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		if r.Message.Text() == "processed by the helper" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the helper answered %d times", n)
	}
}
