package ai_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/weftlabs/weft/ai"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/memory/redisstore"
	"github.com/weftlabs/weft/memory/sqlstore"
	"github.com/weftlabs/weft/provider/scripted"
	"github.com/weftlabs/weft/tool"
)

// Transfer is the argument of the transfer tool, which needs approval
// above 100.
type Transfer struct {
	To     string `json:"to" description:"the payee"`
	Amount int    `json:"amount" description:"in euros"`
}

// bank is a transfer tool that records its calls.
type bank struct {
	mu    sync.Mutex
	calls []Transfer
}

func (b *bank) tool() tool.Tool {
	return tool.Func("transfer", "Transfer money.", func(ctx context.Context, in Transfer) (string, error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.calls = append(b.calls, in)
		return "sent " + jsonString(in), nil
	})
}

func (b *bank) made() []Transfer {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.calls)
}

func jsonString(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

var above100 = tool.Approvals{"transfer": tool.When(func(in Transfer) bool { return in.Amount > 100 })}

// TestApprovalPolicies checks never, always and a condition over the
// arguments, and that a call not needing approval runs at once.
func TestApprovalPolicies(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		policy tool.Approver
		amount int
		wait   bool
	}{
		{"never", tool.Approvals{"transfer": tool.Never}, 500, false},
		{"always", tool.Approvals{"transfer": tool.Always}, 5, true},
		{"other tools only", tool.Approvals{"weather": tool.Always}, 500, false},
		{"condition false", above100, 50, false},
		{"condition true", above100, 500, true},
		{"fixed for all tools", tool.Always, 5, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b bank
			m := scripted.New(steps(calls(call("c1", "transfer", Transfer{"bob", tt.amount})), text("done")))
			e, err := ai.NewEngine(m, ai.Tools(b.tool()), ai.Approval(tt.policy))
			if err != nil {
				t.Fatal(err)
			}
			out, err := e.Do(context.Background(), ai.Turn{Message: llm.UserMessage("pay bob")})
			if err != nil {
				t.Fatal(err)
			}
			if got := out.Interrupt != nil; got != tt.wait {
				t.Fatalf("interrupted = %v, want %v", got, tt.wait)
			}
			if tt.wait {
				if len(b.made()) != 0 || len(m.Requests()) != 1 {
					t.Errorf("a waiting call ran (%v) or the model was called again (%d requests)", b.made(), len(m.Requests()))
				}
				want := []llm.ToolCall{call("c1", "transfer", Transfer{"bob", tt.amount})}
				if !slices.Equal(out.Interrupt.Calls, want) || out.FinishReason != llm.FinishToolCalls {
					t.Errorf("interrupt = %+v, finish %q", out.Interrupt, out.FinishReason)
				}
				return
			}
			if len(b.made()) != 1 || out.Text != "done" {
				t.Errorf("calls %v, answer %q", b.made(), out.Text)
			}
		})
	}
	if _, err := ai.NewEngine(scripted.New(), ai.Approval(nil)); err == nil {
		t.Error("Approval(nil) was accepted")
	}
}

// TestApprovalFailingApprover checks that a call whose approver fails
// does not run and fails the turn.
func TestApprovalFailingApprover(t *testing.T) {
	t.Parallel()
	var b bank
	broken := tool.ApproverFunc(func(context.Context, llm.ToolCall) (bool, error) { return false, errors.New("policy store down") })
	e, err := ai.NewEngine(scripted.New(steps(calls(call("c1", "transfer", Transfer{"bob", 5})))), ai.Tools(b.tool()), ai.Approval(broken))
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Do(context.Background(), ai.Turn{Message: llm.UserMessage("pay")})
	if err == nil || !strings.Contains(err.Error(), "policy store down") || len(b.made()) != 0 {
		t.Errorf("err = %v, calls %v", err, b.made())
	}
}

