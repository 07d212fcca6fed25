package memory_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/tokens"
)

func sys(s string) llm.Message  { return llm.SystemMessage(s) }
func user(s string) llm.Message { return llm.UserMessage(s) }
func asst(s string) llm.Message { return llm.AssistantMessage(s) }
func calls(names ...string) llm.Message {
	m := llm.Message{Role: llm.RoleAssistant}
	for _, n := range names {
		m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: n, Name: n, Arguments: "{}"})
	}
	return m
}
func result(id string) llm.Message { return llm.ToolResultMessage(id, id, "r-"+id, false) }

func show(msgs []llm.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		switch {
		case len(m.ToolCalls) > 0:
			out[i] = "calls"
		case m.Role == llm.RoleTool:
			out[i] = "result:" + m.ToolCallID
		default:
			out[i] = string(m.Role)[:1] + ":" + m.Text()
		}
	}
	return out
}

// opaqueStore hides the type of a store (and its optional interfaces).
type opaqueStore struct{ memory.Store }

// oneToken counts every text as one token, so that MessageTokens is
// 1 + MessageOverhead for a plain message.
var oneToken = tokens.CounterFunc(func(string) int { return 1 })

func TestWindowRules(t *testing.T) {
	t.Parallel()
	const per = 1 + tokens.MessageOverhead // tokens of a plain message
	mw := func(n int) func(memory.Store) *memory.Chats {
		return func(s memory.Store) *memory.Chats { return memory.MessageWindow(n, memory.WithStore(s)) }
	}
	tw := func(n int) func(memory.Store) *memory.Chats {
		return func(s memory.Store) *memory.Chats { return memory.TokenWindow(n, oneToken, memory.WithStore(s)) }
	}
	tests := []struct {
		name  string
		chats func(memory.Store) *memory.Chats
		adds  [][]llm.Message
		want  []string
	}{
		{"message window keeps the newest", mw(2),
			[][]llm.Message{{user("a"), asst("b")}, {user("c")}},
			[]string{"a:b", "u:c"}},
		{"identical system not added twice", mw(10),
			[][]llm.Message{{sys("s"), user("a")}, {sys("s"), asst("b")}},
			[]string{"s:s", "u:a", "a:b"}},
		{"different system replaces", mw(10),
			[][]llm.Message{{sys("s1"), user("a")}, {sys("s2")}},
			[]string{"s:s2", "u:a"}},
		{"system never evicted", mw(1),
			[][]llm.Message{{sys("s"), user("a"), asst("b"), user("c")}},
			[]string{"s:s", "u:c"}},
		{"tool call evicted with its results", mw(3),
			[][]llm.Message{{user("a"), calls("t1", "t2"), result("t1"), result("t2"), asst("b")}},
			[]string{"a:b"}},
		{"tool unit kept whole when it fits", mw(4),
			[][]llm.Message{{user("a"), calls("t1", "t2"), result("t1"), result("t2"), asst("b")}},
			[]string{"calls", "result:t1", "result:t2", "a:b"}},
		{"token window indivisible messages", tw(2*per + 1),
			[][]llm.Message{{user("a"), asst("b"), user("c")}},
			[]string{"a:b", "u:c"}},
		{"lone large system kept", tw(1),
			[][]llm.Message{{sys(strings.Repeat("long ", 50)), user("a")}},
			[]string{"s:" + strings.Repeat("long ", 50)}},
		{"token window system counts", tw(2 * per),
			[][]llm.Message{{sys("s"), user("a"), asst("b")}},
			[]string{"s:s", "a:b"}},
	}
	// Each case runs over an InMemory store, which a Chat reads without
	// copying, and over a Store that hides its type, which goes through
	// Append and Load.
	stores := []struct {
		name string
		new  func() memory.Store
	}{
		{"InMemory", func() memory.Store { return memory.NewInMemory() }},
		{"Store", func() memory.Store { return opaqueStore{memory.NewInMemory()} }},
	}
	for _, st := range stores {
		for _, tt := range tests {
			t.Run(st.name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				c := tt.chats(st.new()).Chat("id")
				for _, msgs := range tt.adds {
					if err := c.Add(ctx, msgs...); err != nil {
						t.Fatal(err)
					}
				}
				got, err := c.Messages(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				if g := show(got); !slices.Equal(g, tt.want) {
					t.Errorf("window = %q, want %q", g, tt.want)
				}
			})
		}
	}
}

