package e2e

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/weftlabs/weft/llmtest"
	"github.com/weftlabs/weft/platform/client"
)

// TestCrashMidTurn is the fault suite of turns (issue M): weft serve is
// killed with SIGKILL in the middle of a blocking turn and in the middle of
// a stream, and restarted on the same data directory (and stores). Nothing
// acknowledged is lost, and the next turn on the session starts at once:
// the dead turn's session lease belonged to this instance, which drops it
// at start. It runs on the embedded stores, and on PostgreSQL and Redis
// when they are configured.
func TestCrashMidTurn(t *testing.T) {
	t.Parallel()
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		crashMidTurn(t, nil)
	})
	t.Run("postgres+redis", func(t *testing.T) {
		pgURL, redisURL := os.Getenv("WEFT_TEST_POSTGRES_URL"), os.Getenv("WEFT_TEST_REDIS_URL")
		if pgURL == "" || redisURL == "" {
			t.Skip("set WEFT_TEST_POSTGRES_URL and WEFT_TEST_REDIS_URL to run on PostgreSQL and Redis")
		}
		t.Parallel()
		crashMidTurn(t, []string{"--postgres", freshSchema(t, pgURL), "--redis", redisURL})
	})
}

func crashMidTurn(t *testing.T, storeArgs []string) {
	up := llmtest.NewServer(llmtest.Reply("warm answer"))
	t.Cleanup(up.Close)
	vars := upstreamVars(up)
	vars["WEFT_ADMIN_KEY"] = adminKey
	dir := t.TempDir()
	args := append([]string{"--addr", "127.0.0.1:0", "--log-format", "json"}, storeArgs...)
	p := startServe(t, dir, vars, args...)
	c := client.New(p.url(), adminKey)
	a, err := c.CreateAgent(t.Context(), client.Agent{Name: "crash", Model: "openai/gpt-4o-mini"})
	if err != nil {
		t.Fatal(err)
	}
	warm, err := c.Chat(t.Context(), a.ID, client.ChatRequest{Query: "warm up"})
	if err != nil {
		t.Fatal(err)
	}
	session := warm.SessionID

	// 1. SIGKILL during a blocking turn whose model has not answered yet.
	up.Enqueue(llmtest.Turn{Text: "never", Delay: time.Hour})
	requests := len(up.Requests())
	go func() {
		_, _ = c.Chat(context.Background(), a.ID, client.ChatRequest{Query: "blocking question", SessionID: session})
	}()
	waitFor(t, "the blocking turn to call the model", func() bool { return len(up.Requests()) > requests })
	p.signal(syscall.SIGKILL, 30*time.Second)

	p = startServe(t, dir, vars, args...)
	c = client.New(p.url(), adminKey)
	up.Enqueue(llmtest.Reply("after the blocking crash"))
	nextTurnStarts(t, c, a.ID, session, "question after the blocking crash", "after the blocking crash")
	msgs := mustMessages(t, c, session)
	wantPrefix(t, msgs, "user:warm up", "assistant:warm answer")
	wantSuffix(t, msgs, "user:question after the blocking crash", "assistant:after the blocking crash")

	// 2. SIGKILL in the middle of a streamed answer.
	slow, _ := slowTurn()
	up.Enqueue(slow)
	_, _, _, _ = streamUntil(t, c, a.ID, session, "tell me a long story", 3, func() {
		go p.signal(syscall.SIGKILL, 30*time.Second)
	})
	<-p.exited

	p = startServe(t, dir, vars, args...)
	c = client.New(p.url(), adminKey)
	up.Enqueue(llmtest.Reply("after the stream crash"))
	nextTurnStarts(t, c, a.ID, session, "question after the stream crash", "after the stream crash")
	after := mustMessages(t, c, session)
	// Everything acknowledged before the crash is there, in order; so is
	// the question whose answer was streaming (it is stored before the
	// model is called, and the model had answered in part).
	if len(after) < len(msgs)+3 {
		t.Fatalf("after the stream crash %d messages, want at least %d: %v", len(after), len(msgs)+3, texts(after))
	}
	wantPrefix(t, after, texts(msgs)...)
	if got := texts(after)[len(msgs)]; got != "user:tell me a long story" {
		t.Fatalf("message after the acknowledged ones is %q, want the streamed turn's question", got)
	}
	wantSuffix(t, after, "user:question after the stream crash", "assistant:after the stream crash")
}

// nextTurnStarts checks that a turn on session starts within about 5 s of
// the restart: three attempts of 2 s each (a turn whose session stayed
// locked by the dead process waits for it and fails), one must answer.
// Without the drop at start the dead lease would lapse only after its TTL
// (10 s), so the attempts would fail.
func nextTurnStarts(t *testing.T, c *client.Client, agentID, session, query, answer string) {
	t.Helper()
	var errs []error
	for range 3 {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		ans, err := c.Chat(ctx, agentID, client.ChatRequest{Query: query, SessionID: session})
		cancel()
		if err == nil {
			if ans.Answer != answer {
				t.Fatalf("answer %q, want %q", ans.Answer, answer)
			}
			return
		}
		errs = append(errs, err)
	}
	t.Fatalf("no turn on the session in 3 attempts of 2 s: %v", errs)
}

// waitFor polls cond every 10 ms for up to a minute (a generous bound: the
// machine is shared).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 6000 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func mustMessages(t *testing.T, c *client.Client, session string) []client.Message {
	t.Helper()
	msgs, err := c.Messages(t.Context(), session)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

func texts(msgs []client.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Role + ":" + m.Content
	}
	return out
}

func wantPrefix(t *testing.T, msgs []client.Message, want ...string) {
	t.Helper()
	got := texts(msgs)
	if len(got) < len(want) || fmt.Sprint(got[:len(want)]) != fmt.Sprint(want) {
		t.Fatalf("messages %q, want them to begin with %q", got, want)
	}
}

func wantSuffix(t *testing.T, msgs []client.Message, want ...string) {
	t.Helper()
	got := texts(msgs)
	if len(got) < len(want) || fmt.Sprint(got[len(got)-len(want):]) != fmt.Sprint(want) {
		t.Fatalf("messages %q, want them to end with %q", got, want)
	}
}
