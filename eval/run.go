package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/provider"
)

// SuiteResult is the outcome of a suite.
type SuiteResult struct {
	Name   string       `json:"name"`
	Path   string       `json:"path,omitempty"`
	Format string       `json:"format"`
	Cases  []CaseResult `json:"cases"`
	// Duration is the suite's wall time.
	Duration time.Duration `json:"duration_ns"`
}

// Passed counts the suite's passing cases.
func (r *SuiteResult) Passed() int {
	n := 0
	for _, c := range r.Cases {
		if c.Pass {
			n++
		}
	}
	return n
}

// CaseResult is the outcome of a case over its repetitions.
type CaseResult struct {
	ID      string   `json:"id"`
	Subject string   `json:"subject"` // "agent support", "workflow triage"
	Tags    []string `json:"tags,omitempty"`
	Pass    bool     `json:"pass"`
	// Error is what stopped the case (a failed call, a cassette that
	// does not match), empty when every run completed.
	Error string `json:"error,omitempty"`
	// K is the number of runs, Passed how many passed; Rule is pass^k or
	// pass@k.
	K      int         `json:"k"`
	Passed int         `json:"passed"`
	Rule   string      `json:"rule"`
	Runs   []RunResult `json:"runs"`
	// Duration is the case's wall time, all runs.
	Duration time.Duration `json:"duration_ns"`
}

// RunResult is one repetition of a case.
type RunResult struct {
	Pass  bool         `json:"pass"`
	Error string       `json:"error,omitempty"`
	Turns []TurnResult `json:"turns"`
}

// TurnResult is one turn (or workflow run) and its checks.
type TurnResult struct {
	User   string         `json:"user,omitempty"`
	Inputs map[string]any `json:"inputs,omitempty"`
	Answer *Answer        `json:"answer,omitempty"`
	Checks []Check        `json:"checks"`
	Pass   bool           `json:"pass"`
}

// Option configures [Run] and [Test].
type Option func(*runner)

// WithCassettes routes the judge's model calls through c, and makes each
// case's cassette current while it runs (an in-process target routes its
// providers through the same c).
func WithCassettes(c *Cassettes) Option { return func(r *runner) { r.cassettes = c } }

// WithJudgeOpener sets how the judge model is opened from its spec
// (default: provider.Open, through the cassettes when set).
func WithJudgeOpener(open func(spec string) (*llm.Model, error)) Option {
	return func(r *runner) { r.openJudge = open }
}

// WithJudgeModel sets the judge model's spec, overriding the suite's.
func WithJudgeModel(spec string) Option { return func(r *runner) { r.judgeSpec = spec } }

// WithProgress calls f after each case with the number of cases done, the
// total, and the case's result.
func WithProgress(f func(done, total int, c *CaseResult)) Option {
	return func(r *runner) { r.progress = f }
}

type runner struct {
	target    Target
	suite     *Suite
	cassettes *Cassettes
	openJudge func(string) (*llm.Model, error)
	judgeSpec string
	progress  func(int, int, *CaseResult)

	judge    *llm.Model
	judgeErr error
}

func newRunner(t Target, s *Suite, opts []Option) *runner {
	r := &runner{target: t, suite: s}
	for _, o := range opts {
		o(r)
	}
	if r.judgeSpec == "" && s.Judge != nil {
		r.judgeSpec = s.Judge.Model
	}
	if r.openJudge == nil {
		r.openJudge = func(spec string) (*llm.Model, error) {
			if r.cassettes != nil {
				return provider.Open(spec, provider.WithHTTPClient(r.cassettes.Client()))
			}
			return provider.Open(spec)
		}
	}
	return r
}

// Run runs the suite's cases against target, one at a time, and returns
// their results. The error is for a suite that cannot run at all: one
// that fails its check, or names an agent, workflow or tool the target
// (a [Cataloger]) does not serve. A case that fails, or cannot run, is a
// failed [CaseResult].
func Run(ctx context.Context, target Target, s *Suite, opts ...Option) (*SuiteResult, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	r := newRunner(target, s, opts)
	if err := r.checkNames(ctx); err != nil {
		return nil, err
	}
	start := time.Now()
	res := &SuiteResult{Name: s.Name, Path: s.Path, Format: s.Format}
	for i := range s.Cases {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cr := r.runCase(ctx, &s.Cases[i])
		res.Cases = append(res.Cases, cr)
		if r.progress != nil {
			r.progress(i+1, len(s.Cases), &res.Cases[len(res.Cases)-1])
		}
	}
	res.Duration = time.Since(start)
	return res, nil
}

