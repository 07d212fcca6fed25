package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	t.Setenv("WEFT_DEFAULT_MODEL", "")
	db := filepath.Join(t.TempDir(), "memory.db")
	var out strings.Builder
	if err := run(context.Background(), &out, []string{db}); err != nil {
		t.Fatal(err)
	}
	// System message, then user and assistant per turn.
	for _, want := range []string{"alice's memory holds 5 messages", "bob's memory holds 3 messages"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// A second run over the same file continues both conversations.
	out.Reset()
	if err := run(context.Background(), &out, []string{db}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"alice's memory holds 9 messages", "bob's memory holds 5 messages"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("second run lacks %q:\n%s", want, out.String())
		}
	}
}
