package guardrail_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/weftlabs/weft/guardrail"
	"github.com/weftlabs/weft/llm"
)

func TestCheckInput(t *testing.T) {
	t.Parallel()
	upper := guardrail.InputFunc(func(ctx context.Context, r guardrail.InputRequest) guardrail.Verdict {
		return guardrail.Rewritten(strings.ToUpper(r.Message.Text()))
	})
	noX := guardrail.InputFunc(func(ctx context.Context, r guardrail.InputRequest) guardrail.Verdict {
		if strings.Contains(r.Message.Text(), "X") {
			return guardrail.Failure("has an X")
		}
		return guardrail.Success()
	})
	img := llm.ImageURLPart("https://example.com/i.png")
	msg := llm.UserParts(llm.TextPart("hello"), img)
	got, err := guardrail.CheckInput(context.Background(), []guardrail.Input{upper, noX}, guardrail.InputRequest{Message: msg})
	if err != nil || got.Text() != "HELLO" || !got.HasImages() {
		t.Errorf("got %+v, %v", got, err)
	}
	_, err = guardrail.CheckInput(context.Background(), []guardrail.Input{upper, noX}, guardrail.InputRequest{Message: llm.UserMessage("x")})
	var ge *guardrail.Error
	if !errors.As(err, &ge) || ge.Output || err.Error() != "guardrail: input rejected: has an X" {
		t.Errorf("err = %v", err)
	}
}

func TestCheckOutput(t *testing.T) {
	t.Parallel()
	trim := guardrail.OutputFunc(func(ctx context.Context, r guardrail.OutputRequest) guardrail.Verdict {
		return guardrail.Rewritten(strings.TrimSpace(r.Message.Text()))
	})
	short := guardrail.OutputFunc(func(ctx context.Context, r guardrail.OutputRequest) guardrail.Verdict {
		if len(r.Message.Text()) > 5 {
			return guardrail.Retry("too long", "Be shorter.")
		}
		return guardrail.Success()
	})
	tests := []struct {
		in, want string
		action   guardrail.Action
	}{
		{"  hi  ", "hi", guardrail.Pass},
		{" too long ", "too long", guardrail.Reprompt},
	}
	for _, tt := range tests {
		got, v := guardrail.CheckOutput(context.Background(), []guardrail.Output{trim, short}, guardrail.OutputRequest{Message: llm.AssistantMessage(tt.in)})
		if got.Text() != tt.want || v.Action != tt.action {
			t.Errorf("%q: got %q %v", tt.in, got.Text(), v.Action)
		}
	}
	if s := (&guardrail.Error{Output: true, Reason: "r", Attempts: 3}).Error(); s != "guardrail: output rejected after 3 attempts: r" {
		t.Errorf("Error() = %q", s)
	}
}
