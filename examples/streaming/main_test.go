package main

import (
	"context"
	"testing"
)

// pieces counts the writes the program makes.
type pieces struct {
	n    int
	text string
}

func (p *pieces) Write(b []byte) (int, error) {
	p.n++
	p.text += string(b)
	return len(b), nil
}

func TestRun(t *testing.T) {
	t.Setenv("WEFT_DEFAULT_MODEL", "")
	var out pieces
	if err := run(context.Background(), &out, []string{"stream", "these", "words"}); err != nil {
		t.Fatal(err)
	}
	want := "This is Weft's offline demo model, so it repeats what you said: stream these words\n"
	if out.text != want {
		t.Errorf("output %q, want %q", out.text, want)
	}
	if out.n < 5 {
		t.Errorf("the answer came in %d writes, want it streamed in pieces", out.n)
	}
}
