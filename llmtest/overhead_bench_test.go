package llmtest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/llmtest"
)

// BenchmarkOverhead measures what Weft's model type (llm.Model over the
// OpenAI driver) costs against a hand-written net/http + encoding/json
// client, both against the same fake server in the same run. The goal is at
// most 20% over raw. The server echoes a 50-word prompt, which a stream
// sends as 50 text chunks.
//
//	go test -run '^$' -bench Overhead -benchmem ./llmtest/
func BenchmarkOverhead(b *testing.B) {
	srv := llmtest.NewServer()
	defer srv.Close()
	srv.SetRecording(false)
	prompt := strings.TrimSpace(strings.Repeat("word ", 50))
	client := srv.Client()
	model := openaiModel(b, srv)
	req := &llm.Request{Messages: []llm.Message{llm.UserMessage(prompt)}}
	ctx := context.Background()

	b.Run("generate/raw", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			text, err := rawGenerate(ctx, client, srv.URL(), prompt)
			if err != nil || len(text) != len(prompt) {
				b.Fatalf("%q %v", text, err)
			}
		}
	})
	b.Run("generate/weft", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			resp, err := model.Generate(ctx, req)
			if err != nil || len(resp.Text()) != len(prompt) {
				b.Fatalf("%v %v", resp, err)
			}
		}
	})
	generateRaw := func() {
		if text, err := rawGenerate(ctx, client, srv.URL(), prompt); err != nil || len(text) != len(prompt) {
			b.Fatalf("%q %v", text, err)
		}
	}
	generateWeft := func() {
		if resp, err := model.Generate(ctx, req); err != nil || len(resp.Text()) != len(prompt) {
			b.Fatalf("%v %v", resp, err)
		}
	}
	b.Run("generate/paired", func(b *testing.B) { paired(b, generateRaw, generateWeft) })
	b.Run("stream50/raw", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			text, chunks, err := rawStream(ctx, client, srv.URL(), prompt)
			if err != nil || len(text) != len(prompt) || chunks != 50 {
				b.Fatalf("%q %d %v", text, chunks, err)
			}
		}
	})
	b.Run("stream50/weft", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			resp, err := llm.Collect(model.Stream(ctx, req))
			if err != nil || len(resp.Text()) != len(prompt) {
				b.Fatalf("%v %v", resp, err)
			}
		}
	})
	streamRaw := func() {
		if text, chunks, err := rawStream(ctx, client, srv.URL(), prompt); err != nil || len(text) != len(prompt) || chunks != 50 {
			b.Fatalf("%q %d %v", text, chunks, err)
		}
	}
	streamWeft := func() {
		if resp, err := llm.Collect(model.Stream(ctx, req)); err != nil || len(resp.Text()) != len(prompt) {
			b.Fatalf("%v %v", resp, err)
		}
	}
	b.Run("stream50/paired", func(b *testing.B) { paired(b, streamRaw, streamWeft) })
}

// paired runs raw and weft alternately, in the same loop, and reports the
// ratio of their total times as "weft/raw". On a shared, loaded machine the
// separate sub-benchmarks drift with the load; alternating cancels most of
// that drift, so the ratio is the figure to read.
func paired(b *testing.B, raw, weft func()) {
	var rawTime, weftTime time.Duration
	i := 0
	for b.Loop() {
		first, second, ft, st := raw, weft, &rawTime, &weftTime
		if i%2 == 1 {
			first, second, ft, st = weft, raw, &weftTime, &rawTime
		}
		t0 := time.Now()
		first()
		t1 := time.Now()
		second()
		*ft += t1.Sub(t0)
		*st += time.Since(t1)
		i++
	}
	b.ReportMetric(float64(weftTime)/float64(rawTime), "weft/raw")
	b.ReportMetric(float64(rawTime.Nanoseconds())/float64(i), "raw-ns/op")
	b.ReportMetric(float64(weftTime.Nanoseconds())/float64(i), "weft-ns/op")
}

// The raw client: what a careful engineer writes by hand with net/http and
// encoding/json, and nothing more.

type rawMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type rawRequest struct {
	Model         string       `json:"model"`
	Messages      []rawMessage `json:"messages"`
	Stream        bool         `json:"stream,omitempty"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options,omitempty"`
}

type rawUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type rawCompletion struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage rawUsage `json:"usage"`
}

type rawChunk struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *rawUsage `json:"usage"`
}

func rawPost(ctx context.Context, c *http.Client, baseURL string, body rawRequest) (*http.Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/chat/completions", bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer sk-test")
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	return resp, nil
}

func rawGenerate(ctx context.Context, c *http.Client, baseURL, prompt string) (string, error) {
	resp, err := rawPost(ctx, c, baseURL, rawRequest{Model: "gpt-test", Messages: []rawMessage{{Role: "user", Content: prompt}}})
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var out rawCompletion
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return "", err
	}
	if len(out.Choices) == 0 {
		return "", fmt.Errorf("no choices")
	}
	return out.Choices[0].Message.Content, nil
}

func rawStream(ctx context.Context, c *http.Client, baseURL, prompt string) (string, int, error) {
	body := rawRequest{Model: "gpt-test", Messages: []rawMessage{{Role: "user", Content: prompt}}, Stream: true}
	body.StreamOptions = &struct {
		IncludeUsage bool `json:"include_usage"`
	}{true}
	resp, err := rawPost(ctx, c, baseURL, body)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	var text strings.Builder
	var usage rawUsage
	chunks, finished := 0, false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("data: ")) {
			continue
		}
		data := line[len("data: "):]
		if bytes.Equal(data, []byte("[DONE]")) {
			break
		}
		var ch rawChunk
		if err := json.Unmarshal(data, &ch); err != nil {
			return "", 0, err
		}
		for _, choice := range ch.Choices {
			if choice.Delta.Content != "" {
				text.WriteString(choice.Delta.Content)
				chunks++
			}
			if choice.FinishReason != nil {
				finished = true
			}
		}
		if ch.Usage != nil {
			usage = *ch.Usage
		}
	}
	if err := sc.Err(); err != nil {
		return "", 0, err
	}
	if !finished || usage.TotalTokens == 0 {
		return "", 0, fmt.Errorf("stream ended without finish or usage")
	}
	return text.String(), chunks, nil
}