// checkNames reports the first agent, workflow or tool the suite names
// that the target does not serve.
func (r *runner) checkNames(ctx context.Context) error {
	cl, ok := r.target.(Cataloger)
	if !ok {
		return nil
	}
	cat, err := cl.Catalog(ctx)
	if err != nil {
		return fmt.Errorf("eval: listing the target's agents, workflows and tools: %w", err)
	}
	s := r.suite
	unknown := func(at, what, name string, known []string) error {
		sorted := slices.Sorted(slices.Values(known))
		return s.errorAt(at, field(at), fmt.Sprintf("unknown %s %q (the target has: %s)", what, name, strings.Join(sorted, ", ")))
	}
	knownTool := func(name string) bool {
		return slices.Contains(cat.Tools, name) || strings.HasPrefix(name, "delegate_agent_") || strings.HasPrefix(name, "workflow_")
	}
	if s.Agent != "" && !slices.Contains(cat.Agents, s.Agent) {
		return unknown("/agent", "agent", s.Agent, cat.Agents)
	}
	if s.Workflow != "" && !slices.Contains(cat.Workflows, s.Workflow) {
		return unknown("/workflow", "workflow", s.Workflow, cat.Workflows)
	}
	for j, m := range s.Mocks {
		if !knownTool(m.Tool) {
			return unknown(fmt.Sprintf("/mocks/%d/tool", j), "tool", m.Tool, cat.Tools)
		}
	}
	for i := range s.Cases {
		c := &s.Cases[i]
		at := fmt.Sprintf("/cases/%d", i)
		if c.Agent != "" && !slices.Contains(cat.Agents, c.Agent) {
			return unknown(at+"/agent", "agent", c.Agent, cat.Agents)
		}
		if c.Workflow != "" && !slices.Contains(cat.Workflows, c.Workflow) {
			return unknown(at+"/workflow", "workflow", c.Workflow, cat.Workflows)
		}
		for j, m := range c.Mocks {
			if !knownTool(m.Tool) {
				return unknown(fmt.Sprintf("%s/mocks/%d/tool", at, j), "tool", m.Tool, cat.Tools)
			}
		}
		for j, t := range c.turns() {
			if t.Expect == nil || t.Expect.Tools == nil {
				continue
			}
			ep := at + "/expect"
			if len(c.Turns) > 0 {
				ep = fmt.Sprintf("%s/turns/%d/expect", at, j)
			}
			for k, call := range t.Expect.Tools.Calls {
				if !knownTool(call.Name) {
					return unknown(fmt.Sprintf("%s/tools/calls/%d/name", ep, k), "tool", call.Name, cat.Tools)
				}
			}
		}
	}
	return nil
}

func (r *runner) runCase(ctx context.Context, c *Case) (cr CaseResult) {
	start := time.Now()
	kind, name := r.suite.Subject(c)
	n, rule := r.suite.repeat(c)
	cr = CaseResult{ID: c.ID, Subject: kind + " " + name, Tags: c.Tags, K: n, Rule: rule}
	defer func() { cr.Duration = time.Since(start) }()
	mocks := r.suite.mocks(c)
	mocker, canMock := r.target.(Mocker)
	if len(mocks) > 0 && !canMock {
		cr.Error = "the case mocks tools, and this target runs the server's own tools: run it in process (--config) to use mocks"
		return cr
	}
	if r.cassettes != nil {
		r.cassettes.Begin(r.suite.Name, c.ID)
	}
	if canMock {
		mocker.SetMocks(mocks)
		defer mocker.SetMocks(nil)
	}
	for range n {
		var run RunResult
		if kind == "workflow" {
			run = r.runWorkflow(ctx, name, c)
		} else {
			run = r.runTurns(ctx, name, c)
		}
		if run.Pass {
			cr.Passed++
		}
		if run.Error != "" && cr.Error == "" {
			cr.Error = run.Error
		}
		cr.Runs = append(cr.Runs, run)
	}
	if r.cassettes != nil {
		if err := r.cassettes.End(); err != nil {
			// A cassette that does not match explains the failed calls
			// better than the target's error does.
			cr.Error = err.Error()
			cr.Pass = false
			return cr
		}
	}
	if rule == PassAny {
		cr.Pass = cr.Passed > 0
	} else {
		cr.Pass = cr.Passed == n
	}
	return cr
}