// TestApprovalMixedRound checks a round whose calls include one needing
// approval: the others run, the turn ends with the interrupt, and a turn
// with the caller's history and a decision resumes it.
func TestApprovalMixedRound(t *testing.T) {
	t.Parallel()
	var b bank
	m := scripted.New(steps(
		calls(call("w1", "weather", CityArgs{"Paris"}), call("c1", "transfer", Transfer{"bob", 500}), call("c2", "transfer", Transfer{"ann", 20})),
		text("Sent 500 to bob and 20 to ann; 21 degrees."),
	))
	e, err := ai.NewEngine(m, ai.Tools(weatherTool(), b.tool()), ai.Approval(above100))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	out, err := e.Do(ctx, ai.Turn{Message: llm.UserMessage("pay and weather")})
	if err != nil {
		t.Fatal(err)
	}
	if out.Interrupt == nil || len(out.Interrupt.Calls) != 1 || out.Interrupt.Calls[0].ID != "c1" {
		t.Fatalf("interrupt = %+v", out.Interrupt)
	}
	if len(out.Interrupt.ID) != 26 {
		t.Errorf("interrupt id %q: want a random 26-character id for a turn without an ID", out.Interrupt.ID)
	}
	if got := b.made(); !slices.Equal(got, []Transfer{{"ann", 20}}) {
		t.Errorf("transfers before the decision = %v, want ann's only", got)
	}
	want := []string{"user:pay and weather", "assistant:[calls weather transfer transfer]", `tool:{"city":"Paris","temp_c":21}`, `tool:sent {"to":"ann","amount":20}`}
	if got := texts(out.Messages); !slices.Equal(got, want) {
		t.Errorf("messages = %q, want %q", got, want)
	}

	next, err := e.Do(ctx, ai.Turn{History: out.Messages, Decisions: []ai.Decision{ai.Approve("c1")}})
	if err != nil {
		t.Fatal(err)
	}
	if next.Text != "Sent 500 to bob and 20 to ann; 21 degrees." || next.Interrupt != nil {
		t.Errorf("resumed outcome %q, interrupt %v", next.Text, next.Interrupt)
	}
	if got := b.made(); !slices.Equal(got, []Transfer{{"ann", 20}, {"bob", 500}}) {
		t.Errorf("transfers = %v", got)
	}
	sent := m.Requests()[1].Messages
	if last := sent[len(sent)-1]; last.ToolCallID != "c1" || last.Text() != `sent {"to":"bob","amount":500}` {
		t.Errorf("the model saw %q for c1 last", texts([]llm.Message{last}))
	}
}

