package llm

import (
	"errors"
	"reflect"
	"testing"
)

func TestAccumulator(t *testing.T) {
	t.Parallel()
	u1 := Usage{PromptTokens: 1, CompletionTokens: 1, TotalTokens: 2}
	u2 := Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}
	tests := []struct {
		name   string
		chunks []Chunk
		want   Response
	}{
		{
			name:   "text and reasoning append",
			chunks: []Chunk{ReasoningChunk("think "), ReasoningChunk("hard"), TextChunk("Hel"), TextChunk("lo"), FinishChunk(FinishStop)},
			want:   Response{Message: Message{Role: RoleAssistant, Reasoning: "think hard", Parts: []Part{TextPart("Hello")}}, FinishReason: FinishStop},
		},
		{
			name: "tool calls by index, first id and name win, arguments concatenate",
			chunks: []Chunk{
				TextChunk("I'll call two tools."),
				ToolCallStartChunk(0, "call_a", "add"),
				ToolCallDeltaChunk(0, `{"a":`),
				ToolCallStartChunk(1, "call_b", "mul"),
				ToolCallDeltaChunk(0, `2}`),
				ToolCallStartChunk(1, "", ""),         // a continuation must not erase
				ToolCallStartChunk(1, "other", "bad"), // nor overwrite
				ToolCallDeltaChunk(1, `{}`),
				FinishChunk(FinishToolCalls),
			},
			want: Response{Message: Message{Role: RoleAssistant, Parts: []Part{TextPart("I'll call two tools.")}, ToolCalls: []ToolCall{
				{ID: "call_a", Name: "add", Arguments: `{"a":2}`},
				{ID: "call_b", Name: "mul", Arguments: `{}`},
			}}, FinishReason: FinishToolCalls},
		},
		{
			name: "first index 1, out of order, arguments before start",
			chunks: []Chunk{
				ToolCallDeltaChunk(3, `{"x"`),
				ToolCallStartChunk(3, "c3", "later"),
				ToolCallStartChunk(1, "c1", "first"),
				ToolCallDeltaChunk(3, `:1}`),
			},
			want: Response{Message: Message{Role: RoleAssistant, ToolCalls: []ToolCall{
				{ID: "c1", Name: "first"},
				{ID: "c3", Name: "later", Arguments: `{"x":1}`},
			}}},
		},
		{
			name:   "last finish and last usage win; empty finish ignored",
			chunks: []Chunk{UsageChunk(u1), FinishChunk(FinishLength), FinishChunk(""), UsageChunk(u2), FinishChunk(FinishStop), FinishChunk("")},
			want:   Response{Message: Message{Role: RoleAssistant}, Usage: u2, FinishReason: FinishStop},
		},
		{
			name: "first meta wins",
			chunks: []Chunk{
				{Type: ChunkMeta, ResponseID: "r1"},
				{Type: ChunkMeta, ResponseID: "r2", Model: "m2"},
			},
			want: Response{ID: "r1", Model: "m2", Message: Message{Role: RoleAssistant}},
		},
		{
			name:   "unknown chunk types are counted and ignored",
			chunks: []Chunk{{Type: 0}, {Type: 99, Text: "x"}},
			want:   Response{Message: Message{Role: RoleAssistant}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var a Accumulator
			for _, c := range tt.chunks {
				a.Add(c)
			}
			got := a.Response()
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("Response() =\n%+v\nwant\n%+v", *got, tt.want)
			}
			if a.Chunks() != len(tt.chunks) {
				t.Errorf("Chunks() = %d", a.Chunks())
			}
			if a.Text() != tt.want.Text() || a.FinishReason() != tt.want.FinishReason {
				t.Errorf("Text() %q FinishReason() %q", a.Text(), a.FinishReason())
			}
		})
	}
}

func TestAccumulatorResponseIsASnapshot(t *testing.T) {
	t.Parallel()
	var a Accumulator
	a.Add(ToolCallStartChunk(0, "c", "f"))
	a.Add(ToolCallDeltaChunk(0, "{"))
	first := a.Response()
	a.Add(ToolCallDeltaChunk(0, "}"))
	if first.Message.ToolCalls[0].Arguments != "{" || a.Response().Message.ToolCalls[0].Arguments != "{}" {
		t.Errorf("responses share state: %q then %q", first.Message.ToolCalls[0].Arguments, a.Response().Message.ToolCalls[0].Arguments)
	}
}

func TestCollect(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	stream := func(yield func(Chunk, error) bool) {
		if !yield(TextChunk("part"), nil) {
			return
		}
		if yield(Chunk{}, boom) {
			t.Error("Collect kept reading after an error")
		}
	}
	resp, err := Collect(stream)
	if !errors.Is(err, boom) || resp.Text() != "part" {
		t.Errorf("Collect = %q, %v; want the partial text and the error", resp.Text(), err)
	}
}
