package memory_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
)

func slRec(role llm.Role, tokens int) memory.Record {
	return memory.Record{Message: llm.Message{Role: role, Parts: []llm.Part{llm.TextPart(string(role))}}, Tokens: tokens}
}

func slCall(tokens int) memory.Record {
	return memory.Record{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c", Name: "f"}}}, Tokens: tokens}
}

func slSeqs(recs []memory.Record) []int64 {
	out := []int64{}
	for _, r := range recs {
		out = append(out, r.Seq)
	}
	return out
}

// number gives the records Seq 1, 2, … (a system record in first place 0).
func number(recs ...memory.Record) []memory.Record {
	n := int64(0)
	for i := range recs {
		if recs[i].Message.Role != llm.RoleSystem {
			n++
			recs[i].Seq = n
		}
	}
	return recs
}

func TestSlide(t *testing.T) {
	t.Parallel()
	u, a, tool, sys := llm.RoleUser, llm.RoleAssistant, llm.RoleTool, llm.RoleSystem
	turns := number(slRec(u, 10), slRec(a, 20), slRec(u, 10), slCall(5), slRec(tool, 30), slRec(tool, 5), slRec(a, 10), slRec(u, 10))
	tests := []struct {
		name    string
		history []memory.Record
		b       memory.Budget
		fixed   int
		want    []int64
	}{
		{"everything fits", turns, memory.Budget{ContextWindow: 1000, Reserve: 100}, 100, []int64{1, 2, 3, 4, 5, 6, 7, 8}},
		{"newest that fit", turns, memory.Budget{ContextWindow: 100, Reserve: 50}, 25, []int64{7, 8}},
		{"tool unit kept whole", turns, memory.Budget{ContextWindow: 100, Reserve: 0}, 40, []int64{4, 5, 6, 7, 8}},
		{"tool unit dropped whole", turns, memory.Budget{ContextWindow: 100, Reserve: 0}, 41, []int64{7, 8}},
		{"fixed fills the budget", turns, memory.Budget{ContextWindow: 100, Reserve: 50}, 50, []int64{}},
		{"nothing fits", turns, memory.Budget{ContextWindow: 100, Reserve: 50}, 45, []int64{}},
		{"no history", nil, memory.Budget{ContextWindow: 100}, 10, []int64{}},
		{"system record counts", number(slRec(sys, 15), slRec(u, 10), slRec(a, 10)), memory.Budget{ContextWindow: 100, Reserve: 50}, 20, []int64{0, 2}},
		{"system record alone", number(slRec(sys, 30), slRec(u, 10)), memory.Budget{ContextWindow: 100, Reserve: 50}, 20, []int64{0}},
		{"orphan tool results dropped", number(slRec(tool, 1), slRec(u, 1), slRec(a, 1)), memory.Budget{ContextWindow: 100}, 0, []int64{2, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := memory.Slide(tt.history, tt.b, tt.fixed)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(slSeqs(got), tt.want) {
				t.Errorf("Slide = %v, want %v", slSeqs(got), tt.want)
			}
		})
	}
}

func TestSlideTooLong(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		history []memory.Record
		fixed   int
		need    string
	}{
		{"fixed alone", nil, 51, "need 51 tokens; the budget is 50"},
		{"fixed and the stored system record", []memory.Record{slRec(llm.RoleSystem, 20), slRec(llm.RoleUser, 1)}, 40, "need 60 tokens; the budget is 50"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := memory.Slide(tt.history, memory.Budget{ContextWindow: 100, Reserve: 50}, tt.fixed)
			var le *llm.Error
			if !errors.Is(err, llm.ErrContextTooLong) || !errors.As(err, &le) {
				t.Fatalf("err = %v, want an *llm.Error matching ErrContextTooLong", err)
			}
			if want := "context too long: system prompt and query " + tt.need; len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
				t.Errorf("err = %q, want it to start with %q", err, want)
			}
		})
	}
	for _, b := range []memory.Budget{{ContextWindow: 0}, {ContextWindow: 10, Reserve: -1}} {
		if _, err := memory.Slide(nil, b, 0); err == nil || errors.Is(err, llm.ErrContextTooLong) {
			t.Errorf("Slide with budget %+v: err = %v, want an invalid-budget error", b, err)
		}
	}
	if _, err := memory.Slide(nil, memory.Budget{ContextWindow: 10}, -1); err == nil {
		t.Error("Slide with negative fixed tokens succeeded")
	}
}

// countingStore counts Loads and records the windows asked for.
type countingStore struct {
	memory.Store
	loads   int
	windows []memory.Window
}

func (c *countingStore) Load(ctx context.Context, k memory.Key, w memory.Window) ([]memory.Record, error) {
	c.loads++
	c.windows = append(c.windows, w)
	return c.Store.Load(ctx, k, w)
}

