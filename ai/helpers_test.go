package ai_test

import (
	"context"
	"encoding/json"
	"regexp"
	"sync"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/provider/scripted"
)

// respond returns a scripted rule that answers with f(req).
func respond(f func(req *llm.Request) *llm.Response) scripted.Rule {
	return scripted.Rule{Respond: func(req *llm.Request) (*llm.Response, error) { return f(req), nil }}
}

// steps answers the i-th request with the i-th response.
func steps(resps ...*llm.Response) scripted.Rule {
	var mu sync.Mutex
	i := 0
	return respond(func(*llm.Request) *llm.Response {
		mu.Lock()
		defer mu.Unlock()
		r := resps[min(i, len(resps)-1)]
		i++
		c := *r
		return &c
	})
}

func text(s string) *llm.Response {
	return &llm.Response{Message: llm.AssistantMessage(s), Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}}
}

func calls(cs ...llm.ToolCall) *llm.Response {
	return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: cs}, FinishReason: llm.FinishToolCalls, Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}}
}

func call(id, name string, args any) llm.ToolCall {
	s, ok := args.(string)
	if !ok {
		b, _ := json.Marshal(args)
		s = string(b)
	}
	return llm.ToolCall{ID: id, Name: name, Arguments: s}
}

// texts returns the role:text of each message, for comparisons.
func texts(msgs []llm.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Role) + ":" + m.Text()
		if len(m.ToolCalls) > 0 {
			out[i] += "[calls"
			for _, c := range m.ToolCalls {
				out[i] += " " + c.Name
			}
			out[i] += "]"
		}
	}
	return out
}

// moderator flags inputs containing a word.
type moderator struct{ word string }

func (m moderator) Moderate(ctx context.Context, inputs []string) ([]llm.ModerationResult, error) {
	out := make([]llm.ModerationResult, len(inputs))
	for i, in := range inputs {
		if contains(in, m.word) {
			out[i] = llm.ModerationResult{Flagged: true, Categories: map[string]bool{"violence": true}}
		}
	}
	return out, nil
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func memoryWindow(n int) *memory.Chats { return memory.MessageWindow(n) }

func regexpMust(s string) *regexp.Regexp { return regexp.MustCompile(s) }
