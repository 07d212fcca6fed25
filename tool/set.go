package tool

import (
	"errors"
	"fmt"
	"strings"

	"github.com/weftlabs/weft/llm"
)

// Set is a collection of tools with unique names. It is immutable and safe
// for concurrent use.
type Set struct {
	tools []Tool
	specs []llm.ToolSpec
	index map[string]int
	names string // "a, b, c", for error messages
	// checks are the tools' compiled parameter schemas (CheckArguments).
	checks []checker
}

// NewSet returns a set of the given tools. Duplicate or invalid names and
// tools whose declaration is wrong are errors.
func NewSet(tools ...Tool) (*Set, error) {
	s := &Set{index: make(map[string]int, len(tools))}
	var errs []error
	for _, t := range tools {
		if t == nil {
			errs = append(errs, errors.New("tool: nil tool"))
			continue
		}
		if v, ok := t.(validator); ok {
			if err := v.validate(); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		spec := t.Spec()
		if !ValidName(spec.Name) {
			errs = append(errs, fmt.Errorf("tool: name %q must match ^[a-zA-Z0-9_-]{1,64}$", spec.Name))
			continue
		}
		if _, dup := s.index[spec.Name]; dup {
			errs = append(errs, fmt.Errorf("tool: two tools are named %q; names must be unique", spec.Name))
			continue
		}
		s.index[spec.Name] = len(s.tools)
		s.tools = append(s.tools, t)
		s.specs = append(s.specs, spec)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	names := make([]string, len(s.specs))
	for i, sp := range s.specs {
		names[i] = sp.Name
	}
	s.names = strings.Join(names, ", ")
	s.checks = make([]checker, len(s.tools))
	return s, nil
}

// Len returns the number of tools.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.tools)
}

// Specs returns the tools' specifications in the order they were given. The
// slice is shared: do not modify it.
func (s *Set) Specs() []llm.ToolSpec {
	if s == nil {
		return nil
	}
	return s.specs
}

// Lookup returns the tool named name.
func (s *Set) Lookup(name string) (Tool, bool) {
	if s == nil {
		return nil, false
	}
	i, ok := s.index[name]
	if !ok {
		return nil, false
	}
	return s.tools[i], true
}

// Names returns the tool names, comma-separated.
func (s *Set) Names() string {
	if s == nil {
		return ""
	}
	return s.names
}
