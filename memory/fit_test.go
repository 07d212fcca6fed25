package memory

import (
	"slices"
	"testing"

	"github.com/weftlabs/weft/llm"
)

func rec(role llm.Role, tokens int, calls ...string) Record {
	m := llm.Message{Role: role}
	for _, c := range calls {
		m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: c, Name: "t"})
	}
	return Record{Message: m, Tokens: tokens}
}

func toolRec(id string, tokens int) Record {
	return Record{Message: llm.Message{Role: llm.RoleTool, ToolCallID: id}, Tokens: tokens}
}

func TestFit(t *testing.T) {
	sys := rec(llm.RoleSystem, 10)
	u1, a1 := rec(llm.RoleUser, 5), rec(llm.RoleAssistant, 5)
	u2, call, r1, r2, a2 := rec(llm.RoleUser, 5), rec(llm.RoleAssistant, 4, "c1", "c2"), toolRec("c1", 3), toolRec("c2", 3), rec(llm.RoleAssistant, 5)

	tests := []struct {
		name string
		recs []Record
		w    Window
		want []int // indexes into recs
	}{
		{"no bound keeps all", []Record{sys, u1, a1}, Window{}, []int{0, 1, 2}},
		{"empty", nil, Window{MaxTokens: 10}, []int{}},
		{"message bound keeps newest", []Record{u1, a1, u2, a2}, Window{MaxMessages: 2}, []int{2, 3}},
		{"system not counted in messages", []Record{sys, u1, a1, u2}, Window{MaxMessages: 2}, []int{0, 2, 3}},
		{"system counted in tokens", []Record{sys, u1, a1, u2}, Window{MaxTokens: 20}, []int{0, 2, 3}},
		{"lone huge system kept", []Record{sys, u1}, Window{MaxTokens: 3}, []int{0}},
		{"tool unit kept whole", []Record{u1, a1, u2, call, r1, r2, a2}, Window{MaxTokens: 20}, []int{2, 3, 4, 5, 6}},
		{"tool unit dropped whole", []Record{u1, call, r1, r2, a2}, Window{MaxTokens: 12}, []int{4}},
		{"tool unit counts as its messages", []Record{u2, call, r1, r2, a2}, Window{MaxMessages: 3}, []int{4}},
		{"orphan results dropped", []Record{r1, r2, u2, a2}, Window{}, []int{2, 3}},
		{"stops at first misfit", []Record{u1, rec(llm.RoleAssistant, 50), u2}, Window{MaxTokens: 20}, []int{2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.w.Fit(tt.recs)
			if err != nil {
				t.Fatal(err)
			}
			want := make([]Record, 0, len(tt.want))
			for _, i := range tt.want {
				want = append(want, tt.recs[i])
			}
			if !slices.EqualFunc(got, want, func(a, b Record) bool {
				return a.Tokens == b.Tokens && a.Message.Role == b.Message.Role && a.Message.ToolCallID == b.Message.ToolCallID && len(a.Message.ToolCalls) == len(b.Message.ToolCalls)
			}) {
				t.Fatalf("Fit = %v, want %v", got, want)
			}
		})
	}
}

func TestFitNoAllocWithoutSystem(t *testing.T) {
	recs := []Record{rec(llm.RoleUser, 5), rec(llm.RoleAssistant, 5), rec(llm.RoleUser, 5)}
	if n := testing.AllocsPerRun(100, func() { _, _ = Window{MaxTokens: 10}.Fit(recs) }); n != 0 {
		t.Fatalf("Fit allocated %v times, want 0", n)
	}
}

func FuzzFit(f *testing.F) {
	f.Add([]byte{0, 5, 1, 5, 2, 3, 3, 3}, 10, 3)
	f.Fuzz(func(t *testing.T, spec []byte, maxTokens, maxMessages int) {
		if maxTokens < 0 || maxMessages < 0 {
			return
		}
		var recs []Record
		for i := 0; i+1 < len(spec); i += 2 {
			tok := int(spec[i+1] % 50)
			switch spec[i] % 4 {
			case 0:
				if len(recs) == 0 {
					recs = append(recs, rec(llm.RoleSystem, tok))
				}
			case 1:
				recs = append(recs, rec(llm.RoleUser, tok))
			case 2:
				recs = append(recs, rec(llm.RoleAssistant, tok, "x"))
			case 3:
				recs = append(recs, toolRec("x", tok))
			}
		}
		got, err := Window{MaxTokens: maxTokens, MaxMessages: maxMessages}.Fit(recs)
		if err != nil {
			t.Fatal(err)
		}
		log := got
		if len(got) > 0 && got[0].Message.Role == llm.RoleSystem {
			log = got[1:]
			if len(log) > 0 && maxTokens > 0 && Tokens(got) > maxTokens {
				t.Fatalf("over token budget: %d > %d", Tokens(got), maxTokens)
			}
		} else if maxTokens > 0 && Tokens(got) > maxTokens {
			t.Fatalf("over token budget: %d > %d", Tokens(got), maxTokens)
		}
		if maxMessages > 0 && len(log) > maxMessages {
			t.Fatalf("over message budget: %d > %d", len(log), maxMessages)
		}
		if len(log) > 0 && log[0].Message.Role == llm.RoleTool {
			t.Fatalf("window starts with an orphan tool result")
		}
		// The kept log is a suffix of the input log.
		in := recs
		if len(in) > 0 && in[0].Message.Role == llm.RoleSystem {
			in = in[1:]
		}
		if len(log) > len(in) {
			t.Fatalf("kept more than given")
		}
	})
}
