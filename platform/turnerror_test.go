package platform

import (
	"context"
	"iter"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
)

// sayThenFail streams said (nothing when empty), then fails as an
// overloaded upstream does: a failure no retry cures in the test.
type sayThenFail struct{ said string }

func (m *sayThenFail) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	return llm.Collect(m.Stream(ctx, req))
}

func (m *sayThenFail) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		if m.said != "" && !yield(llm.TextChunk(m.said), nil) {
			return
		}
		yield(llm.Chunk{}, &llm.Error{Kind: llm.ErrBadRequest, Message: "upstream refused the request"})
	}
}

// TestTurnPartialOnlyWithText pins the one turn error's partial flag: a
// model that fails before saying anything leaves no partial answer, and no
// edge says one was kept; one that fails mid-answer keeps its text, marked
// partial, and the edges say so — through MCP (the tool error) and A2A
// (the failed task's message and artifact).
func TestTurnPartialOnlyWithText(t *testing.T) {
	for _, c := range []struct {
		name, said string
	}{{"no text", ""}, {"mid-answer", "The answer begins "}} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, nil, func(cfg *Config) {
				cfg.OpenModel = func(string) (*llm.Model, error) {
					return llm.New(&sayThenFail{said: c.said}, llm.WithRetries(0)), nil
				}
			})
			a := e.createAgent(e.admin, map[string]any{"name": "flaky"})
			partial := c.said != ""

			// MCP: the tool error names the kept answer only when there is one.
			ss, ae := e.srv.sessionFor(context.Background(), e.tenant(), a, "", "")
			if ae != nil {
				t.Fatal(ae)
			}
			mc := e.mcpClient(e.admin)
			res, err := mc.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "flaky", Arguments: map[string]any{"query": "hi", "session_id": ss.ID}})
			if err != nil {
				t.Fatal(err)
			}
			text := res.Content[0].(*mcp.TextContent).Text
			if !res.IsError || !strings.HasPrefix(text, CodeModelError+": ") {
				t.Fatalf("MCP result %+v %q, want a model_error", res, text)
			}
			if got := strings.Contains(text, "partial answer is kept"); got != partial {
				t.Errorf("MCP error %q: says a partial answer is kept = %v, want %v", text, got, partial)
			}
			recs, err := e.sessions.Load(context.Background(), sessionKey(ss), memory.Window{})
			if err != nil {
				t.Fatal(err)
			}
			var kept []string
			for _, r := range recs {
				if r.Partial {
					kept = append(kept, r.Message.Text())
				}
			}
			if partial != (len(kept) == 1 && kept[0] == c.said) || !partial && len(kept) > 0 {
				t.Errorf("partial records %q after %q", kept, c.said)
			}
			if len(recs) == 0 || recs[0].Message.Text() != "hi" {
				t.Errorf("the user's message was not kept: %+v", recs)
			}

			// A2A: a failed task; its message says a partial answer is in the
			// artifact only when there is one.
			resp, ans := e.rpc(e.admin, "flaky", call("SendMessage", map[string]any{"message": userMessage("hello", "")}))
			task, _ := ans.Result["task"].(map[string]any)
			if resp.StatusCode != http.StatusOK || task == nil || path(task, "status", "state") != "TASK_STATE_FAILED" {
				t.Fatalf("A2A SendMessage = %d %+v", resp.StatusCode, ans)
			}
			parts, _ := path(task, "status", "message", "parts").([]any)
			msg, _ := path(parts[0], "text").(string)
			if got := strings.Contains(msg, "partial answer"); got != partial {
				t.Errorf("A2A status %q: mentions a partial answer = %v, want %v", msg, got, partial)
			}
			arts, _ := task["artifacts"].([]any)
			if (len(arts) > 0) != partial {
				t.Errorf("A2A artifacts %v after %q", arts, c.said)
			}
		})
	}
}