// TestApprovalDecisions checks approve, edit and reject, and the refusal
// of bad decisions (nothing run, nothing stored).
func TestApprovalDecisions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	setup := func(t *testing.T) (*ai.Engine, *scripted.Model, *bank, *memory.Chat, memory.Store) {
		var b bank
		m := scripted.New(steps(calls(call("c1", "transfer", Transfer{"bob", 500}), call("c2", "transfer", Transfer{"ann", 300})), text("ok")))
		e, err := ai.NewEngine(m, ai.Tools(b.tool()), ai.Approval(above100))
		if err != nil {
			t.Fatal(err)
		}
		store := memory.NewInMemory()
		chat := memory.NewChat(store, memory.Key{Session: "s"}, memory.Window{MaxMessages: 20})
		out, err := e.Do(ctx, ai.Turn{ID: "t1", Memory: chat, Message: llm.UserMessage("pay")})
		if err != nil || out.Interrupt == nil || out.Interrupt.ID != "t1" || len(out.Interrupt.Calls) != 2 {
			t.Fatalf("first turn: %v, %+v", err, out)
		}
		return e, m, &b, chat, store
	}

	t.Run("approve, edit, reject", func(t *testing.T) {
		t.Parallel()
		e, m, b, chat, store := setup(t)
		out, err := e.Do(ctx, ai.Turn{ID: "t2", Memory: chat, Decisions: []ai.Decision{
			ai.Reject("c2", "ann was paid yesterday"),
			ai.Edit("c1", json.RawMessage(`{"to":"bob","amount":250}`)),
		}})
		if err != nil {
			t.Fatal(err)
		}
		if got := b.made(); !slices.Equal(got, []Transfer{{"bob", 250}}) {
			t.Errorf("transfers = %v, want bob's edited one only", got)
		}
		sent := m.Requests()[1].Messages
		results := sent[len(sent)-2:]
		if r := results[0]; r.ToolCallID != "c1" || r.IsError || !strings.Contains(r.Text(), `edited: {"to":"bob","amount":250}`) || !strings.HasSuffix(r.Text(), `sent {"to":"bob","amount":250}`) {
			t.Errorf("the model saw %q (error %v) for the edited call", r.Text(), r.IsError)
		}
		if r := results[1]; r.ToolCallID != "c2" || !r.IsError || !strings.Contains(r.Text(), "rejected") || !strings.Contains(r.Text(), "ann was paid yesterday") {
			t.Errorf("the model saw %q (error %v) for the rejected call", r.Text(), r.IsError)
		}
		if len(out.ToolExecutions) != 2 || !errors.Is(out.ToolExecutions[1].Err, ai.ErrRejected) || out.ToolExecutions[0].Call.Arguments != `{"to":"bob","amount":250}` {
			t.Errorf("executions = %+v", out.ToolExecutions)
		}
		all := stored(loadAll(t, store, memory.Key{Session: "s"}))
		if got := all[len(all)-3:]; got[0] != "t2-r0 tool:"+results[0].Text() || !strings.HasPrefix(got[1], "t2-r1 tool:") || got[2] != "t2 assistant:ok" {
			t.Errorf("stored %q", got)
		}
	})

	for _, tt := range []struct {
		name      string
		decisions []ai.Decision
		is        error
		field     string // of a *tool.ArgumentError
		missing   string // a *ToolResultError's call
		msg       string
	}{
		{name: "edit: wrong type", decisions: []ai.Decision{ai.Edit("c1", json.RawMessage(`{"to":"bob","amount":"lots"}`)), ai.Approve("c2")}, field: "amount"},
		{name: "edit: missing field", decisions: []ai.Decision{ai.Edit("c1", json.RawMessage(`{"amount":3}`)), ai.Approve("c2")}, field: "to"},
		{name: "edit: unknown field", decisions: []ai.Decision{ai.Edit("c1", json.RawMessage(`{"to":"bob","amount":3,"iban":"x"}`)), ai.Approve("c2")}, field: "iban"},
		{name: "edit: not an object", decisions: []ai.Decision{ai.Edit("c1", json.RawMessage(`[1]`)), ai.Approve("c2")}, msg: "must be a JSON object"},
		{name: "edit without arguments", decisions: []ai.Decision{{CallID: "c1", Action: ai.ActionEdit}, ai.Approve("c2")}, msg: "an edit needs arguments"},
		{name: "approve with arguments", decisions: []ai.Decision{{CallID: "c1", Action: ai.ActionApprove, Arguments: json.RawMessage(`{}`)}, ai.Approve("c2")}, msg: "arguments belong to"},
		{name: "unknown action", decisions: []ai.Decision{{CallID: "c1", Action: "maybe"}, ai.Approve("c2")}, msg: `unknown action "maybe"`},
		{name: "unknown call", decisions: []ai.Decision{ai.Approve("c1"), ai.Approve("c2"), ai.Approve("c9")}, is: ai.ErrUnknownCall},
		{name: "two decisions", decisions: []ai.Decision{ai.Approve("c1"), ai.Reject("c1", "no"), ai.Approve("c2")}, msg: "two answers"},
		{name: "a call undecided", decisions: []ai.Decision{ai.Approve("c1")}, missing: "c2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, m, b, chat, store := setup(t)
			before := stored(loadAll(t, store, memory.Key{Session: "s"}))
			_, err := e.Do(ctx, ai.Turn{ID: "t2", Memory: chat, Decisions: tt.decisions})
			var de *ai.DecisionError
			var ae *tool.ArgumentError
			var te *ai.ToolResultError
			switch {
			case err == nil:
				t.Fatal("the decisions were accepted")
			case tt.field != "":
				if !errors.As(err, &de) || de.CallID != "c1" || !errors.As(err, &ae) || ae.Field != tt.field || ae.Tool != "transfer" {
					t.Errorf("err = %v, want a DecisionError on c1 with an ArgumentError on %q", err, tt.field)
				}
			case tt.is != nil:
				if !errors.Is(err, tt.is) || !errors.As(err, &de) {
					t.Errorf("err = %v, want %v", err, tt.is)
				}
			case tt.missing != "":
				if !errors.As(err, &te) || te.CallID != tt.missing || !te.Missing {
					t.Errorf("err = %v, want the missing answer of %s", err, tt.missing)
				}
			default:
				if !errors.As(err, &de) || !strings.Contains(err.Error(), tt.msg) {
					t.Errorf("err = %v, want %q", err, tt.msg)
				}
			}
			if len(b.made()) != 0 || len(m.Requests()) != 1 {
				t.Errorf("a refused resume ran %v or called the model", b.made())
			}
			if got := stored(loadAll(t, store, memory.Key{Session: "s"})); !slices.Equal(got, before) {
				t.Errorf("a refused resume stored %q", got[len(before):])
			}
		})
	}

	t.Run("the resuming turn needs its own ID", func(t *testing.T) {
		t.Parallel()
		e, _, b, chat, _ := setup(t)
		_, err := e.Do(ctx, ai.Turn{ID: "t1", Memory: chat, Decisions: []ai.Decision{ai.Approve("c1"), ai.Approve("c2")}})
		if err == nil || !strings.Contains(err.Error(), "needs an ID of its own") || len(b.made()) != 0 {
			t.Errorf("err = %v, calls %v", err, b.made())
		}
	})

	t.Run("a message and decisions", func(t *testing.T) {
		t.Parallel()
		e, _, _, chat, _ := setup(t)
		if _, err := e.Do(ctx, ai.Turn{Memory: chat, Message: llm.UserMessage("x"), Decisions: []ai.Decision{ai.Approve("c1")}}); err == nil {
			t.Error("a Turn with a Message and Decisions was run")
		}
	})
}

