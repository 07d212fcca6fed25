package platform

import (
	"context"
	"errors"
	"io"
	"iter"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/provider/scripted"
)

func TestChatBlocking(t *testing.T) {
	e := newEnv(t, scripted.New(scripted.Reply("Paris is the capital of France.")))
	a := e.createAgent(e.admin, map[string]any{"name": "geo", "system_prompt": "You answer geography questions."})
	var ans api.ChatAnswer
	resp := e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "Capital of France?"}, &ans)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("chat: %d %s", resp.StatusCode, body(resp))
	}
	if ans.Answer != "Paris is the capital of France." || ans.SessionID == "" || ans.MessageID == "" || ans.Usage.TotalTokens == 0 {
		t.Fatalf("answer = %+v", ans)
	}
	reqs := e.model.Requests()
	if len(reqs) != 1 || reqs[0].Messages[0].Role != llm.RoleSystem || reqs[0].Messages[0].Text() != "You answer geography questions." {
		t.Fatalf("model saw %+v", reqs)
	}

	// The session continues: history goes to the model, messages are listed in order.
	var ans2 api.ChatAnswer
	e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "And of Italy?", "session_id": ans.SessionID}, &ans2)
	if ans2.SessionID != ans.SessionID {
		t.Fatalf("second turn in session %s, want %s", ans2.SessionID, ans.SessionID)
	}
	last := e.model.Requests()[1].Messages
	if len(last) != 4 || last[1].Text() != "Capital of France?" || last[3].Text() != "And of Italy?" {
		t.Fatalf("second request messages = %+v", last)
	}
	var msgs []api.Message
	e.do(e.admin, "GET", "/v1/sessions/"+ans.SessionID+"/messages", nil, &msgs)
	if len(msgs) != 4 || msgs[0].Role != "user" || msgs[1].Role != "assistant" || msgs[1].ID != ans.MessageID || msgs[3].ID != ans2.MessageID {
		t.Fatalf("messages = %+v", msgs)
	}
	var sessions []api.Session
	e.do(e.admin, "GET", "/v1/sessions?agent_id="+a.ID, nil, &sessions)
	if len(sessions) != 1 || sessions[0].MessageCount != 4 || sessions[0].AgentID != a.ID {
		t.Fatalf("sessions = %+v", sessions)
	}
	if resp := e.do(e.admin, "DELETE", "/v1/sessions/"+ans.SessionID, nil, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete session: %d", resp.StatusCode)
	}
	e.wantError(e.do(e.admin, "GET", "/v1/sessions/"+ans.SessionID+"/messages", nil, nil), http.StatusNotFound, CodeNotFound)
}

func TestChatStreaming(t *testing.T) {
	e := newEnv(t, scripted.New(scripted.Reply("one two three four")))
	a := e.createAgent(e.admin, map[string]any{"name": "s"})
	resp := e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "count", "stream": true}, nil)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") || resp.Header.Get("X-Accel-Buffering") != "no" {
		t.Fatalf("headers: %v", resp.Header)
	}
	frames, _ := readSSE(t, resp.Body)
	if len(frames) < 3 || frames[0].Event != "chat.created" || frames[len(frames)-1].Event != "chat.completed" {
		t.Fatalf("frames = %+v", frames)
	}
	var text strings.Builder
	deltas := 0
	for _, f := range frames {
		if f.Data["type"] != f.Event {
			t.Fatalf("frame %s has type %v", f.Event, f.Data["type"])
		}
		if f.Event == "message.delta" {
			deltas++
			text.WriteString(f.Data["text"].(string))
		}
	}
	if deltas < 2 || text.String() != "one two three four" {
		t.Fatalf("%d deltas, text %q", deltas, text.String())
	}
	done := frames[len(frames)-1].Data
	if done["answer"] != "one two three four" || done["message_id"] != frames[0].Data["message_id"] || done["session_id"] != frames[0].Data["session_id"] {
		t.Fatalf("chat.completed = %v", done)
	}
}

func TestChatContextTooLong(t *testing.T) {
	e := newEnv(t, nil)
	a := e.createAgent(e.admin, map[string]any{"name": "tiny", "context_window_tokens": 256, "reserve_tokens": 128})
	eb := e.wantError(e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": strings.Repeat("word ", 400)}, nil), http.StatusBadRequest, CodeContextTooLong)
	if !strings.Contains(eb.Error.Message, "budget") {
		t.Errorf("message %q does not explain the budget", eb.Error.Message)
	}
	if n := len(e.model.Requests()); n != 0 {
		t.Fatalf("the model was called %d times", n)
	}
}

func TestChatWindowKeepsNewestTurns(t *testing.T) {
	e := newEnv(t, scripted.New(scripted.Reply(strings.Repeat("answer ", 40))))
	a := e.createAgent(e.admin, map[string]any{"name": "w", "context_window_tokens": 400, "reserve_tokens": 50})
	var first api.ChatAnswer
	e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "turn 0"}, &first)
	for i := 1; i < 8; i++ {
		e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "turn " + string(rune('0'+i)), "session_id": first.SessionID}, nil)
	}
	reqs := e.model.Requests()
	last := reqs[len(reqs)-1].Messages
	if last[len(last)-1].Text() != "turn 7" {
		t.Fatalf("last message %q", last[len(last)-1].Text())
	}
	if len(last) >= 16 {
		t.Fatalf("window did not slide: %d messages sent", len(last))
	}
	if last[0].Role != llm.RoleUser && last[0].Role != llm.RoleSystem {
		t.Fatalf("window starts with %s", last[0].Role)
	}
	// Everything is still stored.
	var msgs []api.Message
	e.do(e.admin, "GET", "/v1/sessions/"+first.SessionID+"/messages", nil, &msgs)
	if len(msgs) != 16 {
		t.Fatalf("%d messages stored, want 16", len(msgs))
	}
}

