package eval

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"go.yaml.in/yaml/v3"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// SchemaJSON is the JSON Schema of a suite file (draft 2020-12).
//
//go:embed suite.schema.json
var SchemaJSON []byte

// MaxSuiteBytes bounds a suite file (and each file an import reads); it is
// enforced while reading.
const MaxSuiteBytes = 8 << 20

// maxNodes bounds the YAML nodes a suite expands to (aliases included),
// and maxDepth their nesting.
const (
	maxNodes = 100_000
	maxDepth = 64
)

// Error is a mistake in a suite file: the file, the line (0 when
// unknown), the field (a path such as cases[2].expect.text) and what is
// wrong.
type Error struct {
	File    string
	Line    int
	Field   string
	Message string
}

// Error returns "file:line: field: message".
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteString(":" + strconv.Itoa(e.Line))
		}
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

// errorAt returns an *Error at the JSON pointer at (the line of the
// nearest node the file has).
func (s *Suite) errorAt(at, fieldName, msg string) error {
	return &Error{File: s.Path, Line: lineOf(s.lines, at), Field: fieldName, Message: msg}
}

func lineOf(lines map[string]int, at string) int {
	for {
		if l, ok := lines[at]; ok {
			return l
		}
		i := strings.LastIndexByte(at, '/')
		if i < 0 {
			return 0
		}
		at = at[:i]
	}
}

// field turns a JSON pointer (/cases/2/expect) into a field path
// (cases[2].expect).
func field(pointer string) string {
	var b strings.Builder
	for _, tok := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		if tok == "" {
			continue
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		if _, err := strconv.Atoi(tok); err == nil {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
}

// Load reads the suite at path: a Weft suite (YAML or JSON), or an
// evalset of ADK or trpc-agent-go (a file named *.evalset.json or
// *.test.json; see [Import]).
func Load(path string) (*Suite, error) { return LoadAs(path, "") }

// readFile reads a file of at most MaxSuiteBytes.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSuiteBytes+1))
	if err != nil {
		return nil, fmt.Errorf("eval: reading %s: %w", path, err)
	}
	if len(data) > MaxSuiteBytes {
		return nil, fmt.Errorf("eval: %s is larger than the limit of %d bytes", path, MaxSuiteBytes)
	}
	return data, nil
}

// Parse reads a Weft suite from data (YAML or JSON); name is the file
// name for messages and for the relative paths of its setup. The suite is
// validated against [SchemaJSON], then checked ([Suite.Check]); errors
// are *[Error]s naming the file, line and field.
func Parse(data []byte, name string) (*Suite, error) {
	if len(data) > MaxSuiteBytes {
		return nil, fmt.Errorf("eval: %s is larger than the limit of %d bytes", name, MaxSuiteBytes)
	}
	v, lines, err := decodeYAML(data, name)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, &Error{File: name, Message: err.Error()}
	}
	if err := validate(raw, name, lines); err != nil {
		return nil, err
	}
	s := &Suite{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(s); err != nil {
		return nil, &Error{File: name, Message: err.Error()}
	}
	s.Path, s.Format, s.lines = name, "weft", lines
	if err := s.Check(); err != nil {
		return nil, err
	}
	return s, nil
}

// decodeYAML decodes one YAML (or JSON) document into plain values
// (map[string]any, []any, scalars) and the line of each node by JSON
// pointer.
func decodeYAML(data []byte, name string) (any, map[string]int, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			return nil, nil, &Error{File: name, Message: "the file is empty"}
		}
		return nil, nil, &Error{File: name, Line: yamlLine(err), Message: yamlMessage(err)}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		return nil, nil, &Error{File: name, Line: extra.Line, Message: "a suite file holds one YAML document"}
	}
	c := &converter{name: name, lines: map[string]int{}}
	v, err := c.value(&doc, "", 0, false)
	if err != nil {
		return nil, nil, err
	}
	return v, c.lines, nil
}

// yamlLine finds the line number in a yaml.v3 error ("yaml: line 3: …").
func yamlLine(err error) int {
	msg := err.Error()
	if i := strings.Index(msg, "line "); i >= 0 {
		rest := msg[i+5:]
		j := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
		if j > 0 {
			n, _ := strconv.Atoi(rest[:j])
			return n
		}
	}
	return 0
}

func yamlMessage(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if i := strings.Index(msg, ": "); i >= 0 && strings.HasPrefix(msg, "line ") {
		msg = msg[i+2:]
	}
	return msg
}

