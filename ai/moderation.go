package ai

import (
	"context"
	"fmt"

	"github.com/weftlabs/weft/llm"
)

// moderation is step 7: the moderation model's verdict on the user
// message, computed concurrently with the model call. The turn owns the
// goroutine and stops it on return.
type moderation struct {
	input  string
	cancel context.CancelFunc
	done   chan struct{}
	res    llm.ModerationResult
	err    error
}

func startModeration(ctx context.Context, m llm.ModerationModel, input string) *moderation {
	ctx, cancel := context.WithCancel(ctx)
	md := &moderation{input: input, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(md.done)
		res, err := m.Moderate(ctx, []string{input})
		switch {
		case err != nil:
			md.err = fmt.Errorf("ai: moderation: %w", err)
		case len(res) == 0:
			md.err = fmt.Errorf("ai: moderation: the model returned no verdict")
		default:
			md.res = res[0]
		}
	}()
	return md
}

// verdict returns the moderation's failure, waiting for it when wait is
// true; without waiting, an unfinished moderation is no failure yet.
func (m *moderation) verdict(wait bool) error {
	if wait {
		<-m.done
	} else {
		select {
		case <-m.done:
		default:
			return nil
		}
	}
	if m.err != nil {
		return m.err
	}
	if m.res.Flagged {
		return &ModerationError{Input: m.input, Result: m.res}
	}
	return nil
}

// stop cancels the moderation call and waits for its goroutine.
func (m *moderation) stop() {
	m.cancel()
	<-m.done
}
