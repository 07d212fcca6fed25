package ai

import (
	"errors"
	"maps"
	"slices"
	"strconv"

	"github.com/weftlabs/weft/llm"
)

// ParseError is an answer that did not parse into the declared type, after
// the re-prompts ran out. Raw is the model's text.
type ParseError struct {
	// Type is the declared type, as Go writes it.
	Type string
	Raw  string
	Err  error
}

// Error names the type and the cause.
func (e *ParseError) Error() string {
	return "ai: answer is not a valid " + e.Type + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *ParseError) Unwrap() error { return e.Err }

// ToolRoundsError ends a turn whose model kept calling tools past the
// bound. Partial holds what the turn produced.
type ToolRoundsError struct {
	Rounds  int
	Partial *Outcome
}

// Error says how many rounds ran.
func (e *ToolRoundsError) Error() string {
	return "ai: the model was still calling tools after " + strconv.Itoa(e.Rounds) + " rounds (raise MaxToolRounds, or check the tools' results)"
}

// PartialError is a turn that failed while the model was answering, after
// it had said something: Outcome holds what the turn produced, its
// finished tool rounds and, in Text, the answer cut short (Outcome.Partial
// is true; memory keeps the text as an assistant record marked Partial,
// with the turn's ID). Err is the failure; errors.Is and errors.As see
// through to it. A failure before any answer text is returned as it is.
type PartialError struct {
	Err     error
	Outcome *Outcome
}

// Error is the failure's message.
func (e *PartialError) Error() string { return e.Err.Error() }

// Unwrap returns the failure.
func (e *PartialError) Unwrap() error { return e.Err }

// ToolResultError refuses the results of the caller's tools
// (Turn.ToolResults) that do not match the calls waiting for them: a
// result for a call that is not waiting, or a waiting call without a
// result. Nothing is stored.
type ToolResultError struct {
	// CallID names the call.
	CallID string
	// Missing is true for a waiting call without a result, false for a
	// result no call waits for.
	Missing bool
}

// Error names the call.
func (e *ToolResultError) Error() string {
	if e.Missing {
		return "ai: the tool call " + strconv.Quote(e.CallID) + " has no result"
	}
	return "ai: no tool call " + strconv.Quote(e.CallID) + " is waiting for a result"
}

// ModerationError fails a call whose input the moderation model flagged.
type ModerationError struct {
	Input  string
	Result llm.ModerationResult
}

// Error names the flagged categories.
func (e *ModerationError) Error() string {
	s := "ai: input flagged by moderation"
	first := true
	for _, c := range slices.Sorted(maps.Keys(e.Result.Categories)) {
		if !e.Result.Categories[c] {
			continue
		}
		if first {
			s += ":"
			first = false
		} else {
			s += ","
		}
		s += " " + c
	}
	return s
}

// ErrNoAnswer is returned when the model's final answer is empty where the
// declared type needs a value.
var ErrNoAnswer = errors.New("ai: the model gave no answer")

// MemoryError is a turn that failed because its memory did: the store
// could not hold, read or write the conversation. Err is the store's
// error; it matches memory.ErrLockTimeout when another turn held the
// conversation past the lease's wait. ID is the turn's MemoryID.
type MemoryError struct {
	ID  string
	Err error
}

// Error names the memory and the store's failure.
func (e *MemoryError) Error() string {
	if e.ID == "" {
		return "ai: memory: " + e.Err.Error()
	}
	return "ai: memory " + strconv.Quote(e.ID) + ": " + e.Err.Error()
}

// Unwrap returns the store's failure.
func (e *MemoryError) Unwrap() error { return e.Err }