type converter struct {
	name  string
	lines map[string]int
	nodes int
}

// value converts n, found at the JSON pointer at. Nodes reached through
// an alias keep no line (the alias's own line stands for them).
func (c *converter) value(n *yaml.Node, at string, depth int, aliased bool) (any, error) {
	c.nodes++
	if c.nodes > maxNodes || depth > maxDepth {
		return nil, &Error{File: c.name, Line: n.Line, Field: field(at), Message: "the document is too large or too deep"}
	}
	if _, seen := c.lines[at]; !seen && !aliased {
		c.lines[at] = n.Line
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return c.value(n.Content[0], at, depth+1, aliased)
	case yaml.AliasNode:
		return c.value(n.Alias, at, depth+1, true)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, vn := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return nil, &Error{File: c.name, Line: k.Line, Field: field(at), Message: "keys must be strings"}
			}
			if k.Value == "<<" && k.Tag == "!!merge" {
				merged, err := c.value(vn, at, depth+1, aliased)
				if err != nil {
					return nil, err
				}
				if mm, ok := merged.(map[string]any); ok {
					for mk, mv := range mm {
						if _, set := m[mk]; !set {
							m[mk] = mv
						}
					}
				}
				continue
			}
			if _, dup := m[k.Value]; dup {
				return nil, &Error{File: c.name, Line: k.Line, Field: field(at + "/" + escape(k.Value)), Message: "key given twice"}
			}
			v, err := c.value(vn, at+"/"+escape(k.Value), depth+1, aliased)
			if err != nil {
				return nil, err
			}
			m[k.Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for i, item := range n.Content {
			v, err := c.value(item, at+"/"+strconv.Itoa(i), depth+1, aliased)
			if err != nil {
				return nil, err
			}
			s = append(s, v)
		}
		return s, nil
	default:
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, &Error{File: c.name, Line: n.Line, Field: field(at), Message: yamlMessage(err)}
		}
		if f, ok := v.(float64); ok && (f != f || f > 1e308 || f < -1e308) {
			return nil, &Error{File: c.name, Line: n.Line, Field: field(at), Message: "numbers must be finite"}
		}
		return v, nil
	}
}

func escape(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}

var suiteSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	return compileSchema(SchemaJSON)
})

// compileSchema compiles a JSON Schema given as JSON.
func compileSchema(raw []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	// A suite's schema stands alone: a $ref to a file or a URL is
	// refused, never read.
	c.UseLoader(noLoader{})
	if err := c.AddResource("mem:///schema.json", doc); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	sch, err := c.Compile("mem:///schema.json")
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return sch, nil
}

// noLoader refuses to load any schema by URL.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("a schema may not refer to %s: refer only inside the schema", url)
}

// validate checks raw against the suite schema; the error names the
// deepest failing field and its line.
func validate(raw []byte, name string, lines map[string]int) error {
	sch, err := suiteSchema()
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return &Error{File: name, Message: err.Error()}
	}
	err = sch.Validate(inst)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	return schemaError(ve, name, lines)
}

// schemaError picks the most telling cause of a validation error: the
// deepest instance location, preferring specific keywords over oneOf.
func schemaError(ve *jsonschema.ValidationError, name string, lines map[string]int) error {
	type leaf struct {
		at, msg string
		oneOf   bool
	}
	var leaves []leaf
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			at := ""
			for _, tok := range e.InstanceLocation {
				at += "/" + escape(tok)
			}
			_, oneOf := e.ErrorKind.(*kind.OneOf)
			leaves = append(leaves, leaf{at, e.ErrorKind.LocalizedString(printer), oneOf})
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(leaves) == 0 {
		return &Error{File: name, Message: ve.Error()}
	}
	slices.SortStableFunc(leaves, func(a, b leaf) int {
		da, db := strings.Count(a.at, "/"), strings.Count(b.at, "/")
		if da != db {
			return db - da
		}
		return boolInt(a.oneOf) - boolInt(b.oneOf)
	})
	best := leaves[0]
	return &Error{File: name, Line: lineOf(lines, best.at), Field: field(best.at), Message: best.msg}
}

var printer = message.NewPrinter(language.English)

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// jsonDecode decodes JSON as the schema validator wants it (numbers as
// json.Number).
func jsonDecode(b []byte) (any, error) { return jsonschema.UnmarshalJSON(bytes.NewReader(b)) }
