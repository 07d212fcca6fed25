package eval

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Suite is a set of test cases for agents and workflows, as read from a
// suite file (see docs/evals.md and [SchemaJSON]) or imported from an ADK
// or trpc-agent-go evalset.
type Suite struct {
	// Name names the suite in reports and cassette paths.
	Name string `json:"name"`
	// Description says what the suite checks.
	Description string `json:"description,omitempty"`
	// Agent and Workflow are the default subject of the cases that name
	// none; at most one is set.
	Agent    string `json:"agent,omitempty"`
	Workflow string `json:"workflow,omitempty"`
	// Judge configures the judge model of judge expectations.
	Judge *JudgeConfig `json:"judge,omitempty"`
	// Repeat and Pass are the defaults of the cases' Repeat and Pass.
	Repeat int    `json:"repeat,omitempty"`
	Pass   string `json:"pass,omitempty"`
	// Mocks answer tool calls in every case (a case's own mocks come
	// first).
	Mocks []Mock `json:"mocks,omitempty"`
	// Setup is what an in-process target loads before the cases run.
	Setup *Setup `json:"setup,omitempty"`
	// Cases are the suite's cases, in order.
	Cases []Case `json:"cases"`

	// Path is the file the suite was read from; empty for a suite built
	// in code. Relative paths of Setup are taken from its directory.
	Path string `json:"-"`
	// Format is "weft", "adk" or "trpc": the format the suite was read in.
	Format string `json:"-"`

	lines map[string]int // JSON pointer → line in Path
}

// JudgeConfig configures the judge model.
type JudgeConfig struct {
	// Model is the judge's "provider/model" (or an alias of the target's
	// configuration).
	Model string `json:"model"`
}

// Setup is what an in-process target loads before the cases run; a
// target given with --server is expected to hold it already.
type Setup struct {
	// Documents are uploaded to knowledge bases.
	Documents []Documents `json:"documents,omitempty"`
}

// Documents are files uploaded to one knowledge base.
type Documents struct {
	// KnowledgeBase is the knowledge base's name.
	KnowledgeBase string `json:"knowledge_base"`
	// Paths are files or glob patterns, relative to the suite's directory.
	Paths []string `json:"paths"`
}

// The values of Pass: how a case repeated k times passes.
const (
	// PassAll (pass^k) needs every repetition to pass.
	PassAll = "pass^k"
	// PassAny (pass@k) needs at least one repetition to pass.
	PassAny = "pass@k"
)

// Case is one test: one or more turns with an agent, or one run of a
// workflow.
type Case struct {
	// ID names the case; unique in its suite.
	ID          string `json:"id"`
	Description string `json:"description,omitempty"`
	// Agent or Workflow is the case's subject (default: the suite's).
	Agent    string `json:"agent,omitempty"`
	Workflow string `json:"workflow,omitempty"`
	// User and Expect are a one-turn case's turn (shorthand for Turns).
	User   string  `json:"user,omitempty"`
	Expect *Expect `json:"expect,omitempty"`
	// Turns are the user's messages, in one session, each with what its
	// answer must satisfy.
	Turns []Turn `json:"turns,omitempty"`
	// Inputs are a workflow run's inputs; Expect applies to its outputs.
	Inputs map[string]any `json:"inputs,omitempty"`
	// Repeat runs the case this many times (default 1); Pass says whether
	// all (pass^k, the default) or one (pass@k) must pass.
	Repeat int    `json:"repeat,omitempty"`
	Pass   string `json:"pass,omitempty"`
	// Mocks answer the case's tool calls.
	Mocks []Mock `json:"mocks,omitempty"`
	// Tags are free labels, shown in reports.
	Tags []string `json:"tags,omitempty"`
}

// Turn is one user message and what the answer must satisfy.
type Turn struct {
	User   string  `json:"user"`
	Expect *Expect `json:"expect,omitempty"`
}

