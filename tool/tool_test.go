package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/tool"
)

type AddArgs struct {
	A int `json:"a" description:"first"`
	B int `json:"b"`
	C int `json:"c,omitempty"`
}

func add(ctx context.Context, in AddArgs) (int, error) { return in.A + in.B + in.C, nil }

func TestFunc(t *testing.T) {
	t.Parallel()
	tl := tool.Func("add", "Adds numbers.", add)
	spec := tl.Spec()
	if spec.Name != "add" || !strings.Contains(string(spec.Parameters), `"required":["a","b"]`) {
		t.Errorf("spec = %s %s", spec.Name, spec.Parameters)
	}
	tests := []struct {
		args, want, wantErr string
	}{
		{`{"a":1,"b":2}`, "3", ""},
		{`{"a":1,"b":2,"c":3}`, "6", ""},
		{` {"B":2, "a":1} `, "3", ""}, // encoding/json matches names case-insensitively
		{`{"a":1}`, "", `argument "b": required but missing`},
		{``, "", `argument "a": required but missing`},
		{`{"a":"1","b":2}`, "", `argument "a": expected integer, got string`},
		{`{"a":1,"b":2`, "", "invalid arguments: unexpected end of JSON input"},
		{`[1,2]`, "", "invalid arguments: expected a JSON object, got array"},
		{`{"x":{"a":1},"b":2}`, "", `argument "a": required but missing`},
		{`{"a\u0000":1,"a":1,"b":1}`, "2", ""},
	}
	for _, tt := range tests {
		res, err := tl.Call(context.Background(), json.RawMessage(tt.args))
		if tt.wantErr != "" {
			var ae *tool.ArgumentError
			if !errors.As(err, &ae) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Call(%s) err = %v, want %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil || res.Content != tt.want {
			t.Errorf("Call(%s) = %q, %v; want %q", tt.args, res.Content, err, tt.want)
		}
	}
}

type Calc struct{ base int }

func (c Calc) Double(ctx context.Context, in struct {
	N int `json:"n"`
}) (int, error) {
	return 2*in.N + c.base, nil
}

func (c Calc) GetHTTPStatus(ctx context.Context, in struct{}) (string, error) { return "ok", nil }

func (c Calc) Fail(ctx context.Context, in struct{}) (string, error) {
	return "", errors.New("nope")
}

func (c Calc) NotATool(x int) int { return x }

func (c Calc) ToolDescriptions() map[string]string {
	return map[string]string{"Double": "Doubles n."}
}

func TestFromMethods(t *testing.T) {
	t.Parallel()
	tools, err := tool.FromMethods(Calc{base: 1})
	if err != nil {
		t.Fatal(err)
	}
	set, err := tool.NewSet(tools...)
	if err != nil {
		t.Fatal(err)
	}
	if got := set.Names(); got != "double, fail, get_http_status" {
		t.Errorf("names = %q", got)
	}
	d, _ := set.Lookup("double")
	if d.Spec().Description != "Doubles n." {
		t.Errorf("description = %q", d.Spec().Description)
	}
	res, err := d.Call(context.Background(), json.RawMessage(`{"n":4}`))
	if err != nil || res.Content != "9" {
		t.Errorf("double = %q, %v", res.Content, err)
	}
	if _, err := tool.FromMethods(struct{}{}); err == nil {
		t.Error("a value without tool methods is not an error")
	}
}

func TestNewSetValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		tools []tool.Tool
		want  string
	}{
		{"duplicate", []tool.Tool{tool.Func("add", "", add), tool.Func("add", "", add)}, `two tools are named "add"`},
		{"bad name", []tool.Tool{tool.Func("add numbers", "", add)}, `name "add numbers" must match`},
		{"no schema", []tool.Tool{tool.Func("c", "", func(ctx context.Context, in chan int) (int, error) { return 0, nil })}, `tool "c": parameters`},
		{"nil func", []tool.Tool{tool.Func[AddArgs, int]("n", "", nil)}, "nil function"},
		{"nil tool", []tool.Tool{nil}, "nil tool"},
	}
	for _, tt := range tests {
		if _, err := tool.NewSet(tt.tools...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestExecutorPolicies(t *testing.T) {
	t.Parallel()
	boom := tool.Func("boom", "", func(ctx context.Context, in struct{}) (string, error) { panic("kaboom") })
	fail := tool.Func("fail", "", func(ctx context.Context, in struct{}) (string, error) { return "", errors.New("broken") })
	big := tool.Func("big", "", func(ctx context.Context, in struct{}) (string, error) { return strings.Repeat("é", 10), nil })
	silent := tool.Func("silent", "", func(ctx context.Context, in struct{}) (string, error) { return "", fmt.Errorf("%w", silentError{}) })
	set, err := tool.NewSet(tool.Func("add", "", add), boom, fail, big, silent)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		exec    tool.Executor
		call    llm.ToolCall
		content string
		isErr   bool
		abort   bool
	}{
		{"ok", tool.Executor{}, llm.ToolCall{Name: "add", Arguments: `{"a":1,"b":1}`}, "2", false, false},
		{"panic to model", tool.Executor{}, llm.ToolCall{Name: "boom"}, "Error: tool panicked: kaboom", true, false},
		{"panic aborts", tool.Executor{OnError: tool.Abort}, llm.ToolCall{Name: "boom"}, "Error: tool panicked: kaboom", true, true},
		{"error to model", tool.Executor{}, llm.ToolCall{Name: "fail"}, "Error: broken", true, false},
		{"unknown", tool.Executor{}, llm.ToolCall{Name: "sub"}, `Error: there is no tool named "sub". Available tools: add, boom, fail, big, silent.`, true, false},
		{"unknown aborts", tool.Executor{OnUnknown: tool.Abort}, llm.ToolCall{Name: "sub"}, `Error: there is no tool named "sub"`, true, true},
		{"bad args", tool.Executor{OnError: tool.Abort}, llm.ToolCall{Name: "add", Arguments: `{"a":1}`}, `Error: tool add: argument "b": required but missing`, true, false},
		{"bad args abort", tool.Executor{OnBadArguments: tool.Abort}, llm.ToolCall{Name: "add", Arguments: `{`}, "Error: tool add: invalid arguments", true, true},
		{"empty message names the type", tool.Executor{}, llm.ToolCall{Name: "silent"}, "Error: tool_test.silentError (no message)", true, false},
		{"truncated on rune boundary", tool.Executor{MaxResultBytes: 5}, llm.ToolCall{Name: "big"}, "éé\n[truncated: 16 more bytes]", false, false},
	}
	for _, tt := range tests {
		tt.exec.Tools = set
		got, err := tt.exec.Run(context.Background(), []llm.ToolCall{tt.call}, nil)
		var ab *tool.AbortError
		if tt.abort != errors.As(err, &ab) {
			t.Errorf("%s: err = %v, abort %v", tt.name, err, tt.abort)
		}
		if len(got) != 1 || !strings.HasPrefix(got[0].Content, tt.content) || got[0].IsError != tt.isErr {
			t.Errorf("%s: got %+v, want content %q error %v", tt.name, got, tt.content, tt.isErr)
		}
	}
}

// TestUnknownAnswer: Executor.UnknownAnswer writes the answer to a call of
// a tool that does not exist; the call is still an unknown-tool failure
// under OnUnknown.
func TestUnknownAnswer(t *testing.T) {
	t.Parallel()
	set, err := tool.NewSet(tool.Func("add", "", add), tool.Func("sub", "", add))
	if err != nil {
		t.Fatal(err)
	}
	var gotSet *tool.Set
	answer := func(name string, tools *tool.Set) string {
		gotSet = tools
		return "No " + name + " here; try one of " + tools.Names() + "."
	}
	exec := tool.Executor{Tools: set, UnknownAnswer: answer}
	out, err := exec.Run(context.Background(), []llm.ToolCall{{ID: "1", Name: "mul"}}, nil)
	x := out[0]
	if err != nil || x.Content != "No mul here; try one of add, sub." || !x.IsError || !errors.Is(x.Err, tool.ErrUnknownTool) || gotSet != set {
		t.Errorf("got %+v, %v", x, err)
	}
	exec.OnUnknown = tool.Abort
	out, err = exec.Run(context.Background(), []llm.ToolCall{{ID: "1", Name: "mul"}}, nil)
	var ab *tool.AbortError
	if !errors.As(err, &ab) || !strings.HasPrefix(out[0].Content, "No mul here") {
		t.Errorf("abort: %+v, %v", out[0], err)
	}
	// Known tools never reach it.
	out, _ = exec.Run(context.Background(), []llm.ToolCall{{ID: "1", Name: "add", Arguments: `{"a":1,"b":2}`}}, nil)
	if out[0].Content != "3" {
		t.Errorf("add = %q", out[0].Content)
	}
}

// silentError is an error with an empty message.
type silentError struct{}

func (silentError) Error() string { return "" }

func FuzzArguments(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":2}`, `{"a":"x"}`, `{`, ``, `{"a\"":1}`, `{"x":[{"a":1}],"b":2}`, `null`} {
		f.Add(s)
	}
	tl := tool.Func("add", "", add)
	f.Fuzz(func(t *testing.T, args string) {
		res, err := tl.Call(context.Background(), json.RawMessage(args))
		if err == nil && res.Content == "" {
			t.Error("success without content")
		}
	})
}

// Wide has 70 required fields: the required check must see all of them.
type Wide struct {
	F00, F01, F02, F03, F04, F05, F06, F07, F08, F09 int
	F10, F11, F12, F13, F14, F15, F16, F17, F18, F19 int
	F20, F21, F22, F23, F24, F25, F26, F27, F28, F29 int
	F30, F31, F32, F33, F34, F35, F36, F37, F38, F39 int
	F40, F41, F42, F43, F44, F45, F46, F47, F48, F49 int
	F50, F51, F52, F53, F54, F55, F56, F57, F58, F59 int
	F60, F61, F62, F63, F64, F65, F66, F67, F68, F69 int
}

func TestRequiredBeyond64Fields(t *testing.T) {
	t.Parallel()
	tl := tool.Func("wide", "wide", func(ctx context.Context, in Wide) (int, error) { return in.F69, nil })
	all := map[string]int{}
	for i := range 70 {
		all[fmt.Sprintf("F%02d", i)] = i
	}
	b, _ := json.Marshal(all)
	if res, err := tl.Call(context.Background(), b); err != nil || res.Content != "69" {
		t.Fatalf("all fields: %q, %v", res.Content, err)
	}
	delete(all, "F69")
	b, _ = json.Marshal(all)
	_, err := tl.Call(context.Background(), b)
	if err == nil || !strings.Contains(err.Error(), `argument "F69": required but missing`) {
		t.Errorf("F69 missing: err = %v", err)
	}
}

func TestRequiredNull(t *testing.T) {
	t.Parallel()
	type Args struct {
		A    int             `json:"a"`
		S    []string        `json:"s"`
		Any  any             `json:"any"`
		Raw  json.RawMessage `json:"raw"`
		Opt  *int            `json:"opt"`
		Omit int             `json:"omit,omitempty"`
	}
	tl := tool.Func("n", "n", func(ctx context.Context, in Args) (string, error) { return "ok", nil })
	tests := []struct{ args, wantErr string }{
		{`{"a":1,"s":[],"any":null,"raw":null,"opt":null,"omit":null}`, ""},
		{`{"a":null,"s":[],"any":1,"raw":1}`, `argument "a": required but null`},
		{`{"a":1,"s" : null,"any":1,"raw":1}`, `argument "s": required but null`},
		{`{"a":1,"s":["null"],"any":1,"raw":1, "x":{"a":null}}`, ""},
	}
	for _, tt := range tests {
		_, err := tl.Call(context.Background(), json.RawMessage(tt.args))
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("Call(%s) = %v", tt.args, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("Call(%s) err = %v, want %q", tt.args, err, tt.wantErr)
		}
	}
}

// FuzzRequiredMatchesEncodingJSON is a differential fuzz of the required
// check (a scan of the raw arguments) against encoding/json: a decoded
// call is accepted exactly when every required key is present, matched as
// encoding/json matches names, and its last value is not null.
func FuzzRequiredMatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":2}`, `{"A":1,"b":null}`, `{"a":1,"b":2,"a":null}`, `{"x":{"b":1},"a":1}`, `{"a\u0062":1}`, `{"b":1, "a" : null }`, `{"K":1,"a":1,"b":1}`} {
		f.Add(s)
	}
	tl := tool.Func("add", "", add)
	f.Fuzz(func(t *testing.T, args string) {
		var in AddArgs
		if json.Unmarshal([]byte(args), &in) != nil {
			return
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal([]byte(args), &obj) != nil {
			return // valid for AddArgs but not an object: null
		}
		// encoding/json prefers an exact match, then the last key equal
		// under case folding; for a and b the order of keys decides.
		want := true
		for _, name := range []string{"a", "b"} {
			last, ok := lastValue(args, name)
			if !ok || string(last) == "null" {
				want = false
			}
		}
		_, err := tl.Call(context.Background(), json.RawMessage(args))
		if got := err == nil; got != want {
			t.Errorf("Call(%s) err = %v, encoding/json says accepted=%v", args, err, want)
		}
	})
}

// lastValue returns the value of the last top-level key of obj that
// encoding/json would match to the field name (case-insensitively), using
// encoding/json's own decoder to walk the object.
func lastValue(obj, name string) (json.RawMessage, bool) {
	dec := json.NewDecoder(strings.NewReader(obj))
	if _, err := dec.Token(); err != nil {
		return nil, false
	}
	var val json.RawMessage
	found := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return nil, false
		}
		if strings.EqualFold(tok.(string), name) {
			val, found = v, true
		}
	}
	return val, found
}
