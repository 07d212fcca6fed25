package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strings"

	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"
)

// chatModel is an ADK model.LLM over an OpenAI chat-completions endpoint.
// ADK's own OpenAI model (model/openaimodel) speaks the Responses API,
// which the benchmark's fake upstream (llmtest) does not serve; this
// adapter does for ADK what weft's and trpc-agent-go's OpenAI drivers do:
// one JSON request, the answer decoded (streamed: SSE lines decoded one by
// one, each text delta passed on as a partial response, then the whole
// answer once).
type chatModel struct {
	name, url string
	client    *http.Client
}

func (m *chatModel) Name() string { return m.name }

type chatMsg struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

func (m *chatModel) GenerateContent(ctx context.Context, req *model.LLMRequest, stream bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		var msgs []chatMsg
		if c := req.Config; c != nil && c.SystemInstruction != nil {
			msgs = append(msgs, chatMsg{"system", contentText(c.SystemInstruction)})
		}
		for _, c := range req.Contents {
			role := "user"
			if c.Role == genai.RoleModel {
				role = "assistant"
			}
			msgs = append(msgs, chatMsg{role, contentText(c)})
		}
		body, _ := json.Marshal(map[string]any{"model": m.name, "messages": msgs, "stream": stream})
		hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, m.url+"/chat/completions", bytes.NewReader(body))
		if err != nil {
			yield(nil, err)
			return
		}
		hreq.Header.Set("Content-Type", "application/json")
		hreq.Header.Set("Authorization", "Bearer bench")
		resp, err := m.client.Do(hreq)
		if err != nil {
			yield(nil, err)
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
			yield(nil, fmt.Errorf("upstream: %s: %s", resp.Status, b))
			return
		}
		if !stream {
			var out struct {
				Choices []struct {
					Message chatMsg `json:"message"`
				} `json:"choices"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
				yield(nil, err)
				return
			}
			if len(out.Choices) == 0 {
				yield(nil, errors.New("upstream: no choices"))
				return
			}
			yield(&model.LLMResponse{Content: genai.NewContentFromText(out.Choices[0].Message.Content, genai.RoleModel), TurnComplete: true}, nil)
			return
		}
		var all strings.Builder
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			if !bytes.HasPrefix(line, []byte("data: ")) {
				continue
			}
			data := line[len("data: "):]
			if bytes.Equal(data, []byte("[DONE]")) {
				break
			}
			var chunk struct {
				Choices []struct {
					Delta struct {
						Content string `json:"content"`
					} `json:"delta"`
				} `json:"choices"`
			}
			if err := json.Unmarshal(data, &chunk); err != nil {
				yield(nil, err)
				return
			}
			if len(chunk.Choices) == 0 || chunk.Choices[0].Delta.Content == "" {
				continue
			}
			t := chunk.Choices[0].Delta.Content
			all.WriteString(t)
			if !yield(&model.LLMResponse{Content: genai.NewContentFromText(t, genai.RoleModel), Partial: true}, nil) {
				return
			}
		}
		if err := sc.Err(); err != nil {
			yield(nil, err)
			return
		}
		yield(&model.LLMResponse{Content: genai.NewContentFromText(all.String(), genai.RoleModel), TurnComplete: true}, nil)
	}
}

func contentText(c *genai.Content) string {
	var b strings.Builder
	for _, p := range c.Parts {
		b.WriteString(p.Text)
	}
	return b.String()
}
