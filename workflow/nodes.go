package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/weftlabs/weft/llm"
)

// MaxHTTPBody is the most of an http node's response body that is read.
const MaxHTTPBody = 1 << 20

// MaxItems is the most items an iteration runs over.
const MaxItems = 10_000

// nodeRun is one attempt of running a node.
type nodeRun struct {
	g     *graph
	pn    *pnode
	up    func(Event)
	usage llm.Usage
	// pending is the question the node asked and waits for (see Pause).
	mu      sync.Mutex
	pending *Interrupt
}

func (x *nodeRun) delta(text string) {
	if text == "" {
		return
	}
	ev := x.g.event(NodeDelta, x.pn)
	ev.Delta = text
	x.up(ev)
}

// safeRun runs the node's kind, turning a panic into an error.
func (x *nodeRun) safeRun(ctx context.Context) (in, out map[string]any, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v", v)
		}
	}()
	return x.run(ctx)
}

func (x *nodeRun) run(ctx context.Context) (in, out map[string]any, err error) {
	pn, sc, svc := x.pn, x.g.sc, &x.g.r.e.svc
	n := pn.n
	switch n.Kind {
	case KindStart:
		return nil, x.g.r.inputs, nil
	case KindTemplate:
		text, err := pn.prompt.render(sc)
		if err != nil {
			return nil, nil, fmt.Errorf("template: %w", err)
		}
		return nil, map[string]any{"text": text}, nil
	case KindEnd:
		out, err := pn.args.resolveMap(sc)
		if err != nil {
			return nil, nil, fmt.Errorf("outputs: %w", err)
		}
		return nil, out, nil
	case KindCondition:
		lim := x.g.r.e.limits
		cctx, cancel := context.WithTimeout(ctx, lim.ConditionTime)
		defer cancel()
		for i := range pn.cases {
			ok, err := pn.cases[i].eval(cctx, sc, lim.ConditionBytes)
			if err != nil {
				if cctx.Err() != nil && ctx.Err() == nil {
					err = fmt.Errorf("case %s: evaluation %w of %s", pn.cases[i].id, ErrLimit, lim.ConditionTime)
				}
				return nil, nil, err
			}
			if ok {
				return nil, map[string]any{"branch": pn.cases[i].id}, nil
			}
		}
		return nil, map[string]any{"branch": "else"}, nil
	case KindLLM:
		return x.llm(ctx)
	case KindAgent:
		q, err := pn.prompt.render(sc)
		if err != nil {
			return nil, nil, fmt.Errorf("query: %w", err)
		}
		in = map[string]any{"agent": n.Agent, "query": q}
		if svc.Agent == nil {
			return in, nil, errors.New("no agent service")
		}
		res, err := svc.Agent(ctx, AgentRequest{Agent: n.Agent, Query: q, RunID: x.g.r.runID, Key: x.g.key(pn), OnDelta: x.delta})
		x.usage = res.Usage
		if err != nil {
			return in, nil, err
		}
		return in, map[string]any{"answer": res.Answer}, nil
	case KindKnowledge:
		q, err := pn.prompt.render(sc)
		if err != nil {
			return nil, nil, fmt.Errorf("query: %w", err)
		}
		in = map[string]any{"knowledge_bases": n.KnowledgeBases, "query": q}
		if svc.Knowledge == nil {
			return in, nil, errors.New("no knowledge service")
		}
		frags, err := svc.Knowledge(ctx, KnowledgeRequest{KnowledgeBases: n.KnowledgeBases, Query: q, TopK: n.TopK})
		if err != nil {
			return in, nil, err
		}
		list := make([]any, len(frags))
		texts := make([]string, len(frags))
		for i, f := range frags {
			list[i] = map[string]any{"text": f.Text, "source": f.Source, "score": f.Score}
			texts[i] = f.Text
		}
		return in, map[string]any{"fragments": list, "text": strings.Join(texts, "\n\n")}, nil
	case KindTool:
		args, err := pn.args.resolve(sc)
		if err == nil && valueSize(args, MaxValueSize) < 0 {
			err = fmt.Errorf("over %d bytes", MaxValueSize)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("args: %w", err)
		}
		in = map[string]any{"tool": n.Tool, "args": args}
		if svc.Tool == nil {
			return in, nil, errors.New("no tool service")
		}
		raw, err := json.Marshal(args)
		if err != nil {
			return in, nil, fmt.Errorf("tool %s arguments: %w", n.Tool, err)
		}
		text, err := svc.Tool(ctx, n.Tool, raw)
		if err != nil {
			return in, nil, fmt.Errorf("tool %s: %w", n.Tool, err)
		}
		out, err = withFields(map[string]any{"result": text}, n.OutputSchema, text)
		return in, out, err
	case KindHTTP:
		return x.http(ctx)
	case KindIteration:
		return x.iterate(ctx)
	case KindHuman:
		return x.human(ctx)
	}
	if pn.custom != nil {
		var args map[string]any
		if pn.args.kind != valLit || len(n.Args) > 0 {
			var err error
			if args, err = pn.args.resolveMap(sc); err == nil && valueSize(args, MaxValueSize) < 0 {
				err = fmt.Errorf("over %d bytes", MaxValueSize)
			}
			if err != nil {
				return nil, nil, fmt.Errorf("args: %w", err)
			}
		}
		out, err := pn.custom.run(context.WithValue(ctx, nodeKey{}, x), args)
		return args, out, err
	}
	return nil, nil, fmt.Errorf("unknown kind %q", n.Kind)
}