// Expect is what an answer (or a workflow run) must satisfy. Every field
// set is one or more checks; all must pass.
type Expect struct {
	Text  *TextExpect  `json:"text,omitempty"`
	JSON  *JSONExpect  `json:"json,omitempty"`
	Tools *ToolsExpect `json:"tools,omitempty"`
	// Citations are documents (by name or id) the answer must cite: when
	// it cites by number ("[2]", the numbering of the fragments retrieved
	// for the turn), a cited fragment must come from each; otherwise each
	// must be among the retrieved fragments.
	Citations []string `json:"citations,omitempty"`
	// Refusal, when set, says whether the answer must be a refusal
	// (true) or must not be one (false).
	Refusal *bool        `json:"refusal,omitempty"`
	Judge   *JudgeExpect `json:"judge,omitempty"`
	Rouge   *RougeExpect `json:"rouge,omitempty"`
	// LatencyMS and CostUSD are ceilings of the turn's latency and cost.
	LatencyMS int64   `json:"latency_ms,omitempty"`
	CostUSD   float64 `json:"cost_usd,omitempty"`
	// Status is a workflow run's expected status ("succeeded" or "failed").
	Status string `json:"status,omitempty"`
}

// TextExpect checks the answer's text.
type TextExpect struct {
	// Exact is the whole answer, trimmed of surrounding space.
	Exact *string `json:"exact,omitempty"`
	// Contains are substrings the answer must hold.
	Contains Strings `json:"contains,omitempty"`
	// Regex are regular expressions (Go syntax) the answer must match.
	Regex Strings `json:"regex,omitempty"`
	// Not are substrings the answer must not hold.
	Not Strings `json:"not,omitempty"`
	// IgnoreCase compares Exact, Contains and Not without case.
	IgnoreCase bool `json:"ignore_case,omitempty"`
}

// JSONExpect checks the answer as JSON (the text, or a fenced ```json
// block in it; a workflow's outputs).
type JSONExpect struct {
	// Schema is a JSON Schema the value must validate against.
	Schema json.RawMessage `json:"schema,omitempty"`
	// Subset is a value the answer must contain: objects may have more
	// keys, arrays must match item by item, numbers within Tolerance.
	Subset json.RawMessage `json:"subset,omitempty"`
	// Equals is a value the answer must equal (numbers within Tolerance).
	Equals json.RawMessage `json:"equals,omitempty"`
	// Tolerance is the absolute difference allowed between numbers.
	Tolerance float64 `json:"tolerance,omitempty"`
}

// The values of ToolsExpect.Match.
const (
	// MatchExact needs the same calls in the same order, no others.
	MatchExact = "exact"
	// MatchInOrder needs the expected calls in order; others may come
	// between them.
	MatchInOrder = "in_order"
	// MatchAnyOrder needs the expected calls in any order; others may
	// come too.
	MatchAnyOrder = "any_order"
)

// The values of ToolsExpect.Args.
const (
	// ArgsExact compares arguments as JSON values.
	ArgsExact = "exact"
	// ArgsSubset needs the expected arguments among the actual ones.
	ArgsSubset = "subset"
)

// ToolsExpect checks the trajectory: the tool calls of the turn.
type ToolsExpect struct {
	// Match is exact (default), in_order or any_order.
	Match string `json:"match,omitempty"`
	// Args is exact (default) or subset.
	Args string `json:"args,omitempty"`
	// AllowExtra overrides whether calls not expected are allowed
	// (default: no for exact, yes for in_order and any_order).
	AllowExtra *bool `json:"allow_extra,omitempty"`
	// Tolerance is the absolute difference allowed between numbers in
	// arguments.
	Tolerance float64 `json:"tolerance,omitempty"`
	// Calls are the expected calls; none expects no call at all.
	Calls []ExpectedCall `json:"calls"`
}

// ExpectedCall is one expected tool call. Args nil matches any arguments.
type ExpectedCall struct {
	Name string         `json:"name"`
	Args map[string]any `json:"args,omitempty"`
}

// JudgeExpect asks the judge model to score the answer against a rubric.
type JudgeExpect struct {
	// Rubric is what a good answer does, in words.
	Rubric string `json:"rubric"`
	// Reference is a reference answer shown to the judge.
	Reference string `json:"reference,omitempty"`
	// Context shows the judge the retrieved fragments and tool results
	// (to judge grounding).
	Context bool `json:"context,omitempty"`
	// Threshold is the lowest passing score, from 0 to 1 (default 0.5).
	Threshold *float64 `json:"threshold,omitempty"`
	// Metric names the check in reports (default "judge").
	Metric string `json:"metric,omitempty"`
}

