package ai

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"

	"github.com/weftlabs/weft/llm"
)

var (
	ctxType        = reflect.TypeFor[context.Context]()
	errorType      = reflect.TypeFor[error]()
	textStreamType = reflect.TypeFor[iter.Seq2[string, error]]()
	eventStreamTyp = reflect.TypeFor[iter.Seq2[Event, error]]()
)

// Bind implements a whole service at once: it fills each exported func
// field of the struct svc points to with a function that runs the
// pipeline. A field's function takes a context.Context first, then any of:
// one data argument (the user message when it is a string, else the value
// templates are rendered over), MemoryID, UserName, Params or *Params,
// llm.Image, *llm.Image and []llm.Image (see [Func] for what these mean).
// It returns (T, error) for any T that [Func] accepts as Out,
// iter.Seq2[string, error] for the answer's text as it streams, or
// iter.Seq2[Event, error] for every event of the turn.
//
// A field's `system` and `user` struct tags hold its templates and
// override the System and User options, which apply to every field. The
// model is given with the Model option. Every field is checked before any
// is filled; all problems are reported together.
func Bind(svc any, opts ...Option) error {
	rv := reflect.ValueOf(svc)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("ai: Bind needs a pointer to a struct of func fields, got %T", svc)
	}
	cfg, err := newConfig(nil, opts)
	if err != nil {
		return err
	}
	eng, err := newEngine(cfg)
	if err != nil {
		return err
	}
	sv := rv.Elem()
	st := sv.Type()
	type bound struct {
		index int
		fn    reflect.Value
	}
	var (
		binds []bound
		errs  []error
	)
	for i := range st.NumField() {
		f := st.Field(i)
		if !f.IsExported() || f.Type.Kind() != reflect.Func {
			continue
		}
		fn, err := bindField(cfg, eng, st.Name()+"."+f.Name, f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		binds = append(binds, bound{i, fn})
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if len(binds) == 0 {
		return fmt.Errorf("ai: Bind: %s has no exported func fields", st)
	}
	for _, b := range binds {
		sv.Field(b.index).Set(b.fn)
	}
	return nil
}

// bindField compiles one func field into its implementation.
func bindField(cfg *config, eng *Engine, what string, f reflect.StructField) (reflect.Value, error) {
	ft := f.Type
	if ft.IsVariadic() {
		return reflect.Value{}, fmt.Errorf("ai: %s: variadic functions are not supported", what)
	}
	if ft.NumIn() == 0 || ft.In(0) != ctxType {
		return reflect.Value{}, fmt.Errorf("ai: %s: the first argument must be a context.Context", what)
	}
	roles := make([]role, ft.NumIn()-1)
	present := map[role]bool{}
	var dataType reflect.Type
	for i := 1; i < ft.NumIn(); i++ {
		t := ft.In(i)
		r := roleOf(t)
		roles[i-1] = r
		switch {
		case r == roleData && dataType != nil:
			return reflect.Value{}, fmt.Errorf("ai: %s: two data arguments (%s and %s); put them in one struct argument and name its fields in the templates", what, dataType, t)
		case r == roleData:
			dataType = t
		case present[r] && r != roleImage && r != roleImagePtr && r != roleImages:
			return reflect.Value{}, fmt.Errorf("ai: %s: two arguments of type %s", what, t)
		}
		present[r] = true
	}

	const (
		retValue = iota
		retText
		retEvents
	)
	var (
		ret      int
		outType  reflect.Type // the declared return type (maybe Result[T])
		valType  reflect.Type // T
		isResult bool
	)
	switch {
	case ft.NumOut() == 2 && ft.Out(1) == errorType:
		ret, outType, valType = retValue, ft.Out(0), ft.Out(0)
		if rp, ok := reflect.New(outType).Interface().(resultOut); ok {
			valType, isResult = rp.valueType(), true
		}
	case ft.NumOut() == 1 && ft.Out(0) == textStreamType:
		ret = retText
	case ft.NumOut() == 1 && ft.Out(0) == eventStreamTyp:
		ret = retEvents
	default:
		return reflect.Value{}, fmt.Errorf("ai: %s: must return (T, error), iter.Seq2[string, error] or iter.Seq2[ai.Event, error]", what)
	}

	var sysTag, userTag *string
	if v, ok := f.Tag.Lookup("system"); ok {
		sysTag = &v
	}
	if v, ok := f.Tag.Lookup("user"); ok {
		userTag = &v
	}
	p, err := newPlan(cfg, eng, "ai: "+what, dataType, present, valType, isResult, sysTag, userTag)
	if err != nil {
		return reflect.Value{}, err
	}
	if ret == retText {
		if err := p.canStream("ai: " + what); err != nil {
			return reflect.Value{}, err
		}
	}

	build := func(args []reflect.Value) (context.Context, Turn, error) {
		ctx, _ := args[0].Interface().(context.Context)
		if ctx == nil {
			return nil, Turn{}, errNilContext
		}
		var in input
		for i, r := range roles {
			v := args[i+1]
			switch r {
			case roleData:
				in.value = v
				if p.dataIsText {
					in.text = v.String()
				}
			case roleMemoryID:
				in.memoryID = MemoryID(v.String())
			case roleUserName:
				in.userName = UserName(v.String())
			case roleParams:
				pp := v.Interface().(Params)
				in.params = &pp
			case roleParamsPtr:
				in.params = v.Interface().(*Params)
			case roleImage:
				in.images = append(in.images, v.Interface().(llm.Image))
			case roleImagePtr:
				if img := v.Interface().(*llm.Image); img != nil {
					in.images = append(in.images, *img)
				}
			case roleImages:
				in.images = append(in.images, v.Interface().([]llm.Image)...)
			}
		}
		t, err := p.turn(&in)
		return ctx, t, err
	}

	switch ret {
	case retText:
		return reflect.MakeFunc(ft, func(args []reflect.Value) []reflect.Value {
			var seq iter.Seq2[string, error] = func(yield func(string, error) bool) {
				ctx, t, err := build(args)
				if err != nil {
					yield("", err)
					return
				}
				p.textStream(ctx, func() (Turn, error) { return t, nil })(yield)
			}
			return []reflect.Value{reflect.ValueOf(seq)}
		}), nil
	case retEvents:
		return reflect.MakeFunc(ft, func(args []reflect.Value) []reflect.Value {
			var seq iter.Seq2[Event, error] = func(yield func(Event, error) bool) {
				ctx, t, err := build(args)
				if err != nil {
					yield(Event{}, err)
					return
				}
				ctx, _ = p.eng.resumed(ctx, &t)
				p.eng.Run(ctx, t)(yield)
			}
			return []reflect.Value{reflect.ValueOf(seq)}
		}), nil
	}
	return reflect.MakeFunc(ft, func(args []reflect.Value) []reflect.Value {
		fail := func(err error) []reflect.Value {
			return []reflect.Value{reflect.Zero(outType), reflect.ValueOf(&err).Elem()}
		}
		ctx, t, err := build(args)
		if err != nil {
			return fail(err)
		}
		outPtr := reflect.New(outType)
		dst := outPtr.Interface()
		rp, _ := dst.(resultOut)
		if rp != nil {
			dst = rp.valuePtr()
		}
		t.Output = p.output(dst)
		ctx, history := eng.resumed(ctx, &t)
		o, err := eng.run(ctx, &t, nil)
		if err != nil {
			return fail(err)
		}
		if err := interrupted(o, history); err != nil {
			return fail(err)
		}
		if rp != nil {
			rp.setOutcome(o)
		}
		if p.out.kind == kindText || p.out.kind == kindMessage {
			fillOutcome(p.out.kind, o, dst)
		}
		return []reflect.Value{outPtr.Elem(), reflect.Zero(errorType)}
	}), nil
}