func TestChatModelErrorKeepsUserMessage(t *testing.T) {
	e := newEnv(t, scripted.New(scripted.Fail(&llm.Error{Kind: llm.ErrUnavailable, StatusCode: 503, Message: "upstream down"})))
	a := e.createAgent(e.admin, map[string]any{"name": "f"})
	// A session first, so we can look at it afterwards.
	ss, _ := e.srv.sessionFor(context.Background(), e.tenant(), a, "", "")
	eb := e.wantError(e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "hello?", "session_id": ss.ID}, nil), http.StatusBadGateway, CodeModelError)
	if !strings.Contains(eb.Error.Message, "upstream down") {
		t.Fatalf("message %q", eb.Error.Message)
	}
	var msgs []api.Message
	e.do(e.admin, "GET", "/v1/sessions/"+ss.ID+"/messages", nil, &msgs)
	if len(msgs) != 1 || msgs[0].Role != "user" || msgs[0].Content != "hello?" {
		t.Fatalf("messages after a failed turn = %+v", msgs)
	}
	// Streaming: the failure is an error event, last.
	resp := e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "again", "session_id": ss.ID, "stream": true}, nil)
	frames, _ := readSSE(t, resp.Body)
	lastFrame := frames[len(frames)-1]
	if lastFrame.Event != "error" || lastFrame.Data["code"] != CodeModelError {
		t.Fatalf("frames = %+v", frames)
	}
}

func TestChatDisabledAgent(t *testing.T) {
	e := newEnv(t, nil)
	a := e.createAgent(e.admin, map[string]any{"name": "off", "enabled": false})
	e.wantError(e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "hi"}, nil), http.StatusConflict, CodeAgentDisabled)
	on := e.createAgent(e.admin, map[string]any{"name": "on"})
	e.wantError(e.do(e.admin, "POST", "/v1/agents/"+on.ID+"/chat", map[string]any{"query": ""}, nil), http.StatusBadRequest, CodeInvalidRequest)
	e.wantError(e.do(e.admin, "POST", "/v1/agents/"+on.ID+"/chat", map[string]any{"query": "x", "session_id": "ses_nope"}, nil), http.StatusNotFound, CodeNotFound)
	e.wantError(e.do(e.admin, "POST", "/v1/agents/"+on.ID+"/chat", map[string]any{"query": 42}, nil), http.StatusBadRequest, CodeInvalidRequest)
}

func TestChatIdempotencyKey(t *testing.T) {
	e := newEnv(t, nil)
	a := e.createAgent(e.admin, map[string]any{"name": "i"})
	var first, second api.ChatAnswer
	e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "once"}, &first, "Idempotency-Key", "abc")
	resp := e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "once"}, &second, "Idempotency-Key", "abc")
	if second.MessageID != first.MessageID || resp.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry was a second turn: %+v vs %+v", second, first)
	}
	if n := len(e.model.Requests()); n != 1 {
		t.Fatalf("model called %d times", n)
	}
	var msgs []api.Message
	e.do(e.admin, "GET", "/v1/sessions/"+first.SessionID+"/messages", nil, &msgs)
	if len(msgs) != 2 {
		t.Fatalf("%d messages stored", len(msgs))
	}
}

func waitStarted(t *testing.T, m *slowModel) {
	t.Helper()
	select {
	case <-m.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the model was never called")
	}
}

// slowModel streams words slowly until its context ends.
type slowModel struct {
	started chan struct{}
	once    sync.Once
}

func (m *slowModel) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	return llm.Collect(m.Stream(ctx, req))
}

