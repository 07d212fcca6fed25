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

// TestWindowReserve checks a window with a Reserve: a model call's budget
// (context window less the reply and the rest of the request).
func TestWindowReserve(t *testing.T) {
	t.Parallel()
	u, a, tool, sys := llm.RoleUser, llm.RoleAssistant, llm.RoleTool, llm.RoleSystem
	turns := number(slRec(u, 10), slRec(a, 20), slRec(u, 10), slCall(5), slRec(tool, 30), slRec(tool, 5), slRec(a, 10), slRec(u, 10))
	tests := []struct {
		name    string
		history []memory.Record
		w       memory.Window
		want    []int64
	}{
		{"everything fits", turns, memory.Window{MaxTokens: 1000, Reserve: 200}, []int64{1, 2, 3, 4, 5, 6, 7, 8}},
		{"newest that fit", turns, memory.Window{MaxTokens: 100, Reserve: 75}, []int64{7, 8}},
		{"tool unit kept whole", turns, memory.Window{MaxTokens: 100, Reserve: 40}, []int64{4, 5, 6, 7, 8}},
		{"tool unit dropped whole", turns, memory.Window{MaxTokens: 100, Reserve: 41}, []int64{7, 8}},
		{"fixed fills the budget", turns, memory.Window{MaxTokens: 100, Reserve: 100}, []int64{}},
		{"nothing fits", turns, memory.Window{MaxTokens: 100, Reserve: 95}, []int64{}},
		{"no history", nil, memory.Window{MaxTokens: 100, Reserve: 10}, []int64{}},
		{"system record counts", number(slRec(sys, 15), slRec(u, 10), slRec(a, 10)), memory.Window{MaxTokens: 100, Reserve: 70}, []int64{0, 2}},
		{"system record alone", number(slRec(sys, 30), slRec(u, 10)), memory.Window{MaxTokens: 100, Reserve: 70}, []int64{0}},
		{"orphan tool results dropped", number(slRec(tool, 1), slRec(u, 1), slRec(a, 1)), memory.Window{MaxTokens: 100, Reserve: 0}, []int64{2, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.w.Fit(tt.history)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(slSeqs(got), tt.want) {
				t.Errorf("Fit = %v, want %v", slSeqs(got), tt.want)
			}
		})
	}
}

func TestWindowReserveTooLong(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		history []memory.Record
		reserve int
		need    string
	}{
		{"reserve alone", nil, 101, "need 101 tokens before any history"},
		{"reserve and the stored system record", []memory.Record{slRec(llm.RoleSystem, 20), slRec(llm.RoleUser, 1)}, 90, "need 90 tokens and the stored system message 20 more before any history"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := memory.Window{MaxTokens: 100, Reserve: tt.reserve}.Fit(tt.history)
			var le *llm.Error
			if !errors.Is(err, llm.ErrContextTooLong) || !errors.As(err, &le) {
				t.Fatalf("err = %v, want an *llm.Error matching ErrContextTooLong", err)
			}
			if want := "context too long: the token budget is 100 (the model's context window) and the reply, system prompt and query " + tt.need; len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
				t.Errorf("err = %q, want it to start with %q", err, want)
			}
		})
	}
	for _, w := range []memory.Window{{Reserve: 1}, {MaxTokens: 10, Reserve: -1}} {
		if _, err := w.Fit(nil); err == nil || errors.Is(err, llm.ErrContextTooLong) {
			t.Errorf("Fit with window %+v: err = %v, want an invalid-window error", w, err)
		}
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

func TestWindowLoad(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := &countingStore{Store: memory.NewInMemory()}
	key := memory.Key{Session: "s"}
	if _, err := s.Append(ctx, key, number(slRec(llm.RoleSystem, 5), slRec(llm.RoleUser, 10), slRec(llm.RoleAssistant, 10), slRec(llm.RoleUser, 10))...); err != nil {
		t.Fatal(err)
	}
	w := memory.Window{MaxTokens: 100, Reserve: 70}
	got, err := w.Load(ctx, s, key)
	if err != nil {
		t.Fatal(err)
	}
	// Budget 30: the system record (5) and the two newest (20).
	if want := []int64{0, 2, 3}; !reflect.DeepEqual(slSeqs(got), want) {
		t.Errorf("Load = %v, want %v", slSeqs(got), want)
	}
	if s.loads != 1 || s.windows[0] != (memory.Window{MaxTokens: 30}) {
		t.Errorf("Load made %d loads with windows %+v, want one with MaxTokens 30", s.loads, s.windows)
	}
	if got, err := (memory.Window{MaxTokens: 100, Reserve: 95}).Load(ctx, s, key); err != nil || !reflect.DeepEqual(slSeqs(got), []int64{0}) {
		t.Errorf("Load with a zero history budget = %v, %v; want the system record only", slSeqs(got), err)
	}
	if _, err := (memory.Window{MaxTokens: 100, Reserve: 101}).Load(ctx, s, key); !errors.Is(err, llm.ErrContextTooLong) {
		t.Errorf("Load with too large a reserve: err = %v", err)
	}
	if s.loads != 2 {
		t.Errorf("Load touched the store (%d loads) although the reserve did not fit", s.loads)
	}
}

// FuzzWindowReserve checks the guarantees of a window with a Reserve on arbitrary histories: the result
// never exceeds the budget, is the newest contiguous history (after a kept
// system record), and never starts with a tool result.
func FuzzWindowReserve(f *testing.F) {
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
		w := memory.Window{MaxTokens: window, Reserve: reserve + fixed}
		if w.Reserve == 0 {
			return // a window without a Reserve keeps a lone system record of any size
		}
		available := window - reserve
		got, err := w.Fit(history)
		need := fixed
		if len(history) > 0 && history[0].Message.Role == llm.RoleSystem {
			need += history[0].Tokens
		}
		if err != nil {
			if !errors.Is(err, llm.ErrContextTooLong) || need <= available {
				t.Fatalf("%+v.Fit(%v): unexpected error %v", w, slSeqs(history), err)
			}
			return
		}
		if need > available {
			t.Fatalf("%+v.Fit succeeded although %d tokens are needed", w, need)
		}
		if n := memory.Tokens(got); n > available-fixed {
			t.Fatalf("Fit kept %d tokens, budget %d", n, available-fixed)
		}
		log, full := got, history
		if len(history) > 0 && history[0].Message.Role == llm.RoleSystem {
			if len(got) == 0 || got[0].Seq != 0 {
				t.Fatalf("Fit dropped the system record: %v", slSeqs(got))
			}
			log, full = got[1:], history[1:]
		}
		if len(log) > 0 {
			if !reflect.DeepEqual(slSeqs(log), slSeqs(full[len(full)-len(log):])) {
				t.Fatalf("Fit kept %v, not a newest suffix of %v", slSeqs(log), slSeqs(full))
			}
			if log[0].Message.Role == llm.RoleTool {
				t.Fatalf("Fit kept %v, which starts with a tool result", slSeqs(log))
			}
		}
	})
}

