package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weftlabs/weft/llmtest"
	"github.com/weftlabs/weft/platform/client"
)

// freshSchema creates a PostgreSQL schema of its own for the test, dropped
// at its end, and returns pgURL with search_path set to it.
func freshSchema(t *testing.T, pgURL string) string {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	schema := "weft_e2e_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		t.Fatalf("PostgreSQL at WEFT_TEST_POSTGRES_URL: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, pgURL)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(pgURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func roles(req llmtest.Request) []string {
	var out []string
	for _, m := range req.Messages {
		out = append(out, m.Role+":"+m.Text())
	}
	return out
}

// TestScaleOut runs two weft serve processes on one PostgreSQL and one
// Redis: what one replica writes, the other serves — agents, sessions and
// their history, agent updates at once (Redis invalidation) — and a
// replica killed with SIGKILL in the middle of a stream loses no
// acknowledged message.
func TestScaleOut(t *testing.T) {
	t.Parallel()
	pgURL, redisURL := os.Getenv("WEFT_TEST_POSTGRES_URL"), os.Getenv("WEFT_TEST_REDIS_URL")
	if pgURL == "" || redisURL == "" {
		t.Skip("set WEFT_TEST_POSTGRES_URL and WEFT_TEST_REDIS_URL to run the scale-out test")
	}
	dsn := freshSchema(t, pgURL)
	up := llmtest.NewServer(llmtest.Reply("answer one"), llmtest.Reply("answer two"), llmtest.Reply("answer three"))
	t.Cleanup(up.Close)
	vars := upstreamVars(up)
	vars["WEFT_ADMIN_KEY"] = adminKey

	// One replica reads the stores from the environment, the other from flags.
	envVars := map[string]string{"WEFT_POSTGRES_URL": dsn, "WEFT_REDIS_URL": redisURL}
	for k, v := range vars {
		envVars[k] = v
	}
	pa := startServe(t, "", envVars, "--addr", "127.0.0.1:0", "--rate-limit", "-1", "--log-format", "json")
	pb := startServe(t, "", vars, "--addr", "127.0.0.1:0", "--rate-limit", "-1", "--log-format", "json", "--postgres", dsn, "--redis", redisURL)
	ca, cb := client.New(pa.url(), adminKey), client.New(pb.url(), adminKey)
	ctx := t.Context()

	// An agent created on A is served by B.
	a, err := ca.CreateAgent(ctx, client.Agent{Name: "shared", Model: "openai/gpt-4o-mini", SystemPrompt: "version 1"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := cb.FindAgent(ctx, "shared"); err != nil || got.ID != a.ID || got.SystemPrompt != "version 1" {
		t.Fatalf("B sees %+v, %v", got, err)
	}

	// A session started on A continues on B, with its history.
	one, err := ca.Chat(ctx, a.ID, client.ChatRequest{Query: "question one"})
	if err != nil {
		t.Fatal(err)
	}
	two, err := cb.Chat(ctx, a.ID, client.ChatRequest{Query: "question two", SessionID: one.SessionID})
	if err != nil || two.SessionID != one.SessionID || two.Answer != "answer two" {
		t.Fatalf("turn on B = %+v, %v", two, err)
	}
	want := []string{"system:version 1", "user:question one", "assistant:answer one", "user:question two"}
	if got := roles(up.Requests()[1]); mustJSON(got) != mustJSON(want) {
		t.Fatalf("B sent %v\nwant %v", got, want)
	}

	// An update through A reaches B's cache through Redis: B has the
	// agent cached (it just served it) for 30 s, and the invalidation is a
	// pub/sub message, so B sees version 2 as soon as it arrives — well
	// within the 5 s waited here, far short of the cache's TTL.
	if _, err := ca.UpdateAgent(ctx, a.ID, client.Agent{SystemPrompt: "version 2"}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		got, err := cb.GetAgent(ctx, a.ID)
		if err == nil && got.SystemPrompt == "version 2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B 5 s after the update on A: %+v, %v", got, err)
		}
	}
	if _, err := cb.Chat(ctx, a.ID, client.ChatRequest{Query: "question three", SessionID: one.SessionID}); err != nil {
		t.Fatal(err)
	}
	if got := roles(up.Requests()[2]); len(got) != 6 || got[0] != "system:version 2" {
		t.Fatalf("B's turn after the update sent %v", got)
	}

	// A is killed in the middle of a streamed answer. Everything
	// acknowledged before — the earlier turns, and this turn's question,
	// stored before the model was called — is there through B.
	slow, _ := slowTurn()
	up.Enqueue(slow)
	_, _, _, err = streamUntil(t, ca, a.ID, one.SessionID, "question four", 2, func() {
		if err := pa.cmd.Process.Kill(); err != nil {
			t.Error(err)
		}
	})
	if !errors.Is(err, client.ErrStreamEnded) {
		t.Fatalf("stream through the killed replica ended with %v, want ErrStreamEnded", err)
	}
	msgs, err := cb.Messages(ctx, one.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range msgs {
		got = append(got, m.Role+":"+m.Content)
	}
	want = []string{"user:question one", "assistant:answer one", "user:question two", "assistant:answer two",
		"user:question three", "assistant:answer three", "user:question four"}
	if mustJSON(got) != mustJSON(want) {
		t.Fatalf("messages through B after A died:\n%v\nwant %v", got, want)
	}

	// B keeps serving new sessions.
	if ans, err := cb.Chat(ctx, a.ID, client.ChatRequest{Query: "still there?"}); err != nil || ans.Answer != "still there?" {
		t.Fatalf("B after A died: %+v, %v", ans, err)
	}
}
