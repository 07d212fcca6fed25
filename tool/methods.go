package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode"

	"github.com/weftlabs/weft/jsonschema"
	"github.com/weftlabs/weft/llm"
)

// Describer is implemented by values given to [FromMethods] to describe
// their tools: it maps method names to descriptions.
type Describer interface {
	ToolDescriptions() map[string]string
}

var (
	ctxType   = reflect.TypeFor[context.Context]()
	errorType = reflect.TypeFor[error]()
)

// FromMethods returns a tool for each exported method of v with the shape
// func(ctx context.Context, in In) (Out, error). The tool's name is the
// method's name in snake_case (GetWeather → get_weather); its description
// comes from v's ToolDescriptions (see [Describer]). Methods of other shapes
// are not tools and are skipped; a v without any tool method is an error.
func FromMethods(v any, opts ...FuncOption) ([]Tool, error) {
	var cfg funcConfig
	for _, o := range opts {
		o(&cfg)
	}
	rv := reflect.ValueOf(v)
	if !rv.IsValid() {
		return nil, errors.New("tool: FromMethods(nil)")
	}
	var desc map[string]string
	if d, ok := v.(Describer); ok {
		desc = d.ToolDescriptions()
	}
	rt := rv.Type()
	var tools []Tool
	for i := range rt.NumMethod() {
		m := rt.Method(i)
		ft := m.Type // receiver first
		if ft.NumIn() != 3 || ft.NumOut() != 2 || ft.In(1) != ctxType || ft.Out(1) != errorType {
			continue
		}
		in := ft.In(2)
		params, err := jsonschema.ForType(in)
		if err != nil {
			return nil, fmt.Errorf("tool: method %s.%s: parameters: %w", rt, m.Name, err)
		}
		name := snake(m.Name)
		args, err := newArgDecoder(name, params, in)
		if err != nil {
			return nil, fmt.Errorf("tool: method %s.%s: parameters: %w", rt, m.Name, err)
		}
		tools = append(tools, &methodTool{
			spec:      llm.ToolSpec{Name: name, Description: desc[m.Name], Parameters: params},
			fn:        rv.Method(i),
			in:        in,
			args:      args,
			immediate: cfg.immediate,
		})
	}
	if len(tools) == 0 {
		return nil, fmt.Errorf("tool: %s has no method of the form func(context.Context, In) (Out, error)", rt)
	}
	return tools, nil
}

// methodTool calls a method through reflection: FromMethods cannot know
// the types at compile time. Use Func where the cost matters.
type methodTool struct {
	spec      llm.ToolSpec
	fn        reflect.Value
	in        reflect.Type
	args      *argDecoder
	immediate bool
}

func (t *methodTool) Spec() llm.ToolSpec { return t.spec }

func (t *methodTool) Call(ctx context.Context, args json.RawMessage) (Result, error) {
	in := reflect.New(t.in)
	if err := t.args.decode(args, in.Interface()); err != nil {
		return Result{}, err
	}
	out := t.fn.Call([]reflect.Value{reflect.ValueOf(ctx), in.Elem()})
	if err, _ := out[1].Interface().(error); err != nil {
		return Result{}, err
	}
	v := out[0].Interface()
	if r, ok := v.(Result); ok {
		r.Immediate = r.Immediate || t.immediate
		return r, nil
	}
	content, err := encode(v)
	if err != nil {
		return Result{}, fmt.Errorf("tool %s: encode result: %w", t.spec.Name, err)
	}
	return Result{Content: content, Immediate: t.immediate}, nil
}

// snake turns a Go method name into a tool name: GetWeather → get_weather,
// ParseURLPath → parse_url_path.
func snake(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		if unicode.IsUpper(r) {
			if i > 0 && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]) ||
				(i+1 < len(rs) && unicode.IsLower(rs[i+1]))) {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