// TestApprovalResumeTwice checks that a second resume runs nothing and
// reports what the first stored, and that concurrent resumes of one
// interrupt run the tool once.
func TestApprovalResumeTwice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var b bank
	m := scripted.New(steps(calls(call("c1", "transfer", Transfer{"bob", 500})), text("sent")))
	e, err := ai.NewEngine(m, ai.Tools(b.tool()), ai.Approval(above100))
	if err != nil {
		t.Fatal(err)
	}
	store := memory.NewInMemory()
	chat := memory.NewChat(store, memory.Key{Session: "s"}, memory.Window{MaxMessages: 20})
	if _, err := e.Do(ctx, ai.Turn{ID: "t1", Memory: chat, Message: llm.UserMessage("pay")}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Do(ctx, ai.Turn{ID: "t2", Memory: chat, Decisions: []ai.Decision{ai.Approve("c1")}}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"t2", "t3"} { // a retry of the same turn, another turn
		_, err := e.Do(ctx, ai.Turn{ID: id, Memory: chat, Decisions: []ai.Decision{ai.Reject("c1", "changed my mind")}})
		var de *ai.DecisionError
		if !errors.Is(err, ai.ErrResolved) || !errors.As(err, &de) {
			t.Fatalf("second resume (%s): err = %v, want ErrResolved", id, err)
		}
		if de.Result == nil || de.Result.Text() != `sent {"to":"bob","amount":500}` || de.ResolvedBy != "t2" {
			t.Errorf("second resume (%s): stored result %v by %q", id, de.Result, de.ResolvedBy)
		}
	}
	if n := len(b.made()); n != 1 {
		t.Errorf("the tool ran %d times", n)
	}

	// Without memory the caller's history shows the call answered just
	// as well.
	_, err = e.Do(ctx, ai.Turn{History: messagesOf(loadAll(t, store, chat.Key())), Decisions: []ai.Decision{ai.Approve("c1")}})
	if !errors.Is(err, ai.ErrResolved) {
		t.Errorf("history resume: err = %v", err)
	}
}

