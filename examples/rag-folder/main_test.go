package main

import (
	"context"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	t.Setenv("WEFT_DEFAULT_MODEL", "")
	t.Setenv("WEFT_EMBED_MODEL", "")
	var out strings.Builder
	if err := run(context.Background(), &out, []string{"docs"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ingested x200.md: 2 chunk(s)", "ingested returns.txt: 1 chunk(s)", `"The X200 battery lasts two days."`, "[1] "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
