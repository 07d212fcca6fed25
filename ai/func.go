package ai

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"

	"github.com/weftlabs/weft/llm"
)

// Func declares a typed call to model: a function from In to Out that runs
// the pipeline (see the package documentation).
//
// In is the argument. A string In is the user message itself unless a User
// template is given; any other In needs a User template, rendered over it
// (and may have a System template). When In is a struct, fields of the
// types MemoryID, UserName, Params (or *Params), llm.Image, *llm.Image and
// []llm.Image are taken for what their type says (the memory to use, the
// user's name, per-call model parameters, images added to the user
// message) and are available to templates too.
//
// Out is what the answer becomes: string; llm.Message; bool; an integer or
// float type; time.Time; an enum (a string type implementing
// jsonschema.Enum); a struct, slice, map or pointer (decoded from JSON
// described to the model by JSON Schema); or Result[T] of any of these,
// which adds the turn's usage, sources and tool executions.
//
// Everything that can be checked before a call is checked here: templates
// against In, Out's schema, tools' names, a MemoryID without memory.
func Func[In, Out any](model llm.ChatModel, opts ...Option) (func(ctx context.Context, in In) (Out, error), error) {
	p, fields, err := compile[In](model, opts, "ai.Func", reflect.TypeFor[Out]())
	if err != nil {
		return nil, err
	}
	if (p.out.kind == kindText || p.out.kind == kindMessage) && !p.result {
		// No parsing: the value is taken from the outcome and can live on
		// the stack. Out's kind is string or Out is llm.Message (checked
		// by newCodec).
		return func(ctx context.Context, in In) (Out, error) {
			var out Out
			t, err := p.turnOf(reflect.ValueOf(&in).Elem(), fields)
			if err != nil {
				return out, err
			}
			ctx, history := p.eng.resumed(ctx, &t)
			o, err := p.eng.run(ctx, &t, nil)
			if err != nil {
				return out, err
			}
			if err := interrupted(o, history); err != nil {
				return out, err
			}
			switch d := any(&out).(type) {
			case *string:
				*d = o.Text
			case *llm.Message:
				*d = o.Message
			default: // a named string type
				reflect.ValueOf(&out).Elem().SetString(o.Text)
			}
			return out, nil
		}, nil
	}
	if p.out.kind == kindText || p.out.kind == kindMessage {
		return func(ctx context.Context, in In) (Out, error) {
			var zero Out
			t, err := p.turnOf(reflect.ValueOf(&in).Elem(), fields)
			if err != nil {
				return zero, err
			}
			ctx, history := p.eng.resumed(ctx, &t)
			o, err := p.eng.run(ctx, &t, nil)
			if err != nil {
				return zero, err
			}
			if err := interrupted(o, history); err != nil {
				return zero, err
			}
			out := new(Out)
			rp := any(out).(resultOut)
			rp.setOutcome(o)
			fillOutcome(p.out.kind, o, rp.valuePtr())
			return *out, nil
		}, nil
	}
	return func(ctx context.Context, in In) (Out, error) {
		var zero Out
		t, err := p.turnOf(reflect.ValueOf(&in).Elem(), fields)
		if err != nil {
			return zero, err
		}
		out := new(Out)
		var dst any = out
		rp, isResult := dst.(resultOut)
		if isResult {
			dst = rp.valuePtr()
		}
		t.Output = p.output(dst)
		ctx, history := p.eng.resumed(ctx, &t)
		o, err := p.eng.run(ctx, &t, nil)
		if err != nil {
			return zero, err
		}
		if err := interrupted(o, history); err != nil {
			return zero, err
		}
		if isResult {
			rp.setOutcome(o)
		}
		return *out, nil
	}, nil
}

// fillOutcome stores the outcome's text or message into dst.
func fillOutcome(kind codecKind, o *Outcome, dst any) {
	switch d := dst.(type) {
	case *string:
		*d = o.Text
	case *llm.Message:
		*d = o.Message
	default:
		if kind == kindText { // a named string type
			reflect.ValueOf(dst).Elem().SetString(o.Text)
		}
	}
}

// StreamFunc declares a streaming call: the function yields the answer's
// text as the model produces it, through every tool round. In is as for
// [Func]. Breaking out of the loop cancels the call. The model must be able
// to stream.
func StreamFunc[In any](model llm.ChatModel, opts ...Option) (func(ctx context.Context, in In) iter.Seq2[string, error], error) {
	p, fields, err := compile[In](model, opts, "ai.StreamFunc", nil)
	if err != nil {
		return nil, err
	}
	if err := p.canStream("ai.StreamFunc"); err != nil {
		return nil, err
	}
	return func(ctx context.Context, in In) iter.Seq2[string, error] {
		return p.textStream(ctx, func() (Turn, error) {
			return p.turnOf(reflect.ValueOf(&in).Elem(), fields)
		})
	}, nil
}