// withFields parses text as a JSON object of type s and adds its fields
// to out (when s is set).
func withFields(out map[string]any, s *Schema, text string) (map[string]any, error) {
	if s == nil {
		return out, nil
	}
	var v any
	if err := json.Unmarshal([]byte(stripFence(text)), &v); err != nil {
		return out, fmt.Errorf("output is not JSON of the output schema: %w", err)
	}
	v, err := s.conform("output", v)
	if err != nil {
		return out, err
	}
	m, _ := v.(map[string]any)
	for k, f := range m {
		if _, own := out[k]; !own {
			out[k] = f
		}
	}
	for k := range s.Properties {
		if _, ok := out[k]; !ok {
			out[k] = nil
		}
	}
	return out, nil
}

// stripFence removes a Markdown code fence around JSON, which models add
// when asked for JSON without a schema-enforcing mode.
func stripFence(s string) string {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "```") {
		return s
	}
	t = strings.TrimPrefix(t, "```")
	if nl := strings.IndexByte(t, '\n'); nl >= 0 {
		t = t[nl+1:]
	}
	return strings.TrimSuffix(strings.TrimSpace(t), "```")
}

func (x *nodeRun) llm(ctx context.Context) (in, out map[string]any, err error) {
	pn, n := x.pn, x.pn.n
	var sys string
	if pn.system != nil {
		if sys, err = pn.system.render(x.g.sc); err != nil {
			return nil, nil, fmt.Errorf("system: %w", err)
		}
	}
	prompt, err := pn.prompt.render(x.g.sc)
	if err != nil {
		return nil, nil, fmt.Errorf("prompt: %w", err)
	}
	in = map[string]any{"model": n.Model, "prompt": prompt}
	if sys != "" {
		in["system"] = sys
	}
	svc := x.g.r.e.svc
	if svc.Model == nil {
		return in, nil, errors.New("no model service")
	}
	m, err := svc.Model(ctx, n.Model)
	if err != nil {
		return in, nil, fmt.Errorf("model %s: %w", n.Model, err)
	}
	req := &llm.Request{}
	if sys != "" {
		req.Messages = append(req.Messages, llm.SystemMessage(sys))
	}
	req.Messages = append(req.Messages, llm.UserMessage(prompt))
	if n.OutputSchema != nil {
		schema, err := json.Marshal(n.OutputSchema.jsonSchema())
		if err != nil {
			return in, nil, err
		}
		req.ResponseFormat = &llm.ResponseFormat{Type: llm.FormatJSONSchema, Name: "output", Schema: schema, Strict: true}
	}
	var acc llm.Accumulator
	for c, err := range m.Stream(ctx, req) {
		if err != nil {
			return in, nil, fmt.Errorf("model %s: %w", n.Model, err)
		}
		acc.Add(c)
		if c.Type == llm.ChunkText {
			x.delta(c.Text)
		}
	}
	resp := acc.Response()
	x.usage = resp.Usage
	text := resp.Text()
	out, err = withFields(map[string]any{"text": text}, n.OutputSchema, text)
	return in, out, err
}

