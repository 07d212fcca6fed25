package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"mime"
	"net/http"

	"github.com/weftlabs/weft/internal/sse"
	"github.com/weftlabs/weft/llm"
)

// Stream sends req to /chat/completions with "stream": true and yields the
// answer as it arrives. The stream ends with one ChunkFinish; usage, when
// the server reports it, comes before it. Breaking out of the loop closes
// the response body, and cancelling ctx aborts the read.
func (c *Client) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		yield = c.api.RedactYield(yield)
		body, err := c.chatBody(req, true)
		if err != nil {
			yield(llm.Chunk{}, err)
			return
		}
		resp, err := c.post(ctx, c.chatURL, body, true)
		if err != nil {
			yield(llm.Chunk{}, err)
			return
		}
		defer resp.Body.Close()
		p, chunks, err := c.newStreamParser(ctx, resp)
		for {
			for _, ch := range chunks {
				if !yield(ch, nil) {
					return
				}
			}
			if err != nil {
				if err != io.EOF {
					yield(llm.Chunk{}, err)
				}
				return
			}
			chunks, err = p.next()
		}
	}
}

// streamParser turns a Chat Completions stream into chunks, following the
// accumulator rules every compatible server has been seen to need: comment
// lines are skipped; "[DONE]" ends the stream; an error payload ends it as
// an error; per choice, content, reasoning_content or reasoning, and tool
// call fragments keyed by index (missing means 0) where the first non-empty
// id and name win and arguments concatenate; the last finish reason and the
// last usage win. The finish reason is held back until the end, so that
// duplicate finish chunks and a usage chunk after the finish give one
// ChunkFinish, last.
type streamParser struct {
	c      *Client
	ctx    context.Context
	status int
	events *sse.Reader
	w      chatResponse // reused for every chunk
	dec    chunkDecoder
	out    []llm.Chunk // reused for every event
	calls  []callState

	metaSent bool
	finish   string
	finished bool // a finish reason arrived
	refused  bool // a refusal fragment arrived
	content  bool // a content fragment arrived

	// Counters for tests and diagnostics.
	jsonEvents int
	sawDone    bool
}

type callState struct {
	index    int
	id, name string
}

// newStreamParser starts parsing resp. A server that answered a streaming
// request with one JSON document (it ignored "stream", or it reports an
// error) is handled here: the first chunks, or the error, are returned.
func (c *Client) newStreamParser(ctx context.Context, resp *http.Response) (*streamParser, []llm.Chunk, error) {
	p := &streamParser{c: c, ctx: ctx, status: resp.StatusCode}
	body := io.Reader(resp.Body)
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" {
		b, err := c.readBody(ctx, resp)
		if err != nil {
			return p, nil, err
		}
		var w chatResponse
		if json.Unmarshal(b, &w) == nil {
			if err := c.payloadError(&w, llm.ErrUnavailable, resp.StatusCode); err != nil {
				return p, nil, err
			}
			if ch := firstChoice(w.Choices); w.Object == "chat.completion" || (ch != nil && !isEmptyMessage(&ch.Message)) {
				r, err := c.toResponse(&w, resp.StatusCode)
				if err != nil {
					return p, nil, err
				}
				return p, responseChunks(r), io.EOF
			}
		}
		// JSON lines sent as application/json: parse them as a stream.
		body = bytes.NewReader(b)
	}
	p.events = newEvents(body, c.maxResponse)
	chunks, err := p.next()
	return p, chunks, err
}

// chunkDecoder decodes one JSON value per call with a json.Decoder kept for
// the whole stream. json.Unmarshal builds a fresh decoder state and
// scanner for every call and regrows their stacks, several allocations per
// chunk; a long-lived json.Decoder reuses them.
type chunkDecoder struct {
	src eventSource
	dec *json.Decoder
}

type eventSource struct{ data []byte }

func (s *eventSource) Read(p []byte) (int, error) {
	if len(s.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.data)
	s.data = s.data[n:]
	return n, nil
}

// decode decodes data, which must hold exactly one JSON value, into v. Any
// error leaves the decoder unusable, which ends the stream anyway.
func (d *chunkDecoder) decode(data []byte, v any) error {
	if d.dec == nil {
		d.dec = json.NewDecoder(&d.src)
	}
	d.src.data = data
	start := d.dec.InputOffset()
	if err := d.dec.Decode(v); err != nil {
		return err
	}
	if d.dec.InputOffset()-start != int64(len(data)) {
		return errors.New("data after the JSON value")
	}
	return nil
}

func newEvents(r io.Reader, maxLine int) *sse.Reader {
	return sse.NewReader(r, sse.WithMaxLineSize(maxLine))
}

func isEmptyMessage(m *respMessage) bool {
	return m.Content == "" && m.Refusal == "" && m.ReasoningContent == "" && m.Reasoning == "" &&
		len(m.ToolCalls) == 0 && m.FunctionCall == nil
}

// responseChunks replays a whole response as stream chunks.
func responseChunks(r *llm.Response) []llm.Chunk {
	var out []llm.Chunk
	if r.ID != "" || r.Model != "" {
		out = append(out, llm.Chunk{Type: llm.ChunkMeta, ResponseID: r.ID, Model: r.Model})
	}
	if r.Message.Reasoning != "" {
		out = append(out, llm.ReasoningChunk(r.Message.Reasoning))
	}
	if t := r.Message.Text(); t != "" {
		out = append(out, llm.TextChunk(t))
	}
	for i, tc := range r.Message.ToolCalls {
		out = append(out, llm.ToolCallStartChunk(i, tc.ID, tc.Name))
		if tc.Arguments != "" {
			out = append(out, llm.ToolCallDeltaChunk(i, tc.Arguments))
		}
	}
	if !r.Usage.IsZero() {
		out = append(out, llm.UsageChunk(r.Usage))
	}
	return append(out, llm.FinishChunk(r.FinishReason))
}

