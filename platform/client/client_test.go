package client_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llmtest"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/platform"
	"github.com/weftlabs/weft/platform/client"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/provider"
	_ "github.com/weftlabs/weft/provider/all"
	"github.com/weftlabs/weft/provider/scripted"
)

// newPlatform starts a platform server over embedded stores whose models
// all answer with model (the scripted demo when nil). It returns the
// server's URL and the admin key.
func newPlatform(t testing.TB, model llm.ChatModel) (string, string) {
	t.Helper()
	return newPlatformWith(t, func(spec string) (*llm.Model, error) {
		if model == nil {
			return provider.Open("scripted/demo")
		}
		return llm.New(model, llm.WithName(spec), llm.WithRetries(0)), nil
	})
}

func newPlatformWith(t testing.TB, open func(string) (*llm.Model, error)) (string, string) {
	t.Helper()
	ctx := context.Background()
	store, err := meta.OpenSQLite(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	admin, err := platform.Bootstrap(ctx, store, "")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := platform.New(platform.Config{
		Meta: store, Sessions: memory.NewInMemory(), OpenModel: open, RateLimit: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close(); store.Close() })
	return hs.URL, admin
}

func TestAgents(t *testing.T) {
	t.Parallel()
	url, key := newPlatform(t, nil)
	c := client.New(url+"/v1/", key)
	ctx := t.Context()

	a, err := c.CreateAgent(ctx, client.Agent{Name: "support", SystemPrompt: "Be brief.", Temperature: new(0.0)})
	if err != nil {
		t.Fatal(err)
	}
	if a.ID == "" || a.ContextWindowTokens != 4096 || a.Temperature == nil || *a.Temperature != 0 || !a.IsEnabled() {
		t.Fatalf("created %+v", a)
	}
	_, err = c.CreateAgent(ctx, client.Agent{Name: "support"})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != http.StatusConflict || ce.Code != client.CodeConflict || ce.RequestID == "" {
		t.Fatalf("duplicate name: %v", err)
	}
	_, err = c.CreateAgent(ctx, client.Agent{Name: "x", ContextWindowTokens: 10})
	if !errors.As(err, &ce) || ce.Code != client.CodeInvalidRequest || !strings.Contains(ce.Message, "context_window_tokens") {
		t.Fatalf("invalid agent: %v", err)
	}

	// Apply by name: the second apply updates, keeping unset fields.
	b, created, err := c.ApplyAgent(ctx, client.Agent{Name: "billing", Model: "scripted/demo"})
	if err != nil || !created {
		t.Fatalf("apply new = %+v, %v, %v", b, created, err)
	}
	b2, created, err := c.ApplyAgent(ctx, client.Agent{Name: "billing", SystemPrompt: "Invoices only.", Enabled: new(false)})
	if err != nil || created || b2.ID != b.ID || b2.Model != "scripted/demo" || b2.SystemPrompt != "Invoices only." || b2.IsEnabled() {
		t.Fatalf("apply existing = %+v, %v, %v", b2, created, err)
	}

	for _, ref := range []string{"billing", b.ID} {
		got, err := c.FindAgent(ctx, ref)
		if err != nil || got.ID != b.ID {
			t.Fatalf("FindAgent(%q) = %+v, %v", ref, got, err)
		}
	}
	if _, err := c.FindAgent(ctx, "nobody"); !client.IsNotFound(err) {
		t.Fatalf("FindAgent(nobody) = %v", err)
	}
	list, err := c.ListAgents(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("list = %+v, %v", list, err)
	}
	if err := c.DeleteAgent(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetAgent(ctx, a.ID); !client.IsNotFound(err) {
		t.Fatalf("get deleted = %v", err)
	}
	if err := c.DeleteAgent(ctx, a.ID); !client.IsNotFound(err) {
		t.Fatalf("delete twice = %v", err)
	}
}

func TestChatAndSessions(t *testing.T) {
	t.Parallel()
	url, key := newPlatform(t, scripted.New(scripted.Echo()))
	c := client.New(url, key)
	ctx := t.Context()
	a, err := c.CreateAgent(ctx, client.Agent{Name: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	ans, err := c.Chat(ctx, a.ID, client.ChatRequest{Query: "first question"})
	if err != nil {
		t.Fatal(err)
	}
	if ans.SessionID == "" || ans.MessageID == "" || !strings.Contains(ans.Answer, "first question") || ans.Usage.TotalTokens == 0 {
		t.Fatalf("answer = %+v", ans)
	}

	var types []string
	var text strings.Builder
	var done *client.ChatAnswer
	for ev, err := range c.ChatStream(ctx, a.ID, client.ChatRequest{Query: "second question", SessionID: ans.SessionID}) {
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, ev.Type)
		switch ev.Type {
		case client.EventCreated:
			if ev.SessionID != ans.SessionID || ev.MessageID == "" {
				t.Fatalf("created = %+v", ev)
			}
		case client.EventMessageDelta:
			text.WriteString(ev.Text)
		case client.EventCompleted:
			done = ev.Answer
		}
	}
	if types[0] != client.EventCreated || types[len(types)-1] != client.EventCompleted || done == nil {
		t.Fatalf("events %v", types)
	}
	if done.Answer != text.String() || !strings.Contains(done.Answer, "second question") || done.SessionID != ans.SessionID {
		t.Fatalf("deltas %q, completed %+v", text.String(), done)
	}

	sessions, err := c.ListSessions(ctx, a.ID)
	if err != nil || len(sessions) != 1 || sessions[0].ID != ans.SessionID || sessions[0].AgentID != a.ID {
		t.Fatalf("sessions = %+v, %v", sessions, err)
	}
	if s, err := c.GetSession(ctx, ans.SessionID); err != nil || s.MessageCount != 4 {
		t.Fatalf("session = %+v, %v", s, err)
	}
	msgs, err := c.Messages(ctx, ans.SessionID)
	if err != nil || len(msgs) != 4 || msgs[0].Role != "user" || msgs[0].Content != "first question" ||
		msgs[1].ID != ans.MessageID || msgs[3].ID != done.MessageID {
		t.Fatalf("messages = %+v, %v", msgs, err)
	}
	if err := c.DeleteSession(ctx, ans.SessionID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Messages(ctx, ans.SessionID); !client.IsNotFound(err) {
		t.Fatalf("messages of a deleted session: %v", err)
	}
}

func TestStreamErrorEvent(t *testing.T) {
	t.Parallel()
	url, key := newPlatform(t, scripted.New(scripted.Fail(&llm.Error{Kind: llm.ErrBadRequest, Provider: "scripted", Message: "no such thing"})))
	c := client.New(url, key)
	a, err := c.CreateAgent(t.Context(), client.Agent{Name: "broken"})
	if err != nil {
		t.Fatal(err)
	}
	var last client.Event
	var streamErr error
	for ev, err := range c.ChatStream(t.Context(), a.ID, client.ChatRequest{Query: "hi"}) {
		last, streamErr = ev, err
	}
	var ce *client.Error
	if !errors.As(streamErr, &ce) || ce.Status != 0 || ce.Code != client.CodeModelError || last.Type != client.EventError || last.Code != client.CodeModelError {
		t.Fatalf("last event %+v, error %v", last, streamErr)
	}
	// The blocking form reports the same failure with its status.
	_, err = c.Chat(t.Context(), a.ID, client.ChatRequest{Query: "hi"})
	if !errors.As(err, &ce) || ce.Status != http.StatusBadGateway || ce.Code != client.CodeModelError {
		t.Fatalf("blocking: %v", err)
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	words := strings.Repeat("word ", 400)
	up := llmtest.NewServer(llmtest.Turn{Text: words, ChunkDelay: 20 * time.Millisecond})
	t.Cleanup(up.Close)
	url, key := newPlatformWith(t, func(spec string) (*llm.Model, error) {
		return provider.Open(spec, provider.WithAPIKey("sk-test"), provider.WithBaseURL(up.URL()))
	})
	c := client.New(url, key)
	a, err := c.CreateAgent(t.Context(), client.Agent{Name: "slow", Model: "openai/gpt-4o-mini"})
	if err != nil {
		t.Fatal(err)
	}
	var session string
	var deltas int
	var streamErr error
	for ev, err := range c.ChatStream(t.Context(), a.ID, client.ChatRequest{Query: "talk"}) {
		if err != nil {
			streamErr = err
			break
		}
		switch ev.Type {
		case client.EventCreated:
			session = ev.SessionID
		case client.EventMessageDelta:
			deltas++
			if deltas == 1 {
				if err := c.Cancel(t.Context(), session); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	var ce *client.Error
	if !errors.As(streamErr, &ce) || ce.Code != client.CodeCancelled {
		t.Fatalf("after cancel: %v (%d deltas)", streamErr, deltas)
	}
	msgs, err := c.Messages(t.Context(), session)
	if err != nil || len(msgs) != 2 || msgs[0].Content != "talk" || !msgs[1].Partial || msgs[1].Content == "" || len(msgs[1].Content) >= len(words) {
		t.Fatalf("persisted %+v, %v", msgs, err)
	}
	if err := c.Cancel(t.Context(), "ses_missing"); !client.IsNotFound(err) {
		t.Fatalf("cancel of an unknown session: %v", err)
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	url, _ := newPlatform(t, nil)
	_, err := client.New(url, "wrong-key").ListAgents(t.Context())
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != http.StatusUnauthorized || ce.Code != client.CodeUnauthorized {
		t.Fatalf("bad key: %v", err)
	}
	if err := client.New(url, "").Ready(t.Context()); err != nil {
		t.Fatalf("ready: %v", err)
	}

	// A server that is not Weft's: the status still comes through.
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad gateway from the proxy", http.StatusBadGateway)
	}))
	t.Cleanup(plain.Close)
	_, err = client.New(plain.URL, "k").ListAgents(t.Context())
	if !errors.As(err, &ce) || ce.Status != http.StatusBadGateway || ce.Code != "http_bad_gateway" || ce.Message != "bad gateway from the proxy" {
		t.Fatalf("plain error: %v", err)
	}
	if _, err := client.New(plain.URL, "k").GetAgent(t.Context(), ""); err == nil {
		t.Fatal("empty id accepted")
	}
}

func TestStreamBrokenOff(t *testing.T) {
	t.Parallel()
	frames := []string{
		"event: chat.created\ndata: {\"type\":\"chat.created\",\"session_id\":\"s1\",\"message_id\":\"m1\"}\n\n: ping\n\n" +
			"event: message.delta\ndata: {\"type\":\"message.delta\",\"text\":\"Hel\"}\n\n",
		"event: message.delta\ndata: {not json}\n\n",
	}
	for i, body := range frames {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, body)
		}))
		t.Cleanup(srv.Close)
		var got []client.Event
		var last error
		for ev, err := range client.New(srv.URL, "k").ChatStream(t.Context(), "a", client.ChatRequest{Query: "q"}) {
			if err != nil {
				last = err
				break
			}
			got = append(got, ev)
		}
		switch i {
		case 0:
			if !errors.Is(last, client.ErrStreamEnded) || len(got) != 2 || got[1].Text != "Hel" || got[0].SessionID != "s1" {
				t.Fatalf("events %+v, error %v", got, last)
			}
		case 1:
			if last == nil || errors.Is(last, client.ErrStreamEnded) || !strings.Contains(last.Error(), "malformed") {
				t.Fatalf("malformed event: %v", last)
			}
		}
	}
}

func TestStreamStopsEarly(t *testing.T) {
	t.Parallel()
	url, key := newPlatform(t, scripted.New(scripted.Reply("one two three four five six")))
	c := client.New(url, key)
	a, _ := c.CreateAgent(t.Context(), client.Agent{Name: "x"})
	n := 0
	for range c.ChatStream(t.Context(), a.ID, client.ChatRequest{Query: "q"}) {
		n++
		if n == 2 {
			break
		}
	}
	if n != 2 {
		t.Fatalf("iterated %d events after break", n)
	}
}
