package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// MaxCheckedArgumentBytes bounds the arguments [Set.CheckArguments]
// accepts (1 MiB): they come from outside the model, a person's edit.
const MaxCheckedArgumentBytes = 1 << 20

// checker is a tool's compiled parameter schema, compiled on first use.
type checker struct {
	once sync.Once
	sch  *jsonschema.Schema // nil when the schema does not compile
}

// CheckArguments checks args, a JSON object, against the parameter schema
// of the tool named name (see [llm.ToolSpec]'s Parameters) before the tool
// is called with them: arguments a person edited, say. A failure is an
// *ArgumentError naming the deepest field at fault ("" for the object
// itself; nested fields are joined with dots, array items by index:
// "items.0.sku"). A schema that does not compile (a $ref to another
// document: none is loaded) checks only that args are an object; the tool
// still checks what it decodes. An unknown tool is an error matching
// ErrUnknownTool.
func (s *Set) CheckArguments(name string, args json.RawMessage) error {
	t, ok := s.Lookup(name)
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownTool, name)
	}
	if len(args) > MaxCheckedArgumentBytes {
		return &ArgumentError{Tool: name, Err: fmt.Errorf("the arguments are %d bytes, more than %d", len(args), MaxCheckedArgumentBytes)}
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return &ArgumentError{Tool: name, Err: fmt.Errorf("not JSON: %w", err)}
	}
	if _, ok := inst.(map[string]any); !ok {
		return &ArgumentError{Tool: name, Err: errors.New("the arguments must be a JSON object")}
	}
	c := &s.checks[s.index[name]]
	c.once.Do(func() { c.sch = compileParams(t.Spec().Parameters) })
	if c.sch == nil {
		return nil
	}
	err = c.sch.Validate(inst)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	field, msg := deepest(ve)
	return &ArgumentError{Tool: name, Field: field, Err: errors.New(msg)}
}

// compileParams compiles a parameter schema, nil when it does not compile.
// No document is loaded from anywhere: a schema comes from a tool, and
// may come from a remote server.
func compileParams(params json.RawMessage) *jsonschema.Schema {
	if len(params) == 0 {
		return nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(params))
	if err != nil {
		return nil
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	if c.AddResource("mem:///params.json", doc) != nil {
		return nil
	}
	sch, err := c.Compile("mem:///params.json")
	if err != nil {
		return nil
	}
	return sch
}

type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s: tool schemas load no other document", url)
}

var printer = message.NewPrinter(language.English)

// deepest picks the most telling cause of a validation error: the deepest
// instance location (a missing property counts as the property's own),
// and its message.
func deepest(ve *jsonschema.ValidationError) (field, msg string) {
	type leaf struct {
		at  []string
		msg string
	}
	var leaves []leaf
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			at := e.InstanceLocation
			m := e.ErrorKind.LocalizedString(printer)
			switch k := e.ErrorKind.(type) {
			case *kind.Required:
				if len(k.Missing) > 0 {
					at = append(slices.Clip(at), k.Missing[0])
					m = errMissing.Error()
				}
			case *kind.AdditionalProperties:
				if len(k.Properties) > 0 {
					at = append(slices.Clip(at), k.Properties[0])
					m = "unknown field"
				}
			}
			leaves = append(leaves, leaf{at, m})
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(leaves) == 0 {
		return "", ve.Error()
	}
	best := leaves[0]
	for _, l := range leaves[1:] {
		if len(l.at) > len(best.at) {
			best = l
		}
	}
	return strings.Join(best.at, "."), best.msg
}
