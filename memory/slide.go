package memory

import (
	"context"
	"fmt"

	"github.com/weftlabs/weft/llm"
)

// Budget is the token budget of one model call: the model's context window
// less what is kept free for the reply.
type Budget struct {
	// ContextWindow is the model's context window in tokens.
	ContextWindow int
	// Reserve is the number of tokens kept free for the model's reply.
	Reserve int
}

// Available returns the tokens a request may use: ContextWindow − Reserve.
func (b Budget) Available() int { return b.ContextWindow - b.Reserve }

// Slide is the token sliding window of a chat turn: it returns the newest
// part of history (as Load returns it: a system record first, if any, then
// the log oldest first) that fits beside fixed, the tokens of everything
// else the request will carry (system prompt, retrieved context, tool
// schemas, the current query).
//
// The history's budget is b.Available() − fixed, and the rules are [Fit]'s:
// the history is walked from the newest record back, records are kept while
// they fit, a tool-call message and its results are kept or dropped
// together, and tool results whose call was dropped are dropped. A stored
// system record is kept and counts against the budget. The result is never
// larger than the budget.
//
// When fixed (plus a stored system record) alone does not fit, Slide returns
// an [*llm.Error] that matches [llm.ErrContextTooLong], so a turn fails
// before any model call.
func Slide(history []Record, b Budget, fixed int) ([]Record, error) {
	budget, err := historyBudget(b, fixed)
	if err != nil {
		return nil, err
	}
	hasSys := len(history) > 0 && history[0].Message.Role == llm.RoleSystem
	sys := 0
	if hasSys {
		sys = history[0].Tokens
		if sys > budget {
			return nil, tooLong(fixed+sys, b)
		}
	}
	if budget-sys <= 0 {
		// Only the system record, if any, fits; Fit reads 0 as no bound.
		if hasSys {
			return history[:1], nil
		}
		return history[:0], nil
	}
	return Fit(history, Window{MaxTokens: budget}), nil
}

// LoadSlide loads key's conversation from s and applies [Slide]: one Load
// with the window's token bound set to the budget (one round trip on the
// Redis store). It checks the budget before touching the store.
func LoadSlide(ctx context.Context, s Store, key Key, b Budget, fixed int) ([]Record, error) {
	budget, err := historyBudget(b, fixed)
	if err != nil {
		return nil, err
	}
	// Load reads MaxTokens 0 as no bound; 1 loads at most what a zero
	// budget can hold, and Slide cuts it exactly.
	history, err := s.Load(ctx, key, Window{MaxTokens: max(budget, 1)})
	if err != nil {
		return nil, err
	}
	return Slide(history, b, fixed)
}

func historyBudget(b Budget, fixed int) (int, error) {
	if b.ContextWindow <= 0 || b.Reserve < 0 || fixed < 0 {
		return 0, fmt.Errorf("memory: invalid budget: context window %d, reserve %d, fixed %d tokens", b.ContextWindow, b.Reserve, fixed)
	}
	if fixed > b.Available() {
		return 0, tooLong(fixed, b)
	}
	return b.Available() - fixed, nil
}

func tooLong(need int, b Budget) error {
	return &llm.Error{
		Kind: llm.ErrContextTooLong,
		Message: fmt.Sprintf("system prompt and query need %d tokens; the budget is %d (context window %d less %d reserved for the reply): shorten them or use a model with a larger context window",
			need, b.Available(), b.ContextWindow, b.Reserve),
	}
}
