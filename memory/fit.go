package memory

import (
	"context"
	"fmt"

	"github.com/weftlabs/weft/llm"
)

// Window is what a model call sees of a conversation: its newest records
// that fit the bounds. It is the one window of the package: a [Chat] reads
// through one ([MessageWindow], [TokenWindow]), and a server bounding
// history by a model's context window uses one with a Reserve. The zero
// Window keeps everything.
//
// The rules, applied by [Window.Fit]:
//
//   - A system record in first place is always kept; its tokens count
//     against MaxTokens but it does not count against MaxMessages.
//   - The log is walked from the newest record back; records are kept while
//     they fit and the walk stops at the first that does not, so the result
//     is always the newest contiguous history.
//   - An assistant message that made tool calls and the tool results that
//     answer it are one indivisible unit: kept or dropped together.
//   - Tool results whose call is not in the window (their assistant message
//     was already evicted) are dropped.
type Window struct {
	// MaxTokens bounds the sum of Tokens of the kept records, the system
	// record included; 0 means no bound. A system record larger than the
	// window is still kept, alone, unless the window has a Reserve.
	MaxTokens int
	// MaxMessages bounds the number of kept log records (the system record
	// is not counted); 0 means no bound.
	MaxMessages int
	// Reserve is the part of MaxTokens that history may not use: the room
	// kept for the model's reply and the tokens of everything else the
	// request carries (system prompt, retrieved context, tool schemas, the
	// new query). A window with a Reserve is a model call's budget: when the
	// Reserve and a stored system record do not fit MaxTokens together,
	// [Window.Fit] fails with an error matching [llm.ErrContextTooLong]
	// rather than keep what cannot be sent. It needs a MaxTokens.
	Reserve int
}

// Fit returns the part of recs (oldest first, as [Store.Load] returns them)
// that w keeps, by the rules of [Window]. It fails only when w has a
// Reserve: with an [*llm.Error] matching [llm.ErrContextTooLong] when the
// request cannot fit, and with a plain error when w is invalid. Fit does
// not allocate when it can return a sub-slice of recs.
func (w Window) Fit(recs []Record) ([]Record, error) {
	var sys *Record
	log := recs
	if len(recs) > 0 && recs[0].Message.Role == llm.RoleSystem {
		sys, log = &recs[0], recs[1:]
	}
	start, err := w.start(sys, log)
	if err != nil {
		return nil, err
	}
	kept := log[start:]
	if sys == nil {
		return kept, nil
	}
	if start == 0 {
		return recs, nil
	}
	out := make([]Record, 0, len(kept)+1)
	out = append(out, *sys)
	return append(out, kept...), nil
}

// Load returns the records of key's conversation in s that w keeps: one
// [Store.Load] (one round trip on the Redis store) cut by [Window.Fit]. A
// window with a Reserve is checked before the store is touched.
func (w Window) Load(ctx context.Context, s Store, key Key) ([]Record, error) {
	if _, err := w.budget(); err != nil {
		return nil, err
	}
	recs, err := s.Load(ctx, key, w.storeWindow())
	if err != nil {
		return nil, err
	}
	return w.Fit(recs)
}

// storeWindow returns the bounds to ask [Store.Load] for: a superset of
// what w keeps, which Fit then cuts exactly.
func (w Window) storeWindow() Window {
	sw := Window{MaxTokens: w.MaxTokens, MaxMessages: w.MaxMessages}
	if w.Reserve > 0 {
		// Load reads MaxTokens 0 as no bound; 1 loads at most what a zero
		// budget can hold.
		sw.MaxTokens = max(w.MaxTokens-w.Reserve, 1)
	}
	return sw
}

// budget returns the tokens history may use, -1 for no bound.
func (w Window) budget() (int, error) {
	if w.Reserve == 0 {
		if w.MaxTokens <= 0 {
			return -1, nil
		}
		return w.MaxTokens, nil
	}
	if w.Reserve < 0 || w.MaxTokens <= 0 {
		return 0, fmt.Errorf("memory: invalid window: reserve %d of %d tokens", w.Reserve, w.MaxTokens)
	}
	if w.Reserve > w.MaxTokens {
		return 0, w.tooLong(0)
	}
	return w.MaxTokens - w.Reserve, nil
}

func (w Window) tooLong(sys int) error {
	need := fmt.Sprintf("%d tokens", w.Reserve)
	if sys > 0 {
		need = fmt.Sprintf("%d tokens and the stored system message %d more", w.Reserve, sys)
	}
	return &llm.Error{
		Kind: llm.ErrContextTooLong,
		Message: fmt.Sprintf("the token budget is %d (the model's context window) and the reply, system prompt and query need %s before any history: shorten them or use a model with a larger context window",
			w.MaxTokens, need),
	}
}

// start returns the index of the oldest record of log that w keeps when sys
// (nil for none) is the system record before log.
func (w Window) start(sys *Record, log []Record) (int, error) {
	budget, err := w.budget()
	if err != nil {
		return 0, err
	}
	tokens, count := 0, 0
	if sys != nil {
		tokens = sys.Tokens
		if w.Reserve > 0 && tokens > budget {
			return 0, w.tooLong(tokens)
		}
	}
	start := len(log)
	for start > 0 {
		// One unit: a single record, or an assistant tool-call message with
		// the tool results that follow it.
		end := start
		first := start - 1
		for first >= 0 && log[first].Message.Role == llm.RoleTool {
			first--
		}
		if first < start-1 {
			// Tool results at log[first+1:end]; their call must be log[first].
			if first < 0 || len(log[first].Message.ToolCalls) == 0 {
				// Orphans: their call is gone. Drop them and everything older
				// (the history before an orphan cannot be contiguous with it).
				break
			}
		}
		if first < 0 {
			break
		}
		ut, un := 0, end-first
		for i := first; i < end; i++ {
			ut += log[i].Tokens
		}
		if budget >= 0 && tokens+ut > budget {
			break
		}
		if w.MaxMessages > 0 && count+un > w.MaxMessages {
			break
		}
		tokens += ut
		count += un
		start = first
	}
	return start, nil
}

// Tokens returns the sum of the records' token counts.
func Tokens(recs []Record) int {
	n := 0
	for i := range recs {
		n += recs[i].Tokens
	}
	return n
}
