package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/tokens"
)

const systemPrompt = "You answer questions."

// chatMsg is an OpenAI chat message.
type chatMsg struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// historyConvs is how many conversations the runs with history spread
// their turns over.
const historyConvs = 256

func shortQuery(i int) string {
	return "Turn " + strconv.Itoa(i) + ": which of our plans includes priority support and what does it cost per month?"
}

func longQuery(i int) string {
	var b strings.Builder
	b.WriteString("q")
	b.WriteString(strconv.Itoa(i))
	for w := 1; w < 50; w++ {
		b.WriteString(" word")
	}
	return b.String()
}

func newClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 4096, IdleConnTimeout: 90 * time.Second, DisableCompression: true,
	}}
}

// target is one server under test and how a client talks to it.
type target struct {
	name string
	proc *child
	c    *http.Client
	// weft: the agent answering turns
	agent string
}

// convs are the conversations of one run.
type convs struct {
	h   int
	ids []string // weft, ADK: session ids (none for weft's new conversations)
}

func newTarget(ctx context.Context, name, upstream, redisURL string, c *http.Client) (*target, error) {
	p, err := start(name, upstream, redisURL)
	if err != nil {
		return nil, err
	}
	return &target{name: name, proc: p, c: c}, nil
}

// windowTokens is a context window holding the query and exactly turns
// earlier turns of query-length messages (as cmd/weft-bench sizes it).
func windowTokens(query string, turns int) (window, reserve int) {
	const minReserve, minWindow = 64, 256
	c := tokens.ForModel(benchModel)
	q := tokens.MessageTokens(c, llm.UserMessage(query))
	a := tokens.MessageTokens(c, llm.AssistantMessage(query))
	need := tokens.ReplyOverhead + tokens.MessageTokens(c, llm.SystemMessage(systemPrompt)) + q + turns*(q+a) + q/2
	reserve = max(minReserve, minWindow-need)
	return need + reserve, reserve
}