func (x *nodeRun) http(ctx context.Context) (in, out map[string]any, err error) {
	pn, n := x.pn, x.pn.n
	method := strings.ToUpper(n.Method)
	if method == "" {
		method = http.MethodGet
	}
	url, err := pn.prompt.render(x.g.sc)
	if err != nil {
		return nil, nil, fmt.Errorf("url: %w", err)
	}
	body, err := pn.system.render(x.g.sc)
	if err != nil {
		return nil, nil, fmt.Errorf("body: %w", err)
	}
	headers := make(map[string]any, len(pn.headers))
	for k, t := range pn.headers {
		if headers[k], err = t.render(x.g.sc); err != nil {
			return nil, nil, fmt.Errorf("headers.%s: %w", k, err)
		}
	}
	in = map[string]any{"method": method, "url": url, "headers": headers, "body": body}
	client := x.g.r.e.svc.HTTP
	if client == nil {
		return in, nil, errors.New("no HTTP client")
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return in, nil, err
	}
	for k, v := range headers {
		req.Header.Set(k, v.(string))
	}
	resp, err := client.Do(req)
	if err != nil {
		return in, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxHTTPBody+1))
	if err != nil {
		return in, nil, fmt.Errorf("read response: %w", err)
	}
	if len(b) > MaxHTTPBody {
		return in, nil, fmt.Errorf("response body over %d bytes", MaxHTTPBody)
	}
	hs := make(map[string]any, len(resp.Header))
	for k := range resp.Header {
		hs[strings.ToLower(k)] = resp.Header.Get(k)
	}
	out = map[string]any{"status": int64(resp.StatusCode), "headers": hs, "body": string(b)}
	if resp.StatusCode >= 400 {
		return in, out, fmt.Errorf("%s %s: status %d", method, url, resp.StatusCode)
	}
	out, err = withFields(out, n.OutputSchema, string(b))
	return in, out, err
}

// iterate runs the iteration's sub-graph once per item, at most
// Concurrency at a time, and collects each item's output in order. The
// first item that fails cancels the others and fails the node.
func (x *nodeRun) iterate(ctx context.Context) (in, out map[string]any, err error) {
	pn, g := x.pn, x.g
	v, err := pn.items.resolve(g.sc)
	if err != nil {
		return nil, nil, fmt.Errorf("items: %w", err)
	}
	items, ok := v.([]any)
	if !ok && v != nil {
		return nil, nil, fmt.Errorf("items: want a list, got %s", typeName(v))
	}
	if len(items) > MaxItems {
		return nil, nil, fmt.Errorf("items: %d items is %w of %d", len(items), ErrLimit, MaxItems)
	}
	if runs := int64(len(items)) * int64(len(pn.sub.nodes)); !g.r.reserve(runs) {
		return nil, nil, fmt.Errorf("items: %d × %d node runs would take the run %w of %d node runs", len(items), len(pn.sub.nodes), ErrLimit, g.r.e.limits.NodeRuns)
	}
	in = map[string]any{"items": items}
	results := make([]any, len(items))
	if len(items) == 0 {
		return in, map[string]any{"results": results}, nil
	}
	workers := min(max(1, pn.n.Concurrency), len(items))
	if p := g.r.e.parallel; p > 0 {
		// No more items at once than nodes can run: more would be
		// goroutines waiting for a slot.
		workers = min(workers, p)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	key := g.key(pn)
	type itemMsg struct {
		ev   Event
		done bool
	}
	ch := make(chan itemMsg, 16)
	var next atomic.Int64
	// size counts the bytes of the results as they are collected: the
	// first item that takes them over MaxValueSize fails the iteration,
	// before the others run.
	var size atomic.Int64
	var mu sync.Mutex
	var first error
	var usage llm.Usage
	var waits []Interrupt // of the items that wait for a person
	for range workers {
		go func() {
			defer func() { ch <- itemMsg{done: true} }()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(items) || ctx.Err() != nil {
					return
				}
				sc := &scope{outs: make([]map[string]any, len(pn.sub.nodes)), start: -1, parent: g.sc, item: items[i], index: i}
				sub := newGraph(g.r, pn.sub, sc, itemPrefix(key, i), func(ev Event) bool {
					ch <- itemMsg{ev: ev}
					return true
				})
				err := sub.run(ctx)
				mu.Lock()
				usage = usage.Add(sub.usage)
				if err != nil && first == nil {
					first = fmt.Errorf("item %d: %w", i, err)
					cancel()
				}
				mu.Unlock()
				if err != nil {
					return
				}
				if len(sub.waits) > 0 {
					mu.Lock()
					waits = append(waits, sub.waits...)
					mu.Unlock()
					continue
				}
				results[i], err = pn.output.resolve(sc)
				if err != nil {
					err = fmt.Errorf("item %d: output: %w", i, err)
				} else if n := MaxValueSize - valueSize(results[i], MaxValueSize); size.Add(int64(n)) > MaxValueSize {
					results[i], err = nil, fmt.Errorf("item %d: results %w of %d bytes", i, ErrLimit, MaxValueSize)
				}
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
						cancel()
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	for done := 0; done < workers; {
		m := <-ch
		if m.done {
			done++
			continue
		}
		x.up(m.ev)
	}
	x.usage = usage
	if first != nil {
		return in, nil, first
	}
	if len(waits) > 0 {
		return in, nil, &waitError{all: waits}
	}
	return in, map[string]any{"results": results}, nil
}