func TestLoadSlide(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := &countingStore{Store: memory.NewInMemory()}
	key := memory.Key{Session: "s"}
	if _, err := s.Append(ctx, key, number(slRec(llm.RoleSystem, 5), slRec(llm.RoleUser, 10), slRec(llm.RoleAssistant, 10), slRec(llm.RoleUser, 10))...); err != nil {
		t.Fatal(err)
	}
	b := memory.Budget{ContextWindow: 100, Reserve: 60}
	got, err := memory.LoadSlide(ctx, s, key, b, 10)
	if err != nil {
		t.Fatal(err)
	}
	// Budget 30: the system record (5) and the two newest (20).
	if want := []int64{0, 2, 3}; !reflect.DeepEqual(slSeqs(got), want) {
		t.Errorf("LoadSlide = %v, want %v", slSeqs(got), want)
	}
	if s.loads != 1 || s.windows[0] != (memory.Window{MaxTokens: 30}) {
		t.Errorf("LoadSlide made %d loads with windows %+v, want one with MaxTokens 30", s.loads, s.windows)
	}
	if got, err := memory.LoadSlide(ctx, s, key, b, 35); err != nil || !reflect.DeepEqual(slSeqs(got), []int64{0}) {
		t.Errorf("LoadSlide with a zero history budget = %v, %v; want the system record only", slSeqs(got), err)
	}
	if _, err := memory.LoadSlide(ctx, s, key, b, 41); !errors.Is(err, llm.ErrContextTooLong) {
		t.Errorf("LoadSlide with too much fixed: err = %v", err)
	}
	if s.loads != 2 {
		t.Errorf("LoadSlide touched the store (%d loads) although the fixed part did not fit", s.loads)
	}
}

// FuzzSlide checks Slide's guarantees on arbitrary histories: the result
// never exceeds the budget, is the newest contiguous history (after a kept
// system record), and never starts with a tool result.
func FuzzSlide(f *testing.F) {
	f.Add([]byte{0x12, 0x45, 0x83, 0xc4, 0x05, 0x21}, 200, 20, 30)
	f.Add([]byte{0x00, 0xff, 0x80, 0x80, 0x40}, 50, 0, 0)
	f.Add([]byte{}, 10, 0, 10)
	f.Fuzz(func(t *testing.T, spec []byte, window, reserve, fixed int) {
		if window <= 0 || window > 1<<20 || reserve < 0 || reserve > window || fixed < 0 || fixed > 1<<20 {
			return
		}
		// Each byte is a record: the top two bits pick the role, the rest
		// its tokens. A system record may only come first.
		var history []memory.Record
		for i, c := range spec {
			tokens := int(c & 0x3f)
			switch c >> 6 {
			case 0:
				if i == 0 {
					history = append(history, slRec(llm.RoleSystem, tokens))
				} else {
					history = append(history, slRec(llm.RoleUser, tokens))
				}
			case 1:
				history = append(history, slRec(llm.RoleAssistant, tokens))
			case 2:
				history = append(history, slCall(tokens))
			case 3:
				history = append(history, slRec(llm.RoleTool, tokens))
			}
		}
		history = number(history...)
		b := memory.Budget{ContextWindow: window, Reserve: reserve}
		got, err := memory.Slide(history, b, fixed)
		need := fixed
		if len(history) > 0 && history[0].Message.Role == llm.RoleSystem {
			need += history[0].Tokens
		}
		if err != nil {
			if !errors.Is(err, llm.ErrContextTooLong) || need <= b.Available() {
				t.Fatalf("Slide(%v, %+v, %d): unexpected error %v", slSeqs(history), b, fixed, err)
			}
			return
		}
		if need > b.Available() {
			t.Fatalf("Slide(%+v, %d) succeeded although %d tokens are needed", b, fixed, need)
		}
		if n := memory.Tokens(got); n > b.Available()-fixed {
			t.Fatalf("Slide kept %d tokens, budget %d", n, b.Available()-fixed)
		}
		log, full := got, history
		if len(history) > 0 && history[0].Message.Role == llm.RoleSystem {
			if len(got) == 0 || got[0].Seq != 0 {
				t.Fatalf("Slide dropped the system record: %v", slSeqs(got))
			}
			log, full = got[1:], history[1:]
		}
		if len(log) > 0 {
			if !reflect.DeepEqual(slSeqs(log), slSeqs(full[len(full)-len(log):])) {
				t.Fatalf("Slide kept %v, not a newest suffix of %v", slSeqs(log), slSeqs(full))
			}
			if log[0].Message.Role == llm.RoleTool {
				t.Fatalf("Slide kept %v, which starts with a tool result", slSeqs(log))
			}
		}
	})
}

func ExampleSlide() {
	history := []memory.Record{
		{Seq: 1, Message: llm.UserMessage("Hi, I'm Ada."), Tokens: 12},
		{Seq: 2, Message: llm.AssistantMessage("Hello Ada!"), Tokens: 10},
		{Seq: 3, Message: llm.UserMessage("What is a monad?"), Tokens: 14},
		{Seq: 4, Message: llm.AssistantMessage("A monoid in the category of endofunctors."), Tokens: 20},
	}
	// A 100-token model, 50 kept for the reply, 20 for the system prompt and
	// the new question: 30 tokens of history fit.
	kept, err := memory.Slide(history, memory.Budget{ContextWindow: 100, Reserve: 50}, 20)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range kept {
		fmt.Println(r.Seq, r.Message.Text())
	}
	_, err = memory.Slide(history, memory.Budget{ContextWindow: 100, Reserve: 50}, 60)
	fmt.Println(errors.Is(err, llm.ErrContextTooLong))
	// Output:
	// 4 A monoid in the category of endofunctors.
	// true
}
