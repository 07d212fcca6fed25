package workflow

import (
	"context"
	"testing"
)

func TestCondition(t *testing.T) {
	c, err := NewCondition("args", `args.amount > 100`)
	if err != nil {
		t.Fatal(err)
	}
	for v, want := range map[float64]bool{50: false, 150: true} {
		if got, err := c.Eval(context.Background(), map[string]any{"amount": v}); err != nil || got != want {
			t.Errorf("amount %v: %v %v, want %v", v, got, err, want)
		}
	}
	// A tenant's expression makes bounded values: the guard refuses
	// what would take the server's memory.
	bomb, err := NewCondition("args", `len(repeat("x", 1000000000000)) > 0`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bomb.Eval(context.Background(), map[string]any{}); err == nil {
		t.Error("a repeat of 10^12 bytes was evaluated")
	}
	for _, src := range []string{`args.(`, `__weft_ctx != nil`} {
		if _, err := NewCondition("args", src); err == nil {
			t.Errorf("%q compiled", src)
		}
	}
}
