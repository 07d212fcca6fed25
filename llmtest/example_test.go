package llmtest_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llmtest"
	"github.com/weftlabs/weft/provider/openai"
)

// A test scripts the server's answers and points a client at it; here the
// model type waits out a rate limit and then streams the answer.
func ExampleNewServer() {
	srv := llmtest.NewServer(
		llmtest.RateLimited(10*time.Millisecond),
		llmtest.Turn{Text: "Hello from the fake server", Chunks: 3},
	)
	defer srv.Close()

	driver, err := openai.New(openai.WithBaseURL(srv.URL()), openai.WithAPIKey("sk-test"), openai.WithModel("gpt-test"))
	if err != nil {
		fmt.Println(err)
		return
	}
	model := llm.New(driver)
	for c, err := range model.Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.UserMessage("hi")}}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if c.Type == llm.ChunkText {
			fmt.Printf("[%s]", c.Text)
		}
	}
	fmt.Println()
	fmt.Println(len(srv.Requests()), "requests; the last asked for", srv.Requests()[1].LastUserText())
	// Output:
	// [Hello fro][m the fak][e server]
	// 2 requests; the last asked for hi
}

// A recorder saves real exchanges once and replays them offline afterwards.
func ExampleRecorder() {
	dir, _ := os.MkdirTemp("", "cassettes")
	defer os.RemoveAll(dir)
	cassette := filepath.Join(dir, "chat.json")
	body := `{"model":"gpt-test","messages":[{"role":"user","content":"hi"}]}`

	// Record (in real use: against the provider's API).
	srv := llmtest.NewServer(llmtest.Reply("recorded answer"))
	rec, _ := llmtest.NewRecorder(cassette, llmtest.Record, srv.Client().Transport)
	resp, _ := rec.Client().Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(body))
	resp.Body.Close()
	rec.Save()
	srv.Close()

	// Replay: no server needed.
	play, _ := llmtest.NewRecorder(cassette, llmtest.Replay, nil)
	resp, err := play.Client().Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, strings.Contains(string(b), "recorded answer"))
	// Output: 200 true
}

var _ http.RoundTripper = (*llmtest.Recorder)(nil)
