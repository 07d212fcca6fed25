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
	want := "tool get_weather({\"city\":\"Paris\"}) -> {\"city\":\"Paris\",\"temp_c\":21}\n" +
		"answer: get_weather returned: {\"city\":\"Paris\",\"temp_c\":21}\n"
	if got := out.String(); got != want {
		t.Errorf("output %q, want %q", got, want)
	}
}