func (m *slowModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		for i := 0; ; i++ {
			if !yield(llm.TextChunk("word "), nil) {
				return
			}
			m.once.Do(func() { close(m.started) })
			select {
			case <-ctx.Done():
				yield(llm.Chunk{}, ctx.Err())
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
}

func TestChatCancelKeepsPartial(t *testing.T) {
	slow := &slowModel{started: make(chan struct{})}
	e := newEnv(t, nil, func(c *Config) {
		c.OpenModel = func(spec string) (*llm.Model, error) { return llm.New(slow, llm.WithRetries(0)), nil }
	})
	a := e.createAgent(e.admin, map[string]any{"name": "slow"})
	ss, _ := e.srv.sessionFor(context.Background(), e.tenant(), a, "", "")
	done := make(chan []sseFrame)
	go func() {
		resp := e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "talk", "session_id": ss.ID, "stream": true}, nil)
		frames, _ := readSSE(t, resp.Body)
		done <- frames
	}()
	waitStarted(t, slow)
	if resp := e.do(e.admin, "POST", "/v1/chat/cancel", map[string]any{"session_id": ss.ID}, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("cancel: %d %s", resp.StatusCode, body(resp))
	}
	frames := <-done
	if last := frames[len(frames)-1]; last.Event != "error" || last.Data["code"] != CodeCancelled {
		t.Fatalf("last frame = %+v", last)
	}
	recs, err := e.sessions.Load(context.Background(), sessionKey(ss), memory.Window{})
	if err != nil || len(recs) != 2 || !recs[1].Partial || !strings.HasPrefix(recs[1].Message.Text(), "word") {
		t.Fatalf("stored = %+v, %v", recs, err)
	}
}

func TestChatClientDisconnectPersistsPartial(t *testing.T) {
	slow := &slowModel{started: make(chan struct{})}
	e := newEnv(t, nil, func(c *Config) {
		c.OpenModel = func(spec string) (*llm.Model, error) { return llm.New(slow, llm.WithRetries(0)), nil }
	})
	a := e.createAgent(e.admin, map[string]any{"name": "slow"})
	ss, _ := e.srv.sessionFor(context.Background(), e.tenant(), a, "", "")
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", e.http.URL+"/v1/agents/"+a.ID+"/chat",
		strings.NewReader(`{"query":"talk","stream":true,"session_id":"`+ss.ID+`"}`))
	req.Header.Set("Authorization", "Bearer "+e.admin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	waitStarted(t, slow)
	cancel()
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	// The handler notices, cancels the model, and stores the partial answer.
	deadline := time.Now().Add(10 * time.Second)
	for {
		recs, _ := e.sessions.Load(context.Background(), sessionKey(ss), memory.Window{})
		if len(recs) == 2 && recs[1].Partial {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("partial answer not stored: %+v", recs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestShutdownEndsStreams(t *testing.T) {
	slow := &slowModel{started: make(chan struct{})}
	e := newEnv(t, nil, func(c *Config) {
		c.OpenModel = func(spec string) (*llm.Model, error) { return llm.New(slow, llm.WithRetries(0)), nil }
	})
	a := e.createAgent(e.admin, map[string]any{"name": "slow"})
	done := make(chan []sseFrame)
	go func() {
		resp := e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "talk", "stream": true}, nil)
		frames, _ := readSSE(t, resp.Body)
		done <- frames
	}()
	waitStarted(t, slow)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	frames := <-done
	if last := frames[len(frames)-1]; last.Event != "error" || last.Data["code"] != CodeUnavailable {
		t.Fatalf("last frame = %+v", last)
	}
}

// TestFailedTurnKeepsToolRounds: a turn that fails after a finished tool
// round keeps the user's message and the round, as the library does.
func TestFailedTurnKeepsToolRounds(t *testing.T) {
	var target string
	m := scripted.New(scripted.Rule{Respond: func(req *llm.Request) (*llm.Response, error) {
		if req.Messages[0].Text() == "Helper rules." {
			return &llm.Response{Message: llm.AssistantMessage("helped")}, nil
		}
		if req.Messages[len(req.Messages)-1].Role == llm.RoleTool {
			return nil, errors.New("upstream down")
		}
		return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "d1", Name: target, Arguments: `{"query":"help"}`}}},
			FinishReason: llm.FinishToolCalls}, nil
	}})
	e := newEnv(t, m)
	helper := e.createAgent(e.admin, map[string]any{"name": "helper", "system_prompt": "Helper rules."})
	target = delegateToolName(helper.ID)
	boss := e.createAgent(e.admin, map[string]any{"name": "boss", "delegate_agent_ids": []string{helper.ID}})
	resp := e.do(e.admin, "POST", "/v1/agents/"+boss.ID+"/chat", map[string]any{"query": "do it"}, nil)
	e.wantError(resp, http.StatusBadGateway, "model_error")
	var sessions []api.Session
	e.do(e.admin, "GET", "/v1/sessions?agent_id="+boss.ID, nil, &sessions)
	if len(sessions) != 1 {
		t.Fatalf("sessions = %+v", sessions)
	}
	var stored []api.Message
	e.do(e.admin, "GET", "/v1/sessions/"+sessions[0].ID+"/messages", nil, &stored)
	if len(stored) != 3 || stored[0].Content != "do it" || len(stored[1].ToolCalls) != 1 || stored[1].ToolCalls[0].ID != "d1" ||
		stored[2].Role != "tool" || stored[2].Content != "helped" {
		t.Fatalf("stored = %+v, want the user message and the finished tool round", stored)
	}
}
