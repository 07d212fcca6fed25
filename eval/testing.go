package eval

import (
	"fmt"
	"strings"
	"testing"
)

// Test runs the suite as subtests of t, one per case (named by its id):
// a failing case fails its subtest with its failed checks, expected
// against actual. It takes the options of [Run]; a suite that cannot run
// at all (see Run) fails t.
//
//	func TestSupportSuite(t *testing.T) {
//		s, err := eval.Load("testdata/support.yaml")
//		if err != nil {
//			t.Fatal(err)
//		}
//		eval.Test(t, target, s, eval.WithCassettes(cassettes))
//	}
func Test(t *testing.T, target Target, s *Suite, opts ...Option) {
	t.Helper()
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	r := newRunner(target, s, opts)
	if err := r.checkNames(t.Context()); err != nil {
		t.Fatal(err)
	}
	for i := range s.Cases {
		c := &s.Cases[i]
		t.Run(c.ID, func(t *testing.T) {
			cr := r.runCase(t.Context(), c)
			if !cr.Pass {
				t.Error(failure(&cr))
			}
		})
	}
}

// failure describes why a case failed.
func failure(cr *CaseResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "case %s (%s) failed: %d of %d runs passed (%s)", cr.ID, cr.Subject, cr.Passed, cr.K, cr.Rule)
	if cr.Error != "" {
		b.WriteString("\n  error: " + cr.Error)
	}
	for i, run := range cr.Runs {
		for j, t := range run.Turns {
			for _, c := range t.Checks {
				if c.Pass {
					continue
				}
				fmt.Fprintf(&b, "\n  run %d, turn %d: %s: %s", i+1, j+1, c.Name, c.Reason)
				if c.Expected != "" {
					b.WriteString("\n    expected: " + clip(c.Expected, 300))
				}
				b.WriteString("\n    actual:   " + clip(c.Actual, 300))
			}
		}
	}
	return b.String()
}
