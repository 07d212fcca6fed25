package eval

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is the outcome of a run of one or more suites: what reports,
// baselines and `weft eval run --json` hold.
type Report struct {
	// Started is when the run began; Duration its wall time.
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration_ns"`
	// Mode says how models were reached: "replay", "record" or "live".
	Mode   string         `json:"mode"`
	Suites []*SuiteResult `json:"suites"`
}

// Counts returns the passing and failing cases of every suite.
func (r *Report) Counts() (passed, failed int) {
	for _, s := range r.Suites {
		p := s.Passed()
		passed += p
		failed += len(s.Cases) - p
	}
	return passed, failed
}

// MaxReportBytes bounds a report read back as a baseline.
const MaxReportBytes = 64 << 20

// ReadReport reads a report written by [Report.WriteJSON] (a baseline).
func ReadReport(path string) (*Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("eval: baseline: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxReportBytes+1))
	if err != nil {
		return nil, fmt.Errorf("eval: baseline %s: %w", path, err)
	}
	if len(data) > MaxReportBytes {
		return nil, fmt.Errorf("eval: baseline %s is larger than the limit of %d bytes", path, MaxReportBytes)
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("eval: baseline %s: %w", path, err)
	}
	return &r, nil
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Change is how a case differs from the baseline.
type Change struct {
	Suite, Case string
	// Kind is "regressed" (passed, now fails), "fixed" (failed, now
	// passes) or "new" (not in the baseline).
	Kind string
	// Was and Now describe the case in the baseline and now (passed
	// runs of all).
	Was, Now string
}

// Compare lists the cases whose outcome differs from the baseline's:
// regressions first, then fixes, then new cases, each in suite order.
func (r *Report) Compare(baseline *Report) []Change {
	old := map[string]*CaseResult{}
	for _, s := range baseline.Suites {
		for i := range s.Cases {
			old[s.Name+"\x00"+s.Cases[i].ID] = &s.Cases[i]
		}
	}
	var regressed, fixed, added []Change
	for _, s := range r.Suites {
		for i := range s.Cases {
			c := &s.Cases[i]
			ch := Change{Suite: s.Name, Case: c.ID, Now: outcome(c)}
			b, ok := old[s.Name+"\x00"+c.ID]
			switch {
			case !ok:
				ch.Kind = "new"
				added = append(added, ch)
			case b.Pass && !c.Pass:
				ch.Kind, ch.Was = "regressed", outcome(b)
				regressed = append(regressed, ch)
			case !b.Pass && c.Pass:
				ch.Kind, ch.Was = "fixed", outcome(b)
				fixed = append(fixed, ch)
			}
		}
	}
	return append(append(regressed, fixed...), added...)
}

func outcome(c *CaseResult) string {
	s := "FAIL"
	if c.Pass {
		s = "pass"
	}
	if c.K > 1 {
		s += fmt.Sprintf(" (%d/%d, %s)", c.Passed, c.K, c.Rule)
	}
	return s
}

// WriteTable writes a plain-text summary: a line per case, the reasons of
// the failures, the changes against baseline (nil for none), and a last
// line "N passed, M failed".
func (r *Report) WriteTable(w io.Writer, baseline *Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SUITE\tCASE\tSUBJECT\tRESULT\tTIME")
	for _, s := range r.Suites {
		for i := range s.Cases {
			c := &s.Cases[i]
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Name, c.ID, c.Subject, outcome(c), c.Duration.Round(time.Millisecond))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range r.Suites {
		for i := range s.Cases {
			if c := &s.Cases[i]; !c.Pass {
				fmt.Fprintf(w, "\n--- %s/%s\n%s\n", s.Name, c.ID, failure(c))
			}
		}
	}
	if baseline != nil {
		changes := r.Compare(baseline)
		fmt.Fprintf(w, "\nagainst the baseline of %s: ", baseline.Started.Format(time.RFC3339))
		if len(changes) == 0 {
			fmt.Fprintln(w, "no change")
		} else {
			fmt.Fprintln(w)
			for _, ch := range changes {
				fmt.Fprintf(w, "  %-9s %s/%s: %s → %s\n", ch.Kind, ch.Suite, ch.Case, cmpOr(ch.Was, "-"), ch.Now)
			}
		}
	}
	passed, failed := r.Counts()
	_, err := fmt.Fprintf(w, "\n%d passed, %d failed\n", passed, failed)
	return err
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Time      string      `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr,omitempty"`
	File      string      `xml:"file,attr,omitempty"`
	Cases     []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }

// WriteJUnit writes the report as JUnit XML: a testsuite per suite, a
// testcase per case; a case that failed a check is a failure, one that
// could not run (a call failed, a cassette does not match) an error.
func (r *Report) WriteJUnit(w io.Writer) error {
	out := junitSuites{Name: "weft eval", Time: seconds(r.Duration)}
	for _, s := range r.Suites {
		js := junitSuite{Name: s.Name, Tests: len(s.Cases), Time: seconds(s.Duration), File: s.Path}
		if !r.Started.IsZero() {
			js.Timestamp = r.Started.UTC().Format("2006-01-02T15:04:05")
		}
		for i := range s.Cases {
			c := &s.Cases[i]
			jc := junitCase{Name: c.ID, Classname: s.Name, Time: seconds(c.Duration)}
			if len(c.Runs) > 0 && len(c.Runs[len(c.Runs)-1].Turns) > 0 {
				if a := c.Runs[len(c.Runs)-1].Turns[len(c.Runs[len(c.Runs)-1].Turns)-1].Answer; a != nil {
					jc.SystemOut = a.Text
				}
			}
			switch {
			case c.Pass:
			case c.Error != "":
				jc.Error = &junitProblem{Message: clip(c.Error, 500), Type: "error", Text: failure(c)}
				js.Errors++
			default:
				jc.Failure = &junitProblem{Message: firstFailure(c), Type: "failure", Text: failure(c)}
				js.Failures++
			}
			js.Cases = append(js.Cases, jc)
		}
		out.Tests += js.Tests
		out.Failures += js.Failures
		out.Errors += js.Errors
		out.Suites = append(out.Suites, js)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// firstFailure names the first failed check of a case.
func firstFailure(c *CaseResult) string {
	for _, run := range c.Runs {
		for _, t := range run.Turns {
			for _, ch := range t.Checks {
				if !ch.Pass {
					return strings.TrimSpace(ch.Name + ": " + ch.Reason)
				}
			}
		}
	}
	return fmt.Sprintf("%d of %d runs passed (%s)", c.Passed, c.K, c.Rule)
}
