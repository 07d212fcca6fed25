package main

import (
	"context"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	t.Setenv("WEFT_DEFAULT_MODEL", "")
	var out strings.Builder
	if err := run(context.Background(), &out, nil); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "Alice Smith is 30\n" {
		t.Errorf("output %q", got)
	}
}
