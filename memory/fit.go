package memory

import "github.com/weftlabs/weft/llm"

// Fit returns the part of recs (oldest first, as Load returns them) that a
// window keeps. The rules, shared by every window and by the platform's
// sliding window:
//
//   - A system record in first place is always kept, even alone and larger
//     than the window; its tokens count against MaxTokens but not against
//     MaxMessages.
//   - The log is walked from the newest record back; records are kept while
//     they fit and the walk stops at the first that does not, so the result
//     is always the newest contiguous history.
//   - An assistant message that made tool calls and the tool results that
//     answer it are one indivisible unit: kept or dropped together.
//   - Tool results whose call is not in the window (their assistant message
//     was already evicted) are dropped.
//
// A zero bound is no bound. Fit does not allocate when it can return a
// sub-slice of recs.
func Fit(recs []Record, w Window) []Record {
	var sys *Record
	log := recs
	if len(recs) > 0 && recs[0].Message.Role == llm.RoleSystem {
		sys, log = &recs[0], recs[1:]
	}
	start := fitStart(sys, log, w)
	kept := log[start:]
	if sys == nil {
		return kept
	}
	if start == 0 {
		return recs
	}
	out := make([]Record, 0, len(kept)+1)
	out = append(out, *sys)
	return append(out, kept...)
}

// fitStart returns the index of the oldest record of log that Fit keeps
// when sys (nil for none) is the system record before log.
func fitStart(sys *Record, log []Record, w Window) int {
	tokens, count := 0, 0
	if sys != nil {
		tokens = sys.Tokens
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
		if w.MaxTokens > 0 && tokens+ut > w.MaxTokens {
			break
		}
		if w.MaxMessages > 0 && count+un > w.MaxMessages {
			break
		}
		tokens += ut
		count += un
		start = first
	}
	return start
}

// Tokens returns the sum of the records' token counts.
func Tokens(recs []Record) int {
	n := 0
	for i := range recs {
		n += recs[i].Tokens
	}
	return n
}
