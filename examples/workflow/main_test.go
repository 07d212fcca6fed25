package main

import (
	"context"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	t.Setenv("WEFT_DEFAULT_MODEL", "")
	for _, tc := range []struct {
		ticket string
		want   []string
	}{
		{"I was charged twice, please refund me.", []string{
			"route     succeeded branch=send",
			"escalate  skipped",
			"SENT: Hello, thank you for writing. Duplicate charges are refunded automatically within 5 business days.\n",
		}},
		{"The app crashes immediately.", []string{
			"classify  succeeded category=bug",
			"send      skipped",
			"ESCALATED (bug, high urgency; check: no help-centre answer).",
		}},
	} {
		var out strings.Builder
		if err := run(context.Background(), &out, []string{tc.ticket}); err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%q: output lacks %q:\n%s", tc.ticket, w, out.String())
			}
		}
	}
}
