package platform

import (
	"errors"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/provider/scripted"
)

var errFake = errors.New("upstream <exploded>")

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata/")

// Ids, clocks and counters that change from run to run.
var volatile = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`ses_[a-z0-9]+`), "ses_X"},
	{regexp.MustCompile(`"message_id":"[^"]+"`), `"message_id":"MSG"`},
	{regexp.MustCompile(`chatcmpl-[A-Za-z0-9_-]+`), "chatcmpl-X"},
	{regexp.MustCompile(`"latency_ms":\d+`), `"latency_ms":0`},
	{regexp.MustCompile(`"created":\d+`), `"created":0`},
	{regexp.MustCompile(`"chunk_id":"[^"]+"`), `"chunk_id":"CHUNK"`},
	{regexp.MustCompile(`"document_id":"[^"]+"`), `"document_id":"DOC"`},
	{regexp.MustCompile(`"knowledge_base_id":"[^"]+"`), `"knowledge_base_id":"KB"`},
	{regexp.MustCompile(`"agent_id":"[^"]+"`), `"agent_id":"AGENT"`},
	{regexp.MustCompile(`delegate_agent_[A-Za-z0-9_-]+`), "delegate_agent_X"},
	{regexp.MustCompile(`call_[a-z0-9]+`), "call_X"},
	{regexp.MustCompile(`"score":[0-9.e-]+`), `"score":1`},
}

// golden compares got, with its volatile parts replaced, to testdata/name.
func golden(t *testing.T, name, got string) {
	t.Helper()
	for _, v := range volatile {
		got = v.re.ReplaceAllString(got, v.repl)
	}
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s: the wire bytes changed\n got:\n%s\nwant:\n%s", name, got, want)
	}
}

// TestWireGolden pins the exact bytes of every SSE event, of the blocking
// answer and of the OpenAI-compatible answers: clients (the console, the Go
// client, SDKs) read them, so a refactoring must not change them.
func TestWireGolden(t *testing.T) {
	t.Run("stream-tools-delegation", func(t *testing.T) {
		models := map[string]*scripted.Model{}
		e := newEnv(t, nil, multiModel(models))
		b := e.createAgent(e.admin, map[string]any{"name": "expert", "model": "scripted/expert"})
		models["expert"] = scripted.New(scripted.Reply("The <answer> is \"42\"."))
		models["front"] = scripted.New(scripted.SummarizeToolResults(),
			scripted.CallTool(delegateToolName(b.ID), `{"query":"what is the answer?", "b": 1.50, "a": [1, 2]}`))
		a := e.createAgent(e.admin, map[string]any{"name": "front", "model": "scripted/front", "delegate_agent_ids": []string{b.ID}})
		resp := e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "ask the expert", "stream": true}, nil)
		golden(t, "stream-tools-delegation.sse", body(resp))
	})
	t.Run("blocking-tools", func(t *testing.T) {
		models := map[string]*scripted.Model{}
		e := newEnv(t, nil, multiModel(models))
		b := e.createAgent(e.admin, map[string]any{"name": "expert", "model": "scripted/expert"})
		models["expert"] = scripted.New(scripted.Reply("The <answer> is 42."))
		models["front"] = scripted.New(scripted.SummarizeToolResults(),
			scripted.CallTool(delegateToolName(b.ID), `{"query":"what is the answer?", "b": 1.50, "a": [1, 2]}`))
		a := e.createAgent(e.admin, map[string]any{"name": "front", "model": "scripted/front", "delegate_agent_ids": []string{b.ID}})
		resp := e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "ask the expert"}, nil)
		golden(t, "blocking-tools.json", body(resp))
	})
	t.Run("stream-retrieval", func(t *testing.T) {
		e := newEnv(t, scripted.New(scripted.QuoteContext(), scripted.Echo()))
		var kb kbView
		e.do(e.admin, "POST", "/v1/knowledge-bases", map[string]any{"name": "handbook", "chunk_size": 64}, &kb)
		var doc meta.Document
		e.do(e.admin, "POST", "/v1/knowledge-bases/"+kb.ID+"/documents", map[string]any{
			"name": "returns.md", "content": "# Returns\n\nCustomers may return any product within 30 days of delivery for a full refund."}, &doc)
		if d := e.waitDocument(kb.ID, doc.ID); d.Status != meta.DocReady {
			t.Fatalf("document = %+v", d)
		}
		a := e.createAgent(e.admin, map[string]any{"name": "support", "knowledge_base_ids": []string{kb.ID}})
		resp := e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "how many days to return a product?", "stream": true}, nil)
		golden(t, "stream-retrieval.sse", body(resp))
	})
	t.Run("stream-error", func(t *testing.T) {
		e := newEnv(t, scripted.New(scripted.Fail(errFake)))
		a := e.createAgent(e.admin, map[string]any{"name": "broken"})
		resp := e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "hello", "stream": true}, nil)
		golden(t, "stream-error.sse", body(resp))
	})
	t.Run("stream-replay", func(t *testing.T) {
		e := newEnv(t, scripted.New(scripted.Reply("once & only <once>")))
		a := e.createAgent(e.admin, map[string]any{"name": "idem"})
		e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "hello", "stream": true}, nil, "Idempotency-Key", "k1")
		resp := e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "hello", "stream": true}, nil, "Idempotency-Key", "k1")
		golden(t, "stream-replay.sse", body(resp))
	})
	t.Run("openai", func(t *testing.T) {
		e := newEnv(t, scripted.New(scripted.Reply("one two <three>")))
		e.createAgent(e.admin, map[string]any{"name": "echo"})
		var all strings.Builder
		resp := e.do(e.admin, "POST", "/v1/chat/completions", map[string]any{"model": "echo", "messages": []map[string]any{{"role": "user", "content": "hi"}}}, nil)
		all.WriteString(body(resp) + "\n")
		resp = e.do(e.admin, "POST", "/v1/chat/completions", map[string]any{"model": "echo", "stream": true, "stream_options": map[string]any{"include_usage": true},
			"messages": []map[string]any{{"role": "user", "content": "hi"}}}, nil)
		all.WriteString(body(resp))
		resp = e.do(e.admin, "POST", "/v1/chat/completions", map[string]any{"model": "nosuch", "messages": []map[string]any{{"role": "user", "content": "hi"}}}, nil)
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("unknown model: %d", resp.StatusCode)
		}
		all.WriteString(body(resp))
		golden(t, "openai.txt", all.String())
	})
}
