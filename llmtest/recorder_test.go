package llmtest_test

import (
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftlabs/weft/llmtest"
)

func do(t *testing.T, c *http.Client, url, body string) (*http.Response, string, error) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer sk-secret-key")
	resp, err := c.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b), nil
}

func TestRecordReplay(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(
		llmtest.RateLimited(10*time.Millisecond),
		llmtest.Reply("first answer"),
		llmtest.Reply("second answer"),
	)
	path := filepath.Join(t.TempDir(), "cassettes", "chat.json")

	rec, err := llmtest.NewRecorder(path, llmtest.Record, srv.Client().Transport)
	if err != nil {
		t.Fatal(err)
	}
	url := srv.URL() + "/chat/completions?api-version=1"
	var recorded []string
	for _, body := range []string{streamBody, streamBody, chatBody} {
		resp, b, err := do(t, rec.Client(), url, body)
		if err != nil {
			t.Fatal(err)
		}
		recorded = append(recorded, resp.Status+"|"+resp.Header.Get("Retry-After-Ms")+"|"+b)
	}
	srv.Close() // replay must not need the server
	if err := rec.Save(); err != nil {
		t.Fatal(err)
	}
	saved, _ := os.ReadFile(path)
	if strings.Contains(string(saved), "sk-secret-key") {
		t.Fatal("the cassette holds the API key")
	}

	play, err := llmtest.NewRecorder(path, llmtest.Replay, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The same JSON with other key order and spacing matches.
	reordered := `{ "messages":[{"content":"be brief","role":"system"},{"role":"user","content":"hello there"}], "model":"gpt-test" }`
	for i, body := range []string{streamBody, streamBody, reordered} {
		resp, b, err := do(t, play.Client(), url, body)
		if err != nil {
			t.Fatalf("replay %d: %v", i, err)
		}
		if got := resp.Status + "|" + resp.Header.Get("Retry-After-Ms") + "|" + b; got != recorded[i] {
			t.Errorf("replay %d = %q, want %q", i, got, recorded[i])
		}
	}
	if play.Unused() != 0 {
		t.Errorf("%d exchanges unused", play.Unused())
	}
	// Every exchange is used once: a fourth identical request has no answer.
	_, _, err = do(t, play.Client(), url, streamBody)
	if !errors.Is(err, llmtest.ErrNoExchange) || !strings.Contains(err.Error(), llmtest.RecordEnv) {
		t.Errorf("exhausted replay err = %v", err)
	}
	_, _, err = do(t, play.Client(), srv.URL()+"/embeddings", `{"input":"x"}`)
	if !errors.Is(err, llmtest.ErrNoExchange) {
		t.Errorf("unrecorded path err = %v", err)
	}
}

func TestRecorderMissingCassette(t *testing.T) {
	t.Parallel()
	_, err := llmtest.NewRecorder(filepath.Join(t.TempDir(), "nope.json"), llmtest.Replay, nil)
	if err == nil || !strings.Contains(err.Error(), llmtest.RecordEnv+"=1") {
		t.Errorf("err = %v, want advice to record", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte("{"), 0o644)
	if _, err := llmtest.NewRecorder(bad, llmtest.Replay, nil); err == nil {
		t.Error("a corrupt cassette loaded")
	}
}

func TestCassetteReplaysTestdata(t *testing.T) {
	t.Parallel()
	if os.Getenv(llmtest.RecordEnv) == "1" {
		srv := llmtest.NewServer(llmtest.Reply("from the cassette"))
		defer srv.Close()
		rec := llmtest.Cassette(t, "echo", srv.Client().Transport)
		do(t, rec.Client(), srv.URL()+"/chat/completions", chatBody)
		return
	}
	rec := llmtest.Cassette(t, "echo", nil)
	_, b, err := do(t, rec.Client(), "http://127.0.0.1:1/v1/chat/completions", chatBody)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b, `"content":"from the cassette"`) {
		t.Errorf("replayed body %s", b)
	}
}
