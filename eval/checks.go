package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Check is the outcome of one expectation on one turn.
type Check struct {
	// Name is the check's kind: "text.contains", "tools", "judge", …
	Name string `json:"name"`
	Pass bool   `json:"pass"`
	// Score and Threshold are set for scored checks (judge, ROUGE,
	// citations).
	Score     *float64 `json:"score,omitempty"`
	Threshold *float64 `json:"threshold,omitempty"`
	// Expected and Actual show what was compared; Reason says why it
	// failed (or, for the judge, the judge's reason).
	Expected string `json:"expected,omitempty"`
	Actual   string `json:"actual,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

func pass(name, expected, actual string, ok bool, reason string) Check {
	c := Check{Name: name, Pass: ok, Expected: expected, Actual: actual}
	if !ok {
		c.Reason = reason
	}
	return c
}

func scored(name string, score, threshold float64, expected, actual, reason string) Check {
	return Check{Name: name, Pass: score >= threshold, Score: &score, Threshold: &threshold,
		Expected: expected, Actual: actual, Reason: reason}
}

// textChecks checks the answer's text.
func textChecks(e *TextExpect, text string) []Check {
	var out []Check
	norm := func(s string) string {
		if e.IgnoreCase {
			return strings.ToLower(s)
		}
		return s
	}
	if e.Exact != nil {
		ok := norm(strings.TrimSpace(text)) == norm(strings.TrimSpace(*e.Exact))
		out = append(out, pass("text.exact", *e.Exact, text, ok, "the answer is not exactly the expected text"))
	}
	for _, s := range e.Contains {
		ok := strings.Contains(norm(text), norm(s))
		out = append(out, pass("text.contains", s, text, ok, fmt.Sprintf("the answer does not contain %q", s)))
	}
	for _, re := range e.Regex {
		rx, err := regexp.Compile(re)
		ok := err == nil && rx.MatchString(text)
		out = append(out, pass("text.regex", re, text, ok, fmt.Sprintf("the answer does not match /%s/", re)))
	}
	for _, s := range e.Not {
		ok := !strings.Contains(norm(text), norm(s))
		out = append(out, pass("text.not", s, text, ok, fmt.Sprintf("the answer contains %q", s)))
	}
	return out
}

var fenced = regexp.MustCompile("(?s)```(?:json)?\\s*\\n(.*?)```")

// jsonValue finds the JSON value of an answer: the whole text, or its
// first fenced block.
func jsonValue(text string) (any, error) {
	var v any
	t := strings.TrimSpace(text)
	if err := json.Unmarshal([]byte(t), &v); err == nil {
		return v, nil
	}
	if m := fenced.FindStringSubmatch(t); m != nil {
		if err := json.Unmarshal([]byte(m[1]), &v); err == nil {
			return v, nil
		}
	}
	return nil, fmt.Errorf("the answer is not JSON")
}

// jsonChecks checks an answer's (or a workflow's outputs') JSON value.
func jsonChecks(e *JSONExpect, raw string) []Check {
	v, err := jsonValue(raw)
	if err != nil {
		return []Check{pass("json", "a JSON value", raw, false, err.Error())}
	}
	var out []Check
	if len(e.Schema) > 0 {
		sch, err := compileSchema(e.Schema)
		if err == nil {
			b, _ := json.Marshal(v)
			var inst any
			inst, err = jsonDecode(b)
			if err == nil {
				err = sch.Validate(inst)
			}
		}
		reason := ""
		if err != nil {
			reason = err.Error()
		}
		out = append(out, pass("json.schema", string(e.Schema), raw, err == nil, reason))
	}
	if len(e.Subset) > 0 {
		var want any
		_ = json.Unmarshal(e.Subset, &want)
		where, ok := subset(want, v, e.Tolerance, "")
		out = append(out, pass("json.subset", string(e.Subset), raw, ok, "differs at "+orRoot(where)))
	}
	if len(e.Equals) > 0 {
		var want any
		_ = json.Unmarshal(e.Equals, &want)
		where, ok := equal(want, v, e.Tolerance, "")
		out = append(out, pass("json.equals", string(e.Equals), raw, ok, "differs at "+orRoot(where)))
	}
	return out
}

func orRoot(s string) string {
	if s == "" {
		return "the root"
	}
	return s
}

// subset reports whether got contains want: objects may have more keys,
// arrays match item by item, numbers within tol. where is the first
// difference.
func subset(want, got any, tol float64, at string) (where string, ok bool) {
	switch w := want.(type) {
	case map[string]any:
		g, isMap := got.(map[string]any)
		if !isMap {
			return at, false
		}
		for _, k := range sortedKeys(w) {
			gv, present := g[k]
			if !present {
				return at + "/" + k, false
			}
			if where, ok := subset(w[k], gv, tol, at+"/"+k); !ok {
				return where, false
			}
		}
		return "", true
	case []any:
		g, isSlice := got.([]any)
		if !isSlice || len(g) != len(w) {
			return at, false
		}
		for i := range w {
			if where, ok := subset(w[i], g[i], tol, fmt.Sprintf("%s/%d", at, i)); !ok {
				return where, false
			}
		}
		return "", true
	}
	return scalarEqual(want, got, tol, at)
}

// equal reports whether got equals want, numbers within tol.
func equal(want, got any, tol float64, at string) (where string, ok bool) {
	if w, isMap := want.(map[string]any); isMap {
		g, gMap := got.(map[string]any)
		if !gMap {
			return at, false
		}
		for k := range g {
			if _, present := w[k]; !present {
				return at + "/" + k, false
			}
		}
		for _, k := range sortedKeys(w) {
			if where, ok := equal(w[k], g[k], tol, at+"/"+k); !ok {
				return where, false
			}
		}
		return "", true
	}
	if w, isSlice := want.([]any); isSlice {
		g, gSlice := got.([]any)
		if !gSlice || len(g) != len(w) {
			return at, false
		}
		for i := range w {
			if where, ok := equal(w[i], g[i], tol, fmt.Sprintf("%s/%d", at, i)); !ok {
				return where, false
			}
		}
		return "", true
	}
	return scalarEqual(want, got, tol, at)
}

func scalarEqual(want, got any, tol float64, at string) (string, bool) {
	wf, wNum := number(want)
	gf, gNum := number(got)
	if wNum && gNum {
		if math.Abs(wf-gf) <= tol {
			return "", true
		}
		return at, false
	}
	if want == got {
		return "", true
	}
	return at, false
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// toolsCheck checks the trajectory.
func toolsCheck(e *ToolsExpect, calls []ToolCall) Check {
	match := e.Match
	if match == "" {
		match = MatchExact
	}
	extra := match != MatchExact
	if e.AllowExtra != nil {
		extra = *e.AllowExtra
	}
	argsMatch := func(want map[string]any, got json.RawMessage) bool {
		if want == nil {
			return true
		}
		var g any
		if len(bytes.TrimSpace(got)) == 0 {
			g = map[string]any{}
		} else if json.Unmarshal(got, &g) != nil {
			return false
		}
		w := map[string]any(want)
		var ok bool
		if e.Args == ArgsSubset {
			_, ok = subset(normalize(w), g, e.Tolerance, "")
		} else {
			_, ok = equal(normalize(w), g, e.Tolerance, "")
		}
		return ok
	}
	callMatch := func(i, j int) bool {
		return e.Calls[i].Name == calls[j].Name && argsMatch(e.Calls[i].Args, calls[j].Arguments)
	}
	ok := extra || len(calls) == len(e.Calls)
	if ok {
		if match == MatchAnyOrder {
			ok = bipartite(len(e.Calls), len(calls), callMatch)
		} else {
			j := 0
			for i := range e.Calls {
				for j < len(calls) && !callMatch(i, j) {
					j++
				}
				if j == len(calls) {
					ok = false
					break
				}
				j++
			}
		}
	}
	name := "tools." + match
	reason := fmt.Sprintf("the tool calls do not match (%s, arguments %s", match, cmpOr(e.Args, ArgsExact))
	if !extra {
		reason += ", no other calls"
	}
	return pass(name, trajectory(expectedCalls(e.Calls)), trajectory(calls), ok, reason+")")
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// normalize round-trips v through JSON, so that YAML's ints compare as
// numbers.
func normalize(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// bipartite reports whether each of n expected items can be matched to a
// distinct one of m actual items (Kuhn's augmenting paths).
func bipartite(n, m int, ok func(i, j int) bool) bool {
	owner := make([]int, m)
	for j := range owner {
		owner[j] = -1
	}
	var try func(i int, seen []bool) bool
	try = func(i int, seen []bool) bool {
		for j := 0; j < m; j++ {
			if seen[j] || !ok(i, j) {
				continue
			}
			seen[j] = true
			if owner[j] < 0 || try(owner[j], seen) {
				owner[j] = i
				return true
			}
		}
		return false
	}
	for i := 0; i < n; i++ {
		if !try(i, make([]bool, m)) {
			return false
		}
	}
	return true
}

func expectedCalls(calls []ExpectedCall) []ToolCall {
	out := make([]ToolCall, len(calls))
	for i, c := range calls {
		out[i].Name = c.Name
		if c.Args != nil {
			out[i].Arguments, _ = json.Marshal(c.Args)
		}
	}
	return out
}

// trajectory shows calls as name(args) → name(args).
func trajectory(calls []ToolCall) string {
	if len(calls) == 0 {
		return "(no tool calls)"
	}
	parts := make([]string, len(calls))
	for i, c := range calls {
		args := string(c.Arguments)
		if args == "" {
			args = "…"
		}
		parts[i] = c.Name + "(" + args + ")"
	}
	return strings.Join(parts, " → ")
}

var citeMarker = regexp.MustCompile(`\[(\d{1,3})\]`)

// citationsCheck checks that the answer cites each expected document (by
// name or id). An answer that cites by number ("[2]", the numbering of the
// retrieved fragments the model was given) must cite a fragment of each;
// an answer without such markers must have each among its retrieved
// fragments.
func citationsCheck(want []string, got []Citation, text string) Check {
	cited := got
	markers := false
	if ms := citeMarker.FindAllStringSubmatch(text, -1); len(ms) > 0 {
		cited = nil
		for _, m := range ms {
			n, _ := strconv.Atoi(m[1])
			if n >= 1 && n <= len(got) {
				markers = true
				cited = append(cited, got[n-1])
			}
		}
		if !markers {
			cited = got
		}
	}
	var missing []string
	found := 0
	for _, w := range want {
		hit := slices.ContainsFunc(cited, func(c Citation) bool {
			return strings.EqualFold(c.Document, w) || c.DocumentID == w
		})
		if hit {
			found++
		} else {
			missing = append(missing, w)
		}
	}
	var names []string
	for _, c := range cited {
		if !slices.Contains(names, c.Document) {
			names = append(names, c.Document)
		}
	}
	score := float64(found) / float64(len(want))
	c := scored("citations", score, 1, strings.Join(want, ", "), strings.Join(names, ", "), "")
	if !c.Pass {
		if markers {
			c.Reason = "the answer's [n] markers do not cite: " + strings.Join(missing, ", ")
		} else {
			c.Reason = "not among the retrieved documents: " + strings.Join(missing, ", ")
		}
	}
	return c
}

// refusalPattern finds the phrases of a refusal.
var refusalPattern = regexp.MustCompile(`(?i)\b(i\s+(?:can(?:'|’)?t|cannot|can\s+not|won(?:'|’)?t|am\s+not\s+able\s+to|am\s+unable\s+to|(?:must|have\s+to)\s+decline)|i(?:'|’)m\s+(?:not\s+able|unable)\s+to|i(?:'|’)m\s+sorry,?\s+but|(?:not|isn(?:'|’)?t)\s+something\s+i\s+can|unable\s+to\s+(?:help|assist|comply))`)

// isRefusal reports whether an answer declines the request.
func isRefusal(text string) bool { return refusalPattern.MatchString(text) }

func refusalCheck(want bool, text string) Check {
	got := isRefusal(text)
	exp, reason := "a refusal", "the answer does not refuse"
	if !want {
		exp, reason = "no refusal", "the answer refuses"
	}
	return pass("refusal", exp, text, got == want, reason)
}

func rougeCheck(e *RougeExpect, text string) Check {
	name := cmpOr(e.Metric, "rouge1")
	c := scored(name, Rouge1(text, e.Reference), e.Threshold, e.Reference, text, "")
	if !c.Pass {
		c.Reason = fmt.Sprintf("ROUGE-1 F %.3f is under %.3f", *c.Score, e.Threshold)
	}
	return c
}
