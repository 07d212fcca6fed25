package tool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/weftlabs/weft/tool"
)

// Paging is embedded through a pointer: its defaulted field is a parameter.
type Paging struct {
	Page int `json:"page" default:"1"`
}

type SearchArgs struct {
	*Paging
	Query string   `json:"query"`
	Limit int      `json:"limit" default:"5"`
	Unit  string   `json:"unit" default:"celsius"`
	Tags  []string `json:"tags" default:"[\"news\"]"`
	Exact *bool    `json:"exact" default:"true"`
}

func (a SearchArgs) String() string {
	return fmt.Sprintf("%s page=%d limit=%d unit=%s tags=%q exact=%v", a.Query, a.Page, a.Limit, a.Unit, a.Tags, *a.Exact)
}

// TestDefaults: a parameter the model leaves out (or sets to null) gets
// its `default`; one it gives, zero included, keeps the model's value.
func TestDefaults(t *testing.T) {
	t.Parallel()
	search := tool.Func("search", "", func(ctx context.Context, a SearchArgs) (string, error) {
		s := a.String()
		if len(a.Tags) > 0 {
			a.Tags[0] = "changed" // must not reach the next call's default
		}
		return s, nil
	})
	if p := string(search.Spec().Parameters); !strings.Contains(p, `"limit":{"type":"integer","default":5}`) || !strings.Contains(p, `"required":["query"]`) {
		t.Errorf("parameters %s lack the default or still require it", p)
	}
	tests := []struct{ args, want string }{
		{`{"query":"q"}`, `q page=1 limit=5 unit=celsius tags=["news"] exact=true`},
		{`{"query":"q"}`, `q page=1 limit=5 unit=celsius tags=["news"] exact=true`}, // again: the default is not shared
		{`{"query":"q","limit":0,"unit":"","tags":[],"exact":false,"page":0}`, `q page=0 limit=0 unit= tags=[] exact=false`},
		{`{"query":"q","limit":null,"unit":null,"tags":null,"exact":null,"page":null}`, `q page=1 limit=5 unit=celsius tags=["news"] exact=true`},
		{`{"query":"q","LIMIT":2,"Page":3}`, `q page=3 limit=2 unit=celsius tags=["news"] exact=true`},
		{`{"query":"q","limit":2,"limit":null}`, `q page=1 limit=5 unit=celsius tags=["news"] exact=true`},
		{`{"query":"q","x":{"limit":7}}`, `q page=1 limit=5 unit=celsius tags=["news"] exact=true`},
	}
	for _, tt := range tests {
		res, err := search.Call(context.Background(), json.RawMessage(tt.args))
		if err != nil || res.Content != tt.want {
			t.Errorf("Call(%s) = %q, %v; want %q", tt.args, res.Content, err, tt.want)
		}
	}

	// A tool without required parameters gets its defaults from no
	// arguments at all.
	page := tool.Func("page", "", func(ctx context.Context, p *Paging) (int, error) { return p.Page, nil })
	for _, args := range []string{``, `null`, `{}`} {
		if res, err := page.Call(context.Background(), json.RawMessage(args)); err != nil || res.Content != "1" {
			t.Errorf("Call(%q) = %q, %v; want 1", args, res.Content, err)
		}
	}
}

type Pager struct{}

func (Pager) List(ctx context.Context, p Paging) (int, error) { return p.Page, nil }

func TestDefaultsFromMethods(t *testing.T) {
	t.Parallel()
	tools, err := tool.FromMethods(Pager{})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := tools[0].Call(context.Background(), json.RawMessage(`{}`)); err != nil || res.Content != "1" {
		t.Errorf("list({}) = %q, %v; want 1", res.Content, err)
	}
}

type Nested struct {
	Query string `json:"query"`
	Opts  struct {
		Limit int `json:"limit" default:"5"`
	} `json:"opts"`
}

type NestedLister struct{}

func (NestedLister) List(ctx context.Context, n []Nested) (int, error) { return len(n), nil }

func (NestedLister) Find(ctx context.Context, n Nested) (int, error) { return n.Opts.Limit, nil }

// TestDefaultsNestedRefused: a default inside a nested object would be
// announced and never applied, so declaring one is an error.
func TestDefaultsNestedRefused(t *testing.T) {
	t.Parallel()
	nested := tool.Func("nested", "", func(ctx context.Context, n Nested) (int, error) { return n.Opts.Limit, nil })
	if _, err := tool.NewSet(nested); err == nil || !strings.Contains(err.Error(), "opts.limit has a default") {
		t.Errorf("NewSet err = %v, want one naming opts.limit", err)
	}
	if _, err := tool.FromMethods(NestedLister{}); err == nil || !strings.Contains(err.Error(), "opts.limit has a default") {
		t.Errorf("FromMethods err = %v, want one naming opts.limit", err)
	}
	bad := tool.Func("bad", "", func(ctx context.Context, in struct {
		N int `json:"n" default:"many"`
	}) (int, error) {
		return in.N, nil
	})
	if _, err := tool.NewSet(bad); err == nil || !strings.Contains(err.Error(), `default "many"`) {
		t.Errorf("NewSet err = %v, want one naming the default", err)
	}
}

// DefArgs has a defaulted and a required parameter, for the fuzz below.
type DefArgs struct {
	A int `json:"a" default:"7"`
	B int `json:"b"`
}

// FuzzDefaultsMatchEncodingJSON is a differential fuzz of the default check
// (a scan of the raw arguments) against encoding/json: a accepted call has
// the default of a exactly when the last key encoding/json matches to a is
// absent or null, and the model's value otherwise.
func FuzzDefaultsMatchEncodingJSON(f *testing.F) {
	for _, s := range []string{`{"b":1}`, `{"a":1,"b":2}`, `{"A":0,"b":1}`, `{"a":1,"b":2,"a":null}`, `{"x":{"a":1},"b":1}`, `{"a\u0041":1,"b":1}`, `{"b":1, "a" : null }`} {
		f.Add(s)
	}
	tl := tool.Func("def", "", func(ctx context.Context, in DefArgs) (int, error) { return in.A, nil })
	f.Fuzz(func(t *testing.T, args string) {
		var obj map[string]json.RawMessage
		if json.Unmarshal([]byte(args), &obj) != nil {
			return
		}
		var in DefArgs
		if json.Unmarshal([]byte(args), &in) != nil {
			return
		}
		res, err := tl.Call(context.Background(), json.RawMessage(args))
		if err != nil {
			return // b missing or null: the required check's own fuzz covers it
		}
		want := in.A
		if last, ok := lastValue(args, "a"); !ok || string(last) == "null" {
			want = 7
		}
		if res.Content != fmt.Sprint(want) {
			t.Errorf("Call(%s) a = %s, want %d", args, res.Content, want)
		}
	})
}
