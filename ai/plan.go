package ai

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/prompt"
)

var (
	memoryIDType  = reflect.TypeFor[MemoryID]()
	userNameType  = reflect.TypeFor[UserName]()
	paramsType    = reflect.TypeFor[Params]()
	paramsPtrType = reflect.TypeFor[*Params]()
	imageType     = reflect.TypeFor[llm.Image]()
	imagePtrType  = reflect.TypeFor[*llm.Image]()
	imagesType    = reflect.TypeFor[[]llm.Image]()
)

// role is what an argument (or a field of a Func's input struct) means to
// the pipeline, decided by its type.
type role uint8

const (
	roleData role = iota // template data / the user message
	roleMemoryID
	roleUserName
	roleParams
	roleParamsPtr
	roleImage
	roleImagePtr
	roleImages
)

func roleOf(t reflect.Type) role {
	switch t {
	case memoryIDType:
		return roleMemoryID
	case userNameType:
		return roleUserName
	case paramsType:
		return roleParams
	case paramsPtrType:
		return roleParamsPtr
	case imageType:
		return roleImage
	case imagePtrType:
		return roleImagePtr
	case imagesType:
		return roleImages
	}
	return roleData
}

// input is one call's arguments, sorted by role.
type input struct {
	// data is the template data; value is the same as a reflect.Value,
	// which saves boxing it when the caller has one.
	data     any
	value    reflect.Value
	text     string // the data when it is the user message itself
	memoryID MemoryID
	userName UserName
	params   *Params
	images   []llm.Image
}

// plan is a declared function compiled once: its templates, how its
// arguments become messages, and how its answer becomes a value.
type plan struct {
	eng    *Engine
	system *prompt.Template
	user   *prompt.Template
	// dataIsText: no user template; the (string) data is the message.
	dataIsText bool
	hasMemID   bool
	out        *codec
	result     bool // the declared type is Result[T]
	dataType   reflect.Type
}

// newPlan checks a declaration. dataType is the type of the template data
// (nil when there is none); roles lists the special argument roles present;
// outType is the declared value type (T of Result[T]). sysTag and userTag
// are struct-tag templates that override the options'.
func newPlan(cfg *config, eng *Engine, what string, dataType reflect.Type, roles map[role]bool, outType reflect.Type, result bool, sysTag, userTag *string) (*plan, error) {
	p := &plan{eng: eng, result: result, hasMemID: roles[roleMemoryID], dataType: dataType}
	var errs []error
	if p.hasMemID && cfg.memory == nil {
		errs = append(errs, fmt.Errorf("%s: has a MemoryID argument but no memory; add ai.MemoryPerID(memory.MessageWindow(n))", what))
	}
	var opts []prompt.Option
	if cfg.clock != nil {
		opts = append(opts, prompt.WithClock(cfg.clock))
	}
	sys, user := cfg.system, cfg.user
	if sysTag != nil {
		sys = sysTag
	}
	if userTag != nil {
		user = userTag
	}
	if sys != nil {
		t, err := prompt.New("system", *sys, dataType, opts...)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: system template: %w", what, err))
		}
		p.system = t
	}
	switch {
	case user != nil:
		t, err := prompt.New("user", *user, dataType, opts...)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: user template: %w", what, err))
		}
		p.user = t
	case dataType != nil && dataType.Kind() == reflect.String:
		p.dataIsText = true
	case dataType == nil && (roles[roleImage] || roles[roleImagePtr] || roles[roleImages]):
		// The images alone are the message.
	case dataType == nil:
		errs = append(errs, fmt.Errorf("%s: no user message: add a string argument or ai.User(template)", what))
	default:
		errs = append(errs, fmt.Errorf("%s: argument %s is not a string; add ai.User(template) to say how it becomes the user message (for example ai.User(%q))", what, dataType, exampleTemplate(dataType)))
	}
	if outType != nil {
		c, err := newCodec(outType)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
		p.out = c
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

func exampleTemplate(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return "{{.}}"
	}
	var b strings.Builder
	for i := range t.NumField() {
		f := t.Field(i)
		if f.IsExported() && roleOf(f.Type) == roleData {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString("{{." + f.Name + "}}")
		}
	}
	return b.String()
}

// turn renders a call's messages into a Turn.
func (p *plan) turn(in *input) (Turn, error) {
	var t Turn
	if p.system != nil {
		s, err := render(p.system, in)
		if err != nil {
			return t, fmt.Errorf("ai: %w", err)
		}
		t.System = s
	}
	text := in.text
	if p.user != nil {
		s, err := render(p.user, in)
		if err != nil {
			return t, fmt.Errorf("ai: %w", err)
		}
		text = s
	}
	if len(in.images) == 0 {
		t.Message = llm.UserMessage(text)
	} else {
		parts := make([]llm.Part, 0, len(in.images)+1)
		if text != "" {
			parts = append(parts, llm.TextPart(text))
		}
		for i := range in.images {
			img := in.images[i]
			parts = append(parts, llm.Part{Kind: llm.PartImage, Image: &img})
		}
		t.Message = llm.UserParts(parts...)
	}
	t.Message.Name = string(in.userName)
	t.MemoryID = string(in.memoryID)
	t.Params = in.params
	return t, nil
}

// output returns the Turn.Output that parses into dst, a pointer to the
// declared value.
func (p *plan) output(dst any) *Output {
	if p.out == nil {
		return nil
	}
	return p.out.output(p.eng.cfg.caps, dst)
}

func render(t *prompt.Template, in *input) (string, error) {
	if in.value.IsValid() {
		return t.RenderValue(in.value)
	}
	return t.Render(in.data)
}