// TestApprovalAcrossProcesses pauses a turn, then resumes it twice at once
// from a fresh Engine and Chat over the same store (another process, as
// far as the store can tell): the tool runs once, one resume answers and
// the other finds the call resolved.
func TestApprovalAcrossProcesses(t *testing.T) {
	t.Parallel()
	type opener func(t *testing.T) (first, second memory.Store)
	stores := map[string]opener{
		"in-memory": func(t *testing.T) (memory.Store, memory.Store) {
			s := memory.NewInMemory()
			return s, s
		},
		"sqlite": func(t *testing.T) (memory.Store, memory.Store) {
			path := filepath.Join(t.TempDir(), "memory.db")
			open := func() memory.Store {
				s, err := sqlstore.OpenSQLite(context.Background(), path)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
			return open(), open()
		},
		"redis": func(t *testing.T) (memory.Store, memory.Store) {
			u := os.Getenv("WEFT_TEST_REDIS_URL")
			if u == "" {
				t.Skip("WEFT_TEST_REDIS_URL is not set")
			}
			prefix := "weftapprovaltest-" + rand.Text()
			open := func() memory.Store {
				o, err := redis.ParseURL(u)
				if err != nil {
					t.Fatal(err)
				}
				c := redis.NewClient(o)
				t.Cleanup(func() {
					keys, _ := c.Keys(context.Background(), prefix+":*").Result()
					if len(keys) > 0 {
						c.Del(context.Background(), keys...)
					}
					c.Close()
				})
				s, err := redisstore.New(c, redisstore.WithPrefix(prefix))
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			return open(), open()
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			first, second := open(t)
			key := memory.Key{Tenant: "acme", Agent: "payer", Session: "s1"}
			var b bank
			e1, err := ai.NewEngine(scripted.New(steps(calls(call("c1", "transfer", Transfer{"bob", 500})))), ai.Tools(b.tool()), ai.Approval(above100))
			if err != nil {
				t.Fatal(err)
			}
			out, err := e1.Do(ctx, ai.Turn{ID: "t1", Memory: memory.NewChat(first, key, memory.Window{MaxMessages: 20}), Message: llm.UserMessage("pay bob")})
			if err != nil || out.Interrupt == nil {
				t.Fatalf("first turn: %v, %+v", err, out)
			}
			in := out.Interrupt

			// Another process: a new engine, chat and (for SQL and Redis)
			// connection; only the interrupt's decisions travel.
			e2, err := ai.NewEngine(scripted.New(steps(text("sent"))), ai.Tools(b.tool()), ai.Approval(above100))
			if err != nil {
				t.Fatal(err)
			}
			type result struct {
				out *ai.Outcome
				err error
			}
			res := make(chan result, 2)
			for i, id := range []string{"r1", "r2"} {
				go func() {
					chat := memory.NewChat(second, key, memory.Window{MaxMessages: 20})
					if i == 0 {
						chat = memory.NewChat(first, key, memory.Window{MaxMessages: 20})
					}
					o, err := e2.Do(ctx, ai.Turn{ID: id, Memory: chat, Decisions: []ai.Decision{ai.Approve(in.Calls[0].ID)}})
					res <- result{o, err}
				}()
			}
			var won, resolved int
			for range 2 {
				r := <-res
				switch {
				case r.err == nil && r.out.Text == "sent":
					won++
				case errors.Is(r.err, ai.ErrResolved):
					resolved++
				default:
					t.Errorf("resume: %v", r.err)
				}
			}
			if won != 1 || resolved != 1 {
				t.Errorf("%d resumes answered, %d found the call resolved; want 1 and 1", won, resolved)
			}
			if n := len(b.made()); n != 1 {
				t.Errorf("the tool ran %d times", n)
			}
			recs := loadAll(t, second, key)
			if got := stored(recs); len(got) != 4 || got[0] != "t1-q user:pay bob" || !strings.HasPrefix(got[1], "t1 assistant:[calls transfer]") {
				t.Errorf("stored %q", got)
			}
		})
	}
}

// TestApprovalStream checks the interrupt's event: after the calls, once
// the paused turn is stored, before EventDone.
func TestApprovalStream(t *testing.T) {
	t.Parallel()
	var b bank
	m := scripted.New(steps(calls(call("w1", "weather", CityArgs{"Paris"}), call("c1", "transfer", Transfer{"bob", 500}))))
	e, err := ai.NewEngine(m, ai.Tools(weatherTool(), b.tool()), ai.Approval(above100))
	if err != nil {
		t.Fatal(err)
	}
	store := memory.NewInMemory()
	key := memory.Key{Session: "s"}
	chat := memory.NewChat(store, key, memory.Window{MaxMessages: 20})
	var kinds []string
	var storedAtInterrupt []string
	for ev, err := range e.Run(context.Background(), ai.Turn{ID: "t1", Memory: chat, Message: llm.UserMessage("pay")}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == ai.EventToolCallDelta {
			continue // the calls as they stream, before the whole calls
		}
		kinds = append(kinds, ev.Kind.String())
		if ev.Kind == ai.EventInterrupt {
			if ev.Interrupt == nil || ev.Interrupt.ID != "t1" || len(ev.Interrupt.Calls) != 1 {
				t.Errorf("interrupt event %+v", ev.Interrupt)
			}
			storedAtInterrupt = stored(loadAll(t, store, key))
		}
		if ev.Kind == ai.EventDone && ev.Outcome.Interrupt == nil {
			t.Error("the outcome lost the interrupt")
		}
	}
	if want := []string{"usage", "tool_call", "tool_call", "tool_result", "interrupt", "done"}; !slices.Equal(kinds, want) {
		t.Errorf("events %q, want %q", kinds, want)
	}
	if len(storedAtInterrupt) != 3 {
		t.Errorf("stored when the interrupt was announced: %q", storedAtInterrupt)
	}
}

// TestApprovalTyped checks a typed call's interrupt (*InterruptError) and
// its resumption with Resume: without memory from the error, with memory
// from the decisions alone, and through a text stream.
func TestApprovalTyped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	model := func() *scripted.Model {
		return scripted.New(steps(calls(call("c1", "transfer", Transfer{"bob", 500})), text("sent 500")))
	}

	t.Run("without memory", func(t *testing.T) {
		t.Parallel()
		var b bank
		m := model()
		pay, err := ai.Func[string, ai.Result[string]](m, ai.Tools(b.tool()), ai.Approval(above100), ai.System("You pay people."))
		if err != nil {
			t.Fatal(err)
		}
		_, err = pay(ctx, "pay bob 500")
		var ie *ai.InterruptError
		if !errors.As(err, &ie) || ie.Interrupt.Calls[0].ID != "c1" || !strings.Contains(err.Error(), "transfer (c1)") {
			t.Fatalf("err = %v, want an InterruptError", err)
		}
		res, err := pay(ai.Resume(ctx, ie, ai.Approve("c1")), "pay bob 500")
		if err != nil {
			t.Fatal(err)
		}
		if res.Value != "sent 500" || len(b.made()) != 1 {
			t.Errorf("value %q, transfers %v", res.Value, b.made())
		}
		sent := m.Requests()[1].Messages
		if got := texts(sent); len(got) != 4 || got[0] != "system:You pay people." || got[1] != "user:pay bob 500" {
			t.Errorf("the resumed request %q", got)
		}
	})

	t.Run("with memory", func(t *testing.T) {
		t.Parallel()
		var b bank
		type Pay struct {
			ID   ai.MemoryID
			Text string
		}
		chats := memory.MessageWindow(20)
		pay, err := ai.Func[Pay, string](model(), ai.Tools(b.tool()), ai.Approval(above100), ai.MemoryPerID(chats), ai.User("{{.Text}}"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = pay(ctx, Pay{"u1", "pay bob 500"})
		var ie *ai.InterruptError
		if !errors.As(err, &ie) {
			t.Fatalf("err = %v", err)
		}
		got, err := pay(ai.Resume(ctx, nil, ai.Approve(ie.Interrupt.Calls[0].ID)), Pay{"u1", "ignored"})
		if err != nil || got != "sent 500" || len(b.made()) != 1 {
			t.Fatalf("resumed: %q, %v, transfers %v", got, err, b.made())
		}
	})

	t.Run("stream", func(t *testing.T) {
		t.Parallel()
		var b bank
		pay, err := ai.StreamFunc[string](model(), ai.Tools(b.tool()), ai.Approval(above100))
		if err != nil {
			t.Fatal(err)
		}
		var ie *ai.InterruptError
		for _, err := range pay(ctx, "pay bob 500") {
			if err != nil && !errors.As(err, &ie) {
				t.Fatal(err)
			}
		}
		if ie == nil {
			t.Fatal("the stream ended without an InterruptError")
		}
		var text string
		for piece, err := range pay(ai.Resume(ctx, ie, ai.Approve("c1")), "pay bob 500") {
			if err != nil {
				t.Fatal(err)
			}
			text += piece
		}
		if text != "sent 500" || len(b.made()) != 1 {
			t.Errorf("resumed stream %q, transfers %v", text, b.made())
		}
	})
}

// TestApprovalWithClientTools checks a round that calls the caller's tool
// and one needing approval: both wait, and one turn answers both, the
// caller's with ToolResults and the other with a decision.
func TestApprovalWithClientTools(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var b bank
	m := scripted.New(steps(calls(call("l1", "lookup", `{"q":"bob"}`), call("c1", "transfer", Transfer{"bob", 500})), text("done")))
	e, err := ai.NewEngine(m, ai.Tools(b.tool()), ai.Approval(tool.Always))
	if err != nil {
		t.Fatal(err)
	}
	client := []llm.ToolSpec{lookupSpec}
	out, err := e.Do(ctx, ai.Turn{Message: llm.UserMessage("pay bob"), ClientTools: client})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Pending) != 1 || out.Pending[0].ID != "l1" || out.Interrupt == nil || len(out.Interrupt.Calls) != 1 || out.Interrupt.Calls[0].ID != "c1" {
		t.Fatalf("pending %v, interrupt %+v", out.Pending, out.Interrupt)
	}
	lookup := llm.ToolResultMessage("l1", "lookup", "bob is known", false)
	// A decision cannot stand in for the caller's result, nor the engine
	// run the caller's tool.
	if _, err := e.Do(ctx, ai.Turn{History: out.Messages, Decisions: []ai.Decision{ai.Approve("l1"), ai.Approve("c1")}, ClientTools: client}); !errors.Is(err, tool.ErrUnknownTool) {
		t.Errorf("approving the caller's call: err = %v", err)
	}
	next, err := e.Do(ctx, ai.Turn{History: out.Messages, ToolResults: []llm.Message{lookup}, Decisions: []ai.Decision{ai.Approve("c1")}, ClientTools: client})
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(next.Messages); !slices.Equal(got, []string{"tool:bob is known", `tool:sent {"to":"bob","amount":500}`, "assistant:done"}) {
		t.Errorf("messages %q", got)
	}
	if len(b.made()) != 1 {
		t.Errorf("transfers %v", b.made())
	}
}

// TestApprovalInterruptRecord checks that, with a memory and no Turn.ID,
// the stored message that made the waiting calls is named after the
// interrupt's random id, and that a turn without an ID resumes it.
func TestApprovalInterruptRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var b bank
	e, err := ai.NewEngine(scripted.New(steps(calls(call("c1", "transfer", Transfer{"bob", 500})), text("sent"))), ai.Tools(b.tool()), ai.Approval(tool.Always))
	if err != nil {
		t.Fatal(err)
	}
	store := memory.NewInMemory()
	key := memory.Key{Session: "s"}
	chat := memory.NewChat(store, key, memory.Window{MaxMessages: 20})
	ids := map[string]bool{}
	out, err := e.Do(ctx, ai.Turn{Memory: chat, Message: llm.UserMessage("pay")})
	if err != nil || out.Interrupt == nil {
		t.Fatalf("%v, %+v", err, out)
	}
	ids[out.Interrupt.ID] = true
	recs := loadAll(t, store, key)
	if last := recs[len(recs)-1]; last.ID != out.Interrupt.ID || len(last.Message.ToolCalls) != 1 {
		t.Errorf("the calls' record is %q, the interrupt %q", last.ID, out.Interrupt.ID)
	}
	if _, err := e.Do(ctx, ai.Turn{Memory: chat, Decisions: []ai.Decision{ai.Approve("c1")}}); err != nil || len(b.made()) != 1 {
		t.Fatalf("resume: %v, transfers %v", err, b.made())
	}
	// Another interrupt gets another id.
	e2, _ := ai.NewEngine(scripted.New(steps(calls(call("c2", "transfer", Transfer{"ann", 5})))), ai.Tools(b.tool()), ai.Approval(tool.Always))
	out, err = e2.Do(ctx, ai.Turn{Memory: chat, Message: llm.UserMessage("pay ann")})
	if err != nil || out.Interrupt == nil || ids[out.Interrupt.ID] {
		t.Errorf("second interrupt %+v, %v", out.Interrupt, err)
	}
}