func ExampleWindow_Fit() {
	history := []memory.Record{
		{Seq: 1, Message: llm.UserMessage("Hi, I'm Ada."), Tokens: 12},
		{Seq: 2, Message: llm.AssistantMessage("Hello Ada!"), Tokens: 10},
		{Seq: 3, Message: llm.UserMessage("What is a monad?"), Tokens: 14},
		{Seq: 4, Message: llm.AssistantMessage("A monoid in the category of endofunctors."), Tokens: 20},
	}
	// A 100-token model, 50 kept for the reply and 20 for the system prompt
	// and the new question: 30 tokens of history fit.
	kept, err := memory.Window{MaxTokens: 100, Reserve: 50 + 20}.Fit(history)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range kept {
		fmt.Println(r.Seq, r.Message.Text())
	}
	_, err = memory.Window{MaxTokens: 100, Reserve: 50 + 60}.Fit(history)
	fmt.Println(errors.Is(err, llm.ErrContextTooLong))
	// Output:
	// 4 A monoid in the category of endofunctors.
	// true
}

// FuzzLoadMessages checks the in-memory fast path against the portable
// one: InMemory.LoadMessages keeps exactly the messages of Window.Load.
func FuzzLoadMessages(f *testing.F) {
	f.Add([]byte{0x12, 0x45, 0x83, 0xc4, 0x05, 0x21}, 60, 2, 10)
	f.Add([]byte{0x30, 0x81, 0xc2, 0x43}, 0, 0, 0)
	f.Fuzz(func(t *testing.T, spec []byte, maxTokens, maxMessages, reserve int) {
		if maxTokens < 0 || maxMessages < 0 || reserve < 0 || maxTokens > 1<<20 || reserve > 1<<20 {
			return
		}
		ctx := t.Context()
		s := memory.NewInMemory()
		key := memory.Key{Session: "s"}
		var recs []memory.Record
		for i, c := range spec {
			r := slRec(llm.RoleUser, int(c&0x3f))
			switch c >> 6 {
			case 0:
				if i == 0 {
					r = slRec(llm.RoleSystem, int(c&0x3f))
				}
			case 1:
				r = slRec(llm.RoleAssistant, int(c&0x3f))
			case 2:
				r = slCall(int(c & 0x3f))
			case 3:
				r = slRec(llm.RoleTool, int(c&0x3f))
			}
			recs = append(recs, r)
		}
		if len(recs) > 0 {
			if _, err := s.Append(ctx, key, recs...); err != nil {
				t.Fatal(err)
			}
		}
		w := memory.Window{MaxTokens: maxTokens, MaxMessages: maxMessages, Reserve: reserve}
		want, werr := w.Load(ctx, s, key)
		got, gerr := s.LoadMessages(ctx, key, w, nil)
		if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
			t.Fatalf("%+v: Load err %v, LoadMessages err %v", w, werr, gerr)
		}
		if len(got) != len(want) {
			t.Fatalf("%+v: LoadMessages kept %d messages, Load %d", w, len(got), len(want))
		}
		for i := range want {
			if got[i].Role != want[i].Message.Role || len(got[i].ToolCalls) != len(want[i].Message.ToolCalls) {
				t.Fatalf("%+v: message %d differs: %+v, want %+v", w, i, got[i], want[i].Message)
			}
		}
	})
}
