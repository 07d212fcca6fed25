package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/tool"
)

type Payment struct {
	To       string `json:"to"`
	Amount   int    `json:"amount" default:"500"`
	Currency string `json:"currency,omitempty"`
}

func TestApprovers(t *testing.T) {
	t.Parallel()
	large := tool.When(func(p Payment) bool { return p.Amount > 100 })
	policy := tool.Approvals{"pay": large, "delete": tool.Always, "read": tool.Never}
	for _, tt := range []struct {
		name, args string
		want       bool
	}{
		{"pay", `{"to":"bob","amount":50}`, false},
		{"pay", `{"to":"bob","amount":150}`, true},
		{"pay", `{"to":"bob"}`, true},              // the default, 500, is what would run
		{"pay", `{"to":"bob","amount":"x"}`, true}, // undecodable arguments are shown to a person
		{"pay", `{"to":`, true},
		{"delete", `{}`, true},
		{"read", `{}`, false},
		{"other", `{}`, false},
	} {
		got, err := policy.NeedsApproval(context.Background(), llm.ToolCall{ID: "1", Name: tt.name, Arguments: tt.args})
		if err != nil || got != tt.want {
			t.Errorf("%s %s: %v, %v; want %v", tt.name, tt.args, got, err, tt.want)
		}
	}
	boom := errors.New("boom")
	f := tool.ApproverFunc(func(context.Context, llm.ToolCall) (bool, error) { return false, boom })
	if _, err := (tool.Approvals{"pay": f}).NeedsApproval(context.Background(), llm.ToolCall{Name: "pay"}); !errors.Is(err, boom) {
		t.Errorf("err = %v", err)
	}
}

type Item struct {
	SKU string `json:"sku"`
	Qty int    `json:"qty"`
}

type Order struct {
	Items []Item `json:"items"`
	Note  string `json:"note,omitempty"`
}

func TestCheckArguments(t *testing.T) {
	t.Parallel()
	order := tool.Func("order", "Order items.", func(ctx context.Context, in Order) (string, error) { return "ok", nil })
	refSpec := llm.ToolSpec{Name: "ref", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`)}
	draft7 := llm.ToolSpec{Name: "draft7", Parameters: json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"]}`)}
	set, err := tool.NewSet(order, specTool{refSpec}, specTool{draft7})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		tool, args string
		field, msg string // "" and "": valid
	}{
		{"order", `{"items":[{"sku":"a","qty":1}]}`, "", ""},
		{"order", `{"items":[{"sku":"a","qty":"one"}]}`, "items.0.qty", "got string, want integer"},
		{"order", `{"items":[{"qty":1}]}`, "items.0.sku", "required but missing"},
		{"order", `{"items":[],"colour":"red"}`, "colour", "unknown field"},
		{"order", `{}`, "items", "required but missing"},
		{"order", `[]`, "", "must be a JSON object"},
		{"order", `{"items":`, "", "not JSON"},
		{"draft7", `{"n":0}`, "n", "minimum"},
		{"draft7", `{"n":2}`, "", ""},
		// A schema that refers to another document loads none: only the
		// object is checked.
		{"ref", `{"a":1}`, "", ""},
	} {
		err := set.CheckArguments(tt.tool, json.RawMessage(tt.args))
		if tt.msg == "" {
			if err != nil {
				t.Errorf("%s %s: %v", tt.tool, tt.args, err)
			}
			continue
		}
		var ae *tool.ArgumentError
		if !errors.As(err, &ae) || ae.Field != tt.field || ae.Tool != tt.tool || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s %s: err = %v (field %q), want field %q and %q", tt.tool, tt.args, err, fieldOf(ae), tt.field, tt.msg)
		}
	}
	if err := set.CheckArguments("nope", json.RawMessage(`{}`)); !errors.Is(err, tool.ErrUnknownTool) {
		t.Errorf("unknown tool: %v", err)
	}
	big := `{"items":[],"note":"` + strings.Repeat("x", tool.MaxCheckedArgumentBytes) + `"}`
	if err := set.CheckArguments("order", json.RawMessage(big)); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("oversized arguments: %v", err)
	}
}

func fieldOf(ae *tool.ArgumentError) string {
	if ae == nil {
		return ""
	}
	return ae.Field
}

// specTool is a tool with a given spec that is never called.
type specTool struct{ spec llm.ToolSpec }

func (s specTool) Spec() llm.ToolSpec { return s.spec }
func (s specTool) Call(context.Context, json.RawMessage) (tool.Result, error) {
	return tool.Result{}, errors.New("not callable")
}

// FuzzCheckArguments checks that any arguments are either accepted or
// refused with an *ArgumentError, never a panic, and that accepted ones
// decode.
func FuzzCheckArguments(f *testing.F) {
	for _, s := range []string{`{"items":[{"sku":"a","qty":1}]}`, `{"items":[{"qty":"x"}]}`, `[]`, `null`, `{"items":`, `{"items":[],"note":"\u0000"}`} {
		f.Add(s)
	}
	order := tool.Func("order", "Order items.", func(ctx context.Context, in Order) (string, error) { return "ok", nil })
	set, err := tool.NewSet(order)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, args string) {
		err := set.CheckArguments("order", json.RawMessage(args))
		if err != nil {
			if !errors.As(err, new(*tool.ArgumentError)) {
				t.Fatalf("%q: %v is not an ArgumentError", args, err)
			}
			return
		}
		var o Order
		if err := json.Unmarshal([]byte(args), &o); err != nil {
			t.Fatalf("%q passed the check but does not decode: %v", args, err)
		}
	})
}
