package platform

import (
	"bufio"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/weftlabs/weft/provider/scripted"
)

// dashboardFile is the Grafana dashboard of /metrics.
const dashboardFile = "../deploy/grafana/weft.json"

// promFunctions are the PromQL functions and aggregations the dashboard may
// use; any other name in a query must be a metric the server exports.
var promFunctions = []string{"sum", "avg", "min", "max", "count", "rate", "irate", "increase",
	"histogram_quantile", "label_values", "topk", "bottomk", "clamp_min", "clamp_max", "abs", "delta", "deriv"}

var (
	promStrings   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	promMatchers  = regexp.MustCompile(`\{[^}]*\}`)
	promRanges    = regexp.MustCompile(`\[[^\]]*\]`)
	promGrouping  = regexp.MustCompile(`\b(?:by|without)\s*\([^)]*\)`)
	promIdent     = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	promLabelArgs = regexp.MustCompile(`,\s*[A-Za-z_][A-Za-z0-9_]*\s*\)`) // label_values(metric, label)
)

// queryMetrics returns the metric names a PromQL query reads.
func queryMetrics(q string) []string {
	q = promStrings.ReplaceAllString(q, `""`)
	q = promMatchers.ReplaceAllString(q, "")
	q = promRanges.ReplaceAllString(q, "")
	q = promGrouping.ReplaceAllString(q, "")
	q = promLabelArgs.ReplaceAllString(q, ")")
	var out []string
	for _, id := range promIdent.FindAllString(q, -1) {
		if !slices.Contains(promFunctions, id) && !slices.Contains([]string{"and", "or", "unless", "on", "ignoring", "bool", "offset"}, id) {
			out = append(out, id)
		}
	}
	return out
}

// TestDashboardMetricsExist fails when a query of the Grafana dashboard
// names a metric the server does not export: it drives a server through
// ok, failed, streamed and tool-calling turns and refused keys, then reads
// /metrics.
func TestDashboardMetricsExist(t *testing.T) {
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
		Templating struct {
			List []struct {
				Name       string
				Definition string
			}
		}
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	queries := map[string]string{} // query → where
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			queries[tg.Expr] = "panel " + p.Title
		}
	}
	for _, v := range dash.Templating.List {
		if v.Definition != "" {
			queries[v.Definition] = "variable " + v.Name
		}
	}
	if len(queries) < 10 {
		t.Fatalf("%s: only %d queries", dashboardFile, len(queries))
	}

	model := scripted.New(
		scripted.WhenUserSays(regexp.MustCompile(`^fail`), scripted.Fail(errors.New("upstream is down"))),
		scripted.CallToolWhen(regexp.MustCompile(`^tool`), "no_such_tool", `{}`),
		scripted.SummarizeToolResults(),
		scripted.Echo(),
	)
	e := newEnv(t, model)
	a := e.createAgent(e.admin, map[string]any{"name": "dash"})
	for _, q := range []string{"hello", "fail now", "tool please"} {
		e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": q}, nil)
	}
	resp := e.do(e.admin, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "stream it", "stream": true}, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	e.do("", "GET", "/v1/agents", nil, nil) // a refused key

	resp = e.do("", "GET", "/metrics", nil, nil)
	exported := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, " ")
		name, _, _ = strings.Cut(name, "{")
		exported[name] = true
	}
	var missing []string
	for q, where := range queries {
		names := queryMetrics(q)
		if len(names) == 0 {
			t.Errorf("%s: query %q names no metric", where, q)
		}
		for _, n := range names {
			if !exported[n] {
				missing = append(missing, where+": "+n)
			}
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("the dashboard (%s) queries metrics /metrics does not export:\n  %s\nexported: %v",
			dashboardFile, strings.Join(missing, "\n  "), sortedKeys(exported))
	}
}

func TestQueryMetrics(t *testing.T) {
	got := queryMetrics(`histogram_quantile(0.95, sum by (le, route) (rate(weft_x_bucket{instance=~"$instance",status=~"5.."}[$__rate_interval]))) / sum(go_goroutines) and label_values(weft_y, instance)`)
	if !slices.Equal(got, []string{"weft_x_bucket", "go_goroutines", "weft_y"}) {
		t.Errorf("queryMetrics = %v", got)
	}
}