func (r *runner) runTurns(ctx context.Context, agent string, c *Case) RunResult {
	run := RunResult{Pass: true}
	session := ""
	var history []string
	for _, t := range c.turns() {
		tr := TurnResult{User: t.User}
		start := time.Now()
		ans, err := r.target.Chat(ctx, agent, session, t.User)
		if err != nil {
			run.Pass, run.Error = false, fmt.Sprintf("turn %d: %v", len(run.Turns)+1, err)
			tr.Pass = false
			run.Turns = append(run.Turns, tr)
			return run
		}
		ans.Latency = time.Since(start)
		session = ans.SessionID
		tr.Answer = ans
		tr.Checks = r.checks(ctx, t.Expect, ans, judgeInput{history: history, user: t.User, answer: ans}, false)
		tr.Pass = allPass(tr.Checks)
		run.Pass = run.Pass && tr.Pass
		run.Turns = append(run.Turns, tr)
		history = append(history, "User: "+t.User, "Assistant: "+ans.Text)
	}
	return run
}

func (r *runner) runWorkflow(ctx context.Context, workflow string, c *Case) RunResult {
	tr := TurnResult{Inputs: c.Inputs}
	start := time.Now()
	ans, err := r.target.RunWorkflow(ctx, workflow, c.Inputs)
	if err != nil {
		return RunResult{Error: err.Error(), Turns: []TurnResult{tr}}
	}
	ans.Latency = time.Since(start)
	tr.Answer = ans
	tr.Checks = r.checks(ctx, c.Expect, ans, judgeInput{user: fmt.Sprintf("(workflow %s run with inputs %s)", workflow, jsonText(c.Inputs)), answer: ans}, true)
	tr.Pass = allPass(tr.Checks)
	return RunResult{Pass: tr.Pass, Turns: []TurnResult{tr}}
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func allPass(cs []Check) bool {
	for _, c := range cs {
		if !c.Pass {
			return false
		}
	}
	return true
}

// checks evaluates e on an answer.
func (r *runner) checks(ctx context.Context, e *Expect, ans *Answer, in judgeInput, workflow bool) []Check {
	var out []Check
	if workflow {
		want := "succeeded"
		if e != nil && e.Status != "" {
			want = e.Status
		}
		reason := "the run " + ans.Status
		if ans.Error != "" {
			reason += ": " + ans.Error
		}
		out = append(out, pass("status", want, ans.Status, ans.Status == want, reason))
	}
	if e == nil {
		return out
	}
	if e.Text != nil {
		out = append(out, textChecks(e.Text, ans.Text)...)
	}
	if e.JSON != nil {
		raw := ans.Text
		if workflow {
			raw = string(ans.Outputs)
		}
		out = append(out, jsonChecks(e.JSON, raw)...)
	}
	if e.Tools != nil {
		out = append(out, toolsCheck(e.Tools, ans.ToolCalls))
	}
	if len(e.Citations) > 0 {
		out = append(out, citationsCheck(e.Citations, ans.Citations, ans.Text))
	}
	if e.Refusal != nil {
		out = append(out, refusalCheck(*e.Refusal, ans.Text))
	}
	if e.Rouge != nil {
		out = append(out, rougeCheck(e.Rouge, ans.Text))
	}
	if e.Judge != nil {
		out = append(out, r.judgeCheck(ctx, e.Judge, in))
	}
	if e.LatencyMS > 0 {
		ms := ans.Latency.Milliseconds()
		out = append(out, pass("latency", fmt.Sprintf("≤ %d ms", e.LatencyMS), fmt.Sprintf("%d ms", ms),
			ms <= e.LatencyMS, "the turn took longer than its ceiling"))
	}
	if e.CostUSD > 0 {
		out = append(out, pass("cost", fmt.Sprintf("≤ $%g", e.CostUSD), fmt.Sprintf("$%g", ans.CostUSD),
			ans.CostUSD <= e.CostUSD, "the turn cost more than its ceiling"))
	}
	return out
}

func (r *runner) judgeCheck(ctx context.Context, e *JudgeExpect, in judgeInput) Check {
	name := cmpOr(e.Metric, "judge")
	threshold := 0.5
	if e.Threshold != nil {
		threshold = *e.Threshold
	}
	fail := func(reason string) Check {
		zero := 0.0
		return Check{Name: name, Score: &zero, Threshold: &threshold, Expected: e.Rubric, Actual: in.answer.Text, Reason: reason}
	}
	if r.judge == nil && r.judgeErr == nil {
		if r.judgeSpec == "" {
			r.judgeErr = fmt.Errorf("no judge model: set judge.model in the suite (or --judge-model)")
		} else {
			r.judge, r.judgeErr = r.openJudge(r.judgeSpec)
		}
	}
	if r.judgeErr != nil {
		return fail(r.judgeErr.Error())
	}
	j, err := judge(ctx, r.judge, e, in)
	if err != nil {
		return fail(err.Error())
	}
	c := scored(name, j.Score, threshold, e.Rubric, in.answer.Text, j.Reason)
	if !c.Pass {
		c.Reason = fmt.Sprintf("score %.2f is under %.2f: %s", j.Score, threshold, j.Reason)
	}
	return c
}