// RougeExpect compares the answer with a reference by ROUGE-1 F.
type RougeExpect struct {
	Reference string `json:"reference"`
	// Threshold is the lowest passing score, from 0 to 1.
	Threshold float64 `json:"threshold"`
	// Metric names the check in reports (default "rouge1").
	Metric string `json:"metric,omitempty"`
}

// Mock answers calls of one tool. Args, when set, must be a subset of the
// call's arguments. The first matching mock answers.
type Mock struct {
	Tool string         `json:"tool"`
	Args map[string]any `json:"args,omitempty"`
	// Result is the tool's result: a string as is, anything else as JSON.
	Result any `json:"result,omitempty"`
	// Error, when set, makes the call fail with this message.
	Error string `json:"error,omitempty"`
}

// Matches reports whether the mock answers a call of tool with args (a
// decoded JSON value): the names are equal and Args, when set, is a
// subset of args.
func (m *Mock) Matches(tool string, args any) bool {
	if m.Tool != tool {
		return false
	}
	if m.Args == nil {
		return true
	}
	_, ok := subset(normalize(m.Args), args, 0, "")
	return ok
}

// Strings is a list of strings that may be written as one string.
type Strings []string

// UnmarshalJSON reads a string or an array of strings.
func (s *Strings) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = Strings{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return err
	}
	*s = many
	return nil
}

// Subject returns what the case runs against: ("agent", name) or
// ("workflow", name), its own or the suite's.
func (s *Suite) Subject(c *Case) (kind, name string) {
	switch {
	case c.Workflow != "":
		return "workflow", c.Workflow
	case c.Agent != "":
		return "agent", c.Agent
	case s.Workflow != "":
		return "workflow", s.Workflow
	}
	return "agent", s.Agent
}

// repeat returns how many times the case runs and how it passes.
func (s *Suite) repeat(c *Case) (int, string) {
	n := c.Repeat
	if n == 0 {
		n = s.Repeat
	}
	pass := c.Pass
	if pass == "" {
		pass = s.Pass
	}
	if pass == "" {
		pass = PassAll
	}
	return max(n, 1), pass
}

// mocks returns the mocks of a case: its own, then the suite's.
func (s *Suite) mocks(c *Case) []Mock {
	return append(slices.Clip(c.Mocks), s.Mocks...)
}