// next returns the chunks of the next event that has any. At the end of a
// complete stream it returns the final chunks with io.EOF; a failure is an
// *llm.Error. The returned slice is valid until the next call.
func (p *streamParser) next() ([]llm.Chunk, error) {
	p.out = p.out[:0]
	for len(p.out) == 0 {
		ev, err := p.events.NextRaw()
		if err == io.EOF {
			return p.end(false)
		}
		if err != nil {
			return nil, p.readError(err)
		}
		data := bytes.TrimSpace(ev.Data)
		if len(data) == 0 {
			continue
		}
		if bytes.Equal(data, []byte("[DONE]")) {
			p.sawDone = true
			return p.end(true)
		}
		p.w.reset()
		if err := p.dec.decode(data, &p.w); err != nil {
			return nil, p.broken(fmt.Sprintf("malformed chunk: %s", snippet(data)), err)
		}
		p.jsonEvents++
		if err := p.c.payloadError(&p.w, llm.ErrStreamBroken, p.status); err != nil {
			return nil, err
		}
		p.chunk()
	}
	return p.out, nil
}

// chunk appends the chunks of the decoded event p.w.
func (p *streamParser) chunk() {
	w := &p.w
	if !p.metaSent && (w.ID != "" || w.Model != "") {
		p.metaSent = true
		p.out = append(p.out, llm.Chunk{Type: llm.ChunkMeta, ResponseID: string(w.ID), Model: string(w.Model)})
	}
	for i := range w.Choices {
		ch := &w.Choices[i]
		if ch.Index != 0 {
			continue // only the first choice is read
		}
		d := &ch.Delta
		if r := firstNonEmpty(d.ReasoningContent, d.Reasoning); r != "" {
			p.out = append(p.out, llm.ReasoningChunk(r))
		}
		if d.Content != "" {
			p.content = true
			p.out = append(p.out, llm.TextChunk(string(d.Content)))
		}
		if d.Refusal != "" {
			p.refused = true
			p.out = append(p.out, llm.TextChunk(d.Refusal))
		}
		for j := range d.ToolCalls {
			tc := &d.ToolCalls[j]
			p.toolFragment(tc.Index, tc.ID, tc.Function.Name, tc.Function.Arguments)
		}
		if fc := d.FunctionCall; fc != nil {
			p.toolFragment(0, "", fc.Name, fc.Arguments)
		}
		if ch.FinishReason != "" {
			p.finish = ch.FinishReason
			p.finished = true
		}
	}
	if u := w.usage(); u != nil {
		if usage := toUsage(u); !usage.IsZero() {
			p.out = append(p.out, llm.UsageChunk(usage))
		}
	}
}

// toolFragment folds one tool call fragment. A ChunkToolCallStart is sent
// when an index is first seen, and again if a later fragment supplies the
// id or name the first one lacked; the first non-empty values win.
func (p *streamParser) toolFragment(index int, id, name, args string) {
	var st *callState
	for i := range p.calls {
		if p.calls[i].index == index {
			st = &p.calls[i]
			break
		}
	}
	switch {
	case st == nil:
		p.calls = append(p.calls, callState{index: index, id: id, name: name})
		p.out = append(p.out, llm.ToolCallStartChunk(index, id, name))
	case (st.id == "" && id != "") || (st.name == "" && name != ""):
		if st.id == "" {
			st.id = id
		}
		if st.name == "" {
			st.name = name
		}
		p.out = append(p.out, llm.ToolCallStartChunk(index, st.id, st.name))
	}
	if args != "" {
		p.out = append(p.out, llm.ToolCallDeltaChunk(index, args))
	}
}

// end finishes the stream at "[DONE]" (done) or at the end of the body. A
// body that ends without any finish reason was cut off: that is a broken
// stream, worth a retry. "[DONE]" without one is the server's word that the
// answer is complete, and the reason is inferred.
func (p *streamParser) end(done bool) ([]llm.Chunk, error) {
	if !p.finished && !done {
		return nil, p.broken("the stream ended without a finish reason", nil)
	}
	for i := range p.calls {
		if p.calls[i].id == "" {
			p.calls[i].id = orCallID("", p.calls[i].index)
			p.out = append(p.out, llm.ToolCallStartChunk(p.calls[i].index, p.calls[i].id, p.calls[i].name))
		}
	}
	reason := normalizeFinish(p.finish, len(p.calls) > 0, p.refused && !p.content)
	p.out = append(p.out, llm.FinishChunk(reason))
	return p.out, io.EOF
}

func (p *streamParser) readError(err error) error {
	if errors.Is(err, sse.ErrLineTooLong) {
		return p.broken(fmt.Sprintf("a stream line exceeds %d bytes (see openai.WithMaxResponseSize)", p.c.maxResponse), err)
	}
	if p.ctx.Err() != nil {
		return p.c.transportError(p.ctx, err)
	}
	return p.broken("reading the stream", err)
}

func (p *streamParser) broken(msg string, err error) error {
	return &llm.Error{Kind: llm.ErrStreamBroken, Provider: p.c.provider, StatusCode: p.status, Message: msg, Err: err}
}