func TestTrimOnWrite(t *testing.T) {
	t.Parallel()
	store := memory.NewInMemory()
	chats := memory.MessageWindow(4, memory.WithStore(store))
	c := chats.Chat("x")
	ctx := context.Background()
	for i := range 100 {
		if err := c.Add(ctx, user(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	all, err := store.Load(ctx, c.Key(), memory.Window{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) > 4+16 {
		t.Errorf("store holds %d records for a window of 4", len(all))
	}
	got, _ := c.Messages(ctx, nil)
	if g := show(got); !slices.Equal(g, []string{"u:96", "u:97", "u:98", "u:99"}) {
		t.Errorf("window = %q", g)
	}
}

func TestTokensCountedOnWrite(t *testing.T) {
	t.Parallel()
	c := memory.TokenWindow(1000, oneToken).Chat("x")
	ctx := context.Background()
	if err := c.Add(ctx, user("hello")); err != nil {
		t.Fatal(err)
	}
	recs, _ := c.Records(ctx)
	if recs[0].Tokens != 1+tokens.MessageOverhead {
		t.Errorf("tokens = %d", recs[0].Tokens)
	}
}

func TestChatsLazyListEvict(t *testing.T) {
	t.Parallel()
	chats := memory.MessageWindow(10)
	ctx := context.Background()
	if b1, b2 := chats.Chat("b"), chats.Chat("b"); b1 != b2 {
		t.Error("Chat is not memoised")
	}
	_ = chats.Chat("a").Add(ctx, user("hi"))
	if ids := chats.IDs(); !slices.Equal(ids, []string{"a", "b"}) {
		t.Errorf("IDs = %q", ids)
	}
	if err := chats.Evict(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if ids := chats.IDs(); !slices.Equal(ids, []string{"b"}) {
		t.Errorf("IDs after evict = %q", ids)
	}
	if got, _ := chats.Chat("a").Messages(ctx, nil); len(got) != 0 {
		t.Errorf("evicted chat has %q", show(got))
	}
}

// plainStore hides the in-memory store's Locker and Trimmer, to test the
// in-process lock.
type plainStore struct{ memory.Store }

func TestLockSerialisesTurns(t *testing.T) {
	t.Parallel()
	for _, store := range []memory.Store{memory.NewInMemory(), plainStore{memory.NewInMemory()}} {
		chats := memory.MessageWindow(1000, memory.WithStore(store))
		ctx := context.Background()
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				c := chats.Chat("shared")
				release, err := c.Lock(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				defer release()
				q := fmt.Sprint("q", i)
				if err := c.Add(ctx, user(q)); err != nil {
					t.Error(err)
				}
				if err := c.Add(ctx, asst(q)); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		got, _ := chats.Chat("shared").Messages(ctx, nil)
		if len(got) != 40 {
			t.Fatalf("%d messages", len(got))
		}
		for i := 0; i < len(got); i += 2 {
			if got[i].Text() != got[i+1].Text() {
				t.Fatalf("turns interleaved at %d: %q", i, show(got))
			}
		}
	}
}

func TestLockHonoursContext(t *testing.T) {
	t.Parallel()
	c := memory.MessageWindow(10, memory.WithStore(plainStore{memory.NewInMemory()})).Chat("x")
	release, err := c.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Lock(ctx); !errors.Is(err, memory.ErrLockTimeout) {
		t.Errorf("err = %v, want ErrLockTimeout", err)
	}
}

// TestPerID: each conversation gets the window its ID is given, asked
// again on every use, over one shared store.
func TestPerID(t *testing.T) {
	t.Parallel()
	store := memory.NewInMemory()
	var mu sync.Mutex
	premium := map[string]bool{"vip": true}
	chats := memory.PerID(func(id string) memory.Window {
		mu.Lock()
		defer mu.Unlock()
		if premium[id] {
			return memory.Window{MaxMessages: 4}
		}
		return memory.Window{MaxMessages: 1}
	}, memory.WithStore(store))
	ctx := context.Background()
	for _, id := range []string{"vip", "basic", "upgraded"} {
		if err := chats.Chat(id).Add(ctx, user("a"), asst("b"), user("c")); err != nil {
			t.Fatal(err)
		}
	}
	vip, _ := chats.Chat("vip").Messages(ctx, nil)
	basic, _ := chats.Chat("basic").Messages(ctx, nil)
	if len(vip) != 3 || len(basic) != 1 || chats.Store() != store || chats.Chat("vip").Window().MaxMessages != 4 {
		t.Errorf("vip %q, basic %q", show(vip), show(basic))
	}
	// A turn begun on a conversation loads its own window too (from a
	// store that keeps everything).
	all := memory.PerID(func(id string) memory.Window {
		if id == "vip" {
			return memory.Window{MaxMessages: 4}
		}
		return memory.Window{MaxMessages: 1}
	}, memory.KeepAll())
	for id, want := range map[string]int{"vip": 3, "basic": 1} {
		if err := all.Chat(id).Add(ctx, user("a"), asst("b"), user("c")); err != nil {
			t.Fatal(err)
		}
		h, recs, err := all.Chat(id).Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.End(ctx); err != nil {
			t.Fatal(err)
		}
		if len(recs) != want {
			t.Errorf("Begin on %s loaded %d records, want %d", id, len(recs), want)
		}
	}
	// An upgrade applies from the next use on: the window grows from the
	// one message the store kept.
	mu.Lock()
	premium["upgraded"] = true
	mu.Unlock()
	up := chats.Chat("upgraded")
	if err := up.Add(ctx, asst("d"), user("e")); err != nil {
		t.Fatal(err)
	}
	got, _ := up.Messages(ctx, nil)
	if !slices.Equal(show(got), []string{"u:c", "a:d", "u:e"}) {
		t.Errorf("upgraded keeps %q, want [u:c a:d u:e]", show(got))
	}
}

// TestEvictedStayEvicted: a message a window evicted does not reappear when
// a wider window reads the same store.
func TestEvictedStayEvicted(t *testing.T) {
	t.Parallel()
	const per = 1 + tokens.MessageOverhead
	for name, narrow := range map[string]func(memory.Store) *memory.Chats{
		"messages": func(s memory.Store) *memory.Chats { return memory.MessageWindow(4, memory.WithStore(s)) },
		"tokens":   func(s memory.Store) *memory.Chats { return memory.TokenWindow(3*per, oneToken, memory.WithStore(s)) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			store := memory.NewInMemory()
			c := narrow(store).Chat("x")
			wide := memory.MessageWindow(1000, memory.WithStore(store)).Chat("x")
			for i := range 40 {
				if err := c.Add(ctx, user(fmt.Sprint(i))); err != nil {
					t.Fatal(err)
				}
				kept, _ := c.Messages(ctx, nil)
				seen, _ := wide.Messages(ctx, nil)
				if !slices.Equal(show(seen), show(kept)) {
					t.Fatalf("after %d adds the wide window reads %q, the window keeps %q", i+1, show(seen), show(kept))
				}
			}
		})
	}
}