// Check validates what the schema cannot: unique case ids, one subject
// per case, turns for agents and inputs for workflows, regular
// expressions that compile. A suite built in code should be checked
// before it runs ([Run] does). Errors name the file, line and field.
func (s *Suite) Check() error {
	if strings.TrimSpace(s.Name) == "" {
		return s.errorAt("/name", "name", "a suite needs a name")
	}
	if s.Agent != "" && s.Workflow != "" {
		return s.errorAt("/workflow", "workflow", "a suite names an agent or a workflow, not both")
	}
	if err := checkPass(s, "/pass", s.Pass); err != nil {
		return err
	}
	if len(s.Cases) == 0 {
		return s.errorAt("/cases", "cases", "a suite needs at least one case")
	}
	seen := map[string]int{}
	for i := range s.Cases {
		c := &s.Cases[i]
		at := fmt.Sprintf("/cases/%d", i)
		if strings.TrimSpace(c.ID) == "" {
			return s.errorAt(at+"/id", field(at+"/id"), "a case needs an id")
		}
		if j, dup := seen[c.ID]; dup {
			return s.errorAt(at+"/id", field(at+"/id"), fmt.Sprintf("case id %q is also the id of case %d", c.ID, j))
		}
		seen[c.ID] = i
		if c.Agent != "" && c.Workflow != "" {
			return s.errorAt(at+"/workflow", field(at+"/workflow"), "a case names an agent or a workflow, not both")
		}
		if err := checkPass(s, at+"/pass", c.Pass); err != nil {
			return err
		}
		if c.User != "" || c.Expect != nil {
			if len(c.Turns) > 0 && c.User != "" {
				return s.errorAt(at+"/user", field(at+"/user"), "a case has user (one turn) or turns, not both")
			}
		}
		kind, name := s.Subject(c)
		if name == "" {
			return s.errorAt(at, field(at), fmt.Sprintf("case %q names no agent or workflow, and the suite has no default", c.ID))
		}
		if kind == "workflow" {
			if c.User != "" || len(c.Turns) > 0 {
				return s.errorAt(at, field(at), fmt.Sprintf("case %q runs workflow %q: it takes inputs, not turns", c.ID, name))
			}
			if err := s.checkExpect(c.Expect, at+"/expect", true); err != nil {
				return err
			}
		} else {
			if c.Inputs != nil {
				return s.errorAt(at+"/inputs", field(at+"/inputs"), fmt.Sprintf("case %q talks to agent %q: it takes turns, not inputs", c.ID, name))
			}
			turns := c.Turns
			base := at + "/turns"
			if len(turns) == 0 {
				if c.User == "" {
					return s.errorAt(at, field(at), fmt.Sprintf("case %q has no turn: give user or turns", c.ID))
				}
				turns = []Turn{{User: c.User, Expect: c.Expect}}
				base = ""
			} else if c.Expect != nil {
				return s.errorAt(at+"/expect", field(at+"/expect"), "a case with turns puts expect in each turn")
			}
			for j := range turns {
				ep := at + "/expect"
				if base != "" {
					ep = fmt.Sprintf("%s/%d/expect", base, j)
					if strings.TrimSpace(turns[j].User) == "" {
						return s.errorAt(fmt.Sprintf("%s/%d/user", base, j), field(fmt.Sprintf("%s/%d/user", base, j)), "a turn needs a user message")
					}
				}
				if err := s.checkExpect(turns[j].Expect, ep, false); err != nil {
					return err
				}
			}
		}
		for j, m := range c.Mocks {
			if strings.TrimSpace(m.Tool) == "" {
				p := fmt.Sprintf("%s/mocks/%d/tool", at, j)
				return s.errorAt(p, field(p), "a mock names its tool")
			}
		}
	}
	for j, m := range s.Mocks {
		if strings.TrimSpace(m.Tool) == "" {
			p := fmt.Sprintf("/mocks/%d/tool", j)
			return s.errorAt(p, field(p), "a mock names its tool")
		}
	}
	return nil
}

func checkPass(s *Suite, at, pass string) error {
	if pass != "" && pass != PassAll && pass != PassAny {
		return s.errorAt(at, field(at), fmt.Sprintf("pass %q: want %s or %s", pass, PassAll, PassAny))
	}
	return nil
}

func (s *Suite) checkExpect(e *Expect, at string, workflow bool) error {
	if e == nil {
		return nil
	}
	if e.Text != nil {
		for i, re := range e.Text.Regex {
			if _, err := regexp.Compile(re); err != nil {
				p := fmt.Sprintf("%s/text/regex", at)
				if len(e.Text.Regex) > 1 {
					p = fmt.Sprintf("%s/%d", p, i)
				}
				return s.errorAt(p, field(p), fmt.Sprintf("regular expression %q: %v", re, err))
			}
		}
	}
	if e.Tools != nil {
		if workflow {
			return s.errorAt(at+"/tools", field(at+"/tools"), "a workflow run has no tool trajectory")
		}
		for i, c := range e.Tools.Calls {
			if strings.TrimSpace(c.Name) == "" {
				p := fmt.Sprintf("%s/tools/calls/%d/name", at, i)
				return s.errorAt(p, field(p), "an expected call names its tool")
			}
		}
	}
	if e.Status != "" && !workflow {
		return s.errorAt(at+"/status", field(at+"/status"), "status applies to workflow runs")
	}
	if workflow && (len(e.Citations) > 0) {
		return s.errorAt(at+"/citations", field(at+"/citations"), "a workflow run has no citations")
	}
	if e.JSON != nil {
		if len(e.JSON.Schema) > 0 {
			if _, err := compileSchema(e.JSON.Schema); err != nil {
				return s.errorAt(at+"/json/schema", field(at+"/json/schema"), err.Error())
			}
		}
	}
	return nil
}

// turns returns a case's turns, the one-turn shorthand expanded.
func (c *Case) turns() []Turn {
	if len(c.Turns) > 0 {
		return c.Turns
	}
	return []Turn{{User: c.User, Expect: c.Expect}}
}