// prepare makes the run's conversations: n new ones (h == 0), or
// historyConvs holding h turns each, made through the target's API.
func (t *target) prepare(ctx context.Context, h, n int) (*convs, error) {
	cv := &convs{h: h}
	switch t.name {
	case "weft-sqlite", "weft-redis":
		fields := map[string]any{"name": fmt.Sprintf("bench%d", h), "model": benchModel, "system_prompt": systemPrompt}
		if h > 0 {
			fields["context_window_tokens"], fields["reserve_tokens"] = windowTokens(shortQuery(100000), h)
		}
		var out struct {
			ID string `json:"id"`
		}
		if err := t.post(ctx, "/v1/agents", fields, &out); err != nil {
			return nil, err
		}
		t.agent = out.ID
	case "adk":
		count := n
		if h > 0 {
			count = historyConvs
		}
		cv.ids = make([]string, count)
		err := parallel(count, func(i int) error {
			var out struct {
				ID string `json:"id"`
			}
			err := t.post(ctx, "/apps/"+appName+"/users/u/sessions", map[string]any{}, &out)
			cv.ids[i] = out.ID
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	if h == 0 || t.name == "trpc" {
		return cv, nil
	}
	if t.name != "adk" {
		cv.ids = make([]string, historyConvs)
	}
	err := parallel(historyConvs, func(i int) error {
		for k := 0; k < h; k++ {
			id, err := t.send(ctx, cv, i, shortQuery(i*h+k), cv.idAt(i))
			if err != nil {
				return err
			}
			if cv.ids[i] == "" {
				cv.ids[i] = id
			}
		}
		return nil
	})
	return cv, err
}

func (cv *convs) idAt(i int) string {
	if len(cv.ids) == 0 {
		return ""
	}
	return cv.ids[i%len(cv.ids)]
}

// upstreamMessages is what a turn i sends the model.
func (cv *convs) upstreamMessages(i int) []chatMsg {
	q := shortQuery(i)
	msgs := []chatMsg{{"system", systemPrompt}}
	for k := 0; k < cv.h; k++ {
		msgs = append(msgs, chatMsg{"user", q}, chatMsg{"assistant", q})
	}
	return append(msgs, chatMsg{"user", q})
}

// turn is the i-th non-streamed turn of a run.
func (t *target) turn(ctx context.Context, cv *convs, i int) error {
	_, err := t.send(ctx, cv, i, shortQuery(i), cv.idAt(i))
	return err
}

// send sends one non-streamed turn and returns the conversation's id.
func (t *target) send(ctx context.Context, cv *convs, i int, q, id string) (string, error) {
	switch t.name {
	case "adk":
		var events []json.RawMessage
		err := t.post(ctx, "/run", adkRun(id, q, false), &events)
		if err == nil && (len(events) == 0 || !bytes.Contains(events[len(events)-1], []byte(strconv.Quote(q)[1:len(q)]))) {
			err = errors.New("ADK: the answer does not echo the query")
		}
		return id, err
	case "trpc":
		msgs := cv.upstreamMessages(i)[1:]
		msgs[len(msgs)-1].Content = q
		var out struct {
			Choices []struct {
				Message chatMsg `json:"message"`
			} `json:"choices"`
		}
		err := t.post(ctx, "/v1/chat/completions", map[string]any{"model": "gpt-4o-mini", "messages": msgs}, &out)
		if err == nil && (len(out.Choices) == 0 || !strings.Contains(out.Choices[0].Message.Content, q)) {
			err = errors.New("trpc-agent-go: the answer does not echo the query")
		}
		return "", err
	default:
		body := map[string]any{"query": q}
		if id != "" {
			body["session_id"] = id
		}
		var out struct {
			SessionID string `json:"session_id"`
			Answer    string `json:"answer"`
		}
		err := t.post(ctx, "/v1/agents/"+t.agent+"/chat", body, &out)
		if err == nil && !strings.Contains(out.Answer, q) {
			err = errors.New("weft: the answer does not echo the query")
		}
		return out.SessionID, err
	}
}

func adkRun(session, q string, stream bool) map[string]any {
	return map[string]any{"appName": appName, "userId": "u", "sessionId": session, "streaming": stream,
		"newMessage": map[string]any{"role": "user", "parts": []map[string]any{{"text": q}}}}
}

// stream is the i-th streamed turn, on a new conversation.
func (t *target) stream(ctx context.Context, cv *convs, i int) error {
	q := longQuery(i)
	var path, done, delta string
	var body any
	switch t.name {
	case "adk":
		path, body, delta, done = "/run_sse", adkRun(cv.idAt(i), q, true), `"partial":true`, `"turnComplete":true`
	case "trpc":
		path, delta, done = "/v1/chat/completions", `"content"`, "data: [DONE]"
		body = map[string]any{"model": "gpt-4o-mini", "stream": true, "messages": []chatMsg{{"user", q}}}
	default:
		path, body, delta, done = "/v1/agents/"+t.agent+"/chat", map[string]any{"query": q, "stream": true}, "event: message.delta", "event: chat.completed"
	}
	return readStream(ctx, t.c, t.proc.url+path, body, delta, done)
}

func relayStream(ctx context.Context, c *http.Client, url, q string) error {
	body := map[string]any{"model": "gpt-4o-mini", "stream": true, "messages": []chatMsg{{"user", q}}}
	return readStream(ctx, c, url+"/relay", body, `"content"`, "data: [DONE]")
}

// readStream posts body and reads the SSE answer to its end: at least 40
// lines with delta, and one with done.
func readStream(ctx context.Context, c *http.Client, url string, body any, delta, done string) error {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(b))
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	deltas, finished := 0, false
	for {
		line, err := br.ReadSlice('\n')
		if bytes.Contains(line, []byte(delta)) {
			deltas++
		}
		if bytes.Contains(line, []byte(done)) {
			finished = true
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			break
		}
	}
	if !finished || deltas < 40 {
		return fmt.Errorf("stream ended after %d deltas, finished %v", deltas, finished)
	}
	return nil
}

// post posts body as JSON with the admin key and decodes a 2xx answer.
func (t *target) post(ctx context.Context, path string, body, out any) error {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.proc.url+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := t.c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %.300s", t.name, path, resp.Status, bytes.TrimSpace(rb))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(rb, out)
}

// directCall sends msgs straight to the upstream, not streamed.
func directCall(ctx context.Context, c *http.Client, upstream string, msgs []chatMsg) error {
	b, _ := json.Marshal(map[string]any{"model": "gpt-4o-mini", "messages": msgs})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, upstream+"/chat/completions", bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	return nil
}

// parallel runs f(0..n-1) on 16 workers and returns the first error.
func parallel(n int, f func(i int) error) error {
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	next := make(chan int)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					once.Do(func() { first = err })
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}