// EventFunc declares a call that yields every event of the turn (text,
// reasoning, tool calls and results, retrieval, usage, done). In is as for
// [Func].
func EventFunc[In any](model llm.ChatModel, opts ...Option) (func(ctx context.Context, in In) iter.Seq2[Event, error], error) {
	p, fields, err := compile[In](model, opts, "ai.EventFunc", nil)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, in In) iter.Seq2[Event, error] {
		return p.eventStream(ctx, func() (Turn, error) {
			return p.turnOf(reflect.ValueOf(&in).Elem(), fields)
		})
	}, nil
}

// compile builds the plan of a Func-style declaration over In.
func compile[In any](model llm.ChatModel, opts []Option, what string, outType reflect.Type) (*plan, []structField, error) {
	cfg, err := newConfig(model, opts)
	if err != nil {
		return nil, nil, err
	}
	eng, err := newEngine(cfg)
	if err != nil {
		return nil, nil, err
	}
	inType := reflect.TypeFor[In]()
	fields, roles, err := structRoles(inType)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	var result bool
	if outType != nil {
		what += "[" + inType.String() + ", " + outType.String() + "]"
		if rp, ok := reflect.New(outType).Interface().(resultOut); ok {
			outType, result = rp.valueType(), true
		}
	}
	p, err := newPlan(cfg, eng, what, inType, roles, outType, result, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	return p, fields, nil
}

// structField is a field of a Func's input struct with a special role.
type structField struct {
	index int
	role  role
}

// structRoles finds the special fields of a struct type (a non-struct has
// none).
func structRoles(t reflect.Type) ([]structField, map[role]bool, error) {
	roles := map[role]bool{}
	if t.Kind() != reflect.Struct {
		return nil, roles, nil
	}
	var fields []structField
	for i := range t.NumField() {
		f := t.Field(i)
		r := roleOf(f.Type)
		if r == roleData {
			continue
		}
		if !f.IsExported() {
			return nil, nil, fmt.Errorf("field %s of type %s must be exported", f.Name, f.Type)
		}
		if roles[r] && r != roleImage && r != roleImagePtr && r != roleImages {
			return nil, nil, fmt.Errorf("%s has two fields of type %s", t, f.Type)
		}
		roles[r] = true
		fields = append(fields, structField{index: i, role: r})
	}
	return fields, roles, nil
}

// turnOf builds the Turn of a call whose argument is v. The special fields
// are read through reflect without boxing them: reading them through
// unsafe offsets measured no faster (the argument escapes either way, for
// the templates).
func (p *plan) turnOf(v reflect.Value, fields []structField) (Turn, error) {
	var in input
	if p.system != nil || p.user != nil {
		in.value = v
	}
	if p.dataIsText {
		// The argument's kind is string (checked by newPlan).
		in.text = v.String()
	}
	for _, f := range fields {
		fv := v.Field(f.index)
		switch f.role {
		case roleMemoryID:
			in.memoryID = MemoryID(fv.String())
		case roleUserName:
			in.userName = UserName(fv.String())
		case roleParams:
			v := *fv.Addr().Interface().(*Params)
			in.params = &v
		case roleParamsPtr:
			in.params = fv.Interface().(*Params)
		case roleImage:
			in.images = append(in.images, *fv.Addr().Interface().(*llm.Image))
		case roleImagePtr:
			if img := fv.Interface().(*llm.Image); img != nil {
				in.images = append(in.images, *img)
			}
		case roleImages:
			in.images = append(in.images, *fv.Addr().Interface().(*[]llm.Image)...)
		}
	}
	return p.turn(&in)
}

func (p *plan) canStream(what string) error {
	if !p.eng.cfg.caps.Streaming {
		return fmt.Errorf("%s: the model declares no streaming support; declare a non-streaming function (ai.Func) instead", what)
	}
	return nil
}

func (p *plan) textStream(ctx context.Context, build func() (Turn, error)) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		t, err := build()
		if err != nil {
			yield("", err)
			return
		}
		ctx, history := p.eng.resumed(ctx, &t)
		for ev, err := range p.eng.Run(ctx, t) {
			if err != nil {
				yield("", err)
				return
			}
			switch ev.Kind {
			case EventText:
				if !yield(ev.Text, nil) {
					return
				}
			case EventDone:
				if err := interrupted(ev.Outcome, history); err != nil {
					yield("", err)
					return
				}
			}
		}
	}
}

func (p *plan) eventStream(ctx context.Context, build func() (Turn, error)) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		t, err := build()
		if err != nil {
			yield(Event{}, err)
			return
		}
		ctx, _ = p.eng.resumed(ctx, &t)
		p.eng.Run(ctx, t)(yield)
	}
}

var errNilContext = errors.New("ai: nil context")
