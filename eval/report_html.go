package eval

import (
	"fmt"
	"html/template"
	"io"
	"time"
)

// WriteHTML writes the report as one self-contained HTML page (inline
// CSS, no script, no outside asset): a summary, the changes against
// baseline (nil for none), and per case each run's turns with the answer,
// the tool trajectory, the citations and every check, expected against
// actual, with the judge's reason.
func (r *Report) WriteHTML(w io.Writer, baseline *Report) error {
	passed, failed := r.Counts()
	data := struct {
		R              *Report
		Passed, Failed int
		Changes        []Change
		Baseline       *Report
	}{R: r, Passed: passed, Failed: failed, Baseline: baseline}
	if baseline != nil {
		data.Changes = r.Compare(baseline)
	}
	return htmlReport.Execute(w, data)
}

var htmlReport = template.Must(template.New("report").Funcs(template.FuncMap{
	"ms": func(d time.Duration) string { return d.Round(time.Millisecond).String() },
	"score": func(f *float64) string {
		if f == nil {
			return ""
		}
		return fmt.Sprintf("%.3f", *f)
	},
	"add":     func(a, b int) int { return a + b },
	"outcome": outcome,
	"time":    func(t time.Time) string { return t.Format(time.RFC3339) },
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>weft eval: {{.Passed}} passed, {{.Failed}} failed</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem auto;max-width:72rem;padding:0 1rem;color:#1d2330}
h1{font-size:1.4rem}h2{font-size:1.15rem;margin-top:2rem}
table{border-collapse:collapse;width:100%;margin:.5rem 0}th,td{border-bottom:1px solid #dde1e8;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f3f5f8}.pass{color:#116b2f;font-weight:600}.fail{color:#b3261e;font-weight:600}
details{border:1px solid #dde1e8;border-radius:6px;margin:.5rem 0;padding:.4rem .8rem}details[open]{background:#fbfcfd}
summary{cursor:pointer}pre{white-space:pre-wrap;word-break:break-word;background:#f3f5f8;padding:.4rem .6rem;border-radius:4px;margin:.2rem 0}
.muted{color:#5b6475}.err{background:#fdecea;padding:.4rem .6rem;border-radius:4px}
</style></head><body>
<h1>weft eval — <span class="{{if .Failed}}fail{{else}}pass{{end}}">{{.Passed}} passed, {{.Failed}} failed</span></h1>
<p class="muted">Started {{time .R.Started}}, took {{ms .R.Duration}}; models: {{.R.Mode}}.</p>
{{if .Baseline}}<h2>Against the baseline of {{time .Baseline.Started}}</h2>
{{if .Changes}}<table><tr><th>change</th><th>suite</th><th>case</th><th>was</th><th>now</th></tr>
{{range .Changes}}<tr><td class="{{if eq .Kind "regressed"}}fail{{else}}pass{{end}}">{{.Kind}}</td><td>{{.Suite}}</td><td>{{.Case}}</td><td>{{.Was}}</td><td>{{.Now}}</td></tr>
{{end}}</table>{{else}}<p>No change.</p>{{end}}{{end}}
{{range $s := .R.Suites}}<h2>Suite {{$s.Name}} <span class="muted">({{$s.Format}}{{if $s.Path}}, {{$s.Path}}{{end}}; {{$s.Passed}} of {{len $s.Cases}} passed)</span></h2>
<table><tr><th>case</th><th>subject</th><th>result</th><th>time</th></tr>
{{range $s.Cases}}<tr><td>{{.ID}}</td><td>{{.Subject}}</td><td class="{{if .Pass}}pass{{else}}fail{{end}}">{{outcome .}}</td><td>{{ms .Duration}}</td></tr>
{{end}}</table>
{{range $c := $s.Cases}}<details{{if not $c.Pass}} open{{end}}><summary><b>{{$c.ID}}</b> — <span class="{{if $c.Pass}}pass{{else}}fail{{end}}">{{outcome $c}}</span> <span class="muted">{{$c.Subject}}{{range $c.Tags}} #{{.}}{{end}}</span></summary>
{{if $c.Error}}<p class="err">{{$c.Error}}</p>{{end}}
{{range $i, $run := $c.Runs}}{{if gt (len $c.Runs) 1}}<h4>Run {{add $i 1}}: <span class="{{if $run.Pass}}pass{{else}}fail{{end}}">{{if $run.Pass}}pass{{else}}FAIL{{end}}</span></h4>{{end}}
{{if $run.Error}}<p class="err">{{$run.Error}}</p>{{end}}
{{range $j, $t := $run.Turns}}<h4>Turn {{add $j 1}}</h4>
{{if $t.User}}<p><b>User</b></p><pre>{{$t.User}}</pre>{{end}}{{if $t.Inputs}}<p><b>Inputs</b></p><pre>{{printf "%v" $t.Inputs}}</pre>{{end}}
{{with $t.Answer}}<p><b>Answer</b> <span class="muted">{{ms .Latency}}{{if .Tokens}}, {{.Tokens}} tokens{{end}}{{if .CostUSD}}, ${{.CostUSD}}{{end}}{{if .Model}}, {{.Model}}{{end}}{{if .Status}}, run {{.Status}}{{end}}</span></p><pre>{{.Text}}</pre>
{{if .ToolCalls}}<p><b>Trajectory</b></p><table><tr><th>tool</th><th>arguments</th><th>result</th></tr>{{range .ToolCalls}}<tr><td>{{.Name}}</td><td><pre>{{printf "%s" .Arguments}}</pre></td><td><pre>{{if .Error}}error: {{.Error}}{{else}}{{.Result}}{{end}}</pre></td></tr>{{end}}</table>{{end}}
{{if .Citations}}<p><b>Retrieved</b>: {{range $k, $f := .Citations}}{{if $k}}, {{end}}{{$f.Document}}{{end}}</p>{{end}}{{end}}
{{if $t.Checks}}<table><tr><th>check</th><th>result</th><th>score</th><th>expected</th><th>actual</th><th>reason</th></tr>
{{range $t.Checks}}<tr><td>{{.Name}}</td><td class="{{if .Pass}}pass{{else}}fail{{end}}">{{if .Pass}}pass{{else}}FAIL{{end}}</td><td>{{score .Score}}{{if .Threshold}} (min {{score .Threshold}}){{end}}</td><td><pre>{{.Expected}}</pre></td><td><pre>{{.Actual}}</pre></td><td>{{.Reason}}</td></tr>
{{end}}</table>{{end}}
{{end}}{{end}}</details>
{{end}}{{end}}
</body></html>
`))
