package ai

import (
	"strconv"
	"strings"

	"github.com/weftlabs/weft/llm"
)

// The records a turn stores in memory are named after its ID: the answer
// (or the answer cut short) is ID itself, the user message ID+"-q", the
// caller's tool results ID+"-r0", ID+"-r1", …; the tool rounds between
// get ids from the store.

// questionID is the record id of turn's user message ("" without an id).
func questionID(turn string) string {
	if turn == "" {
		return ""
	}
	return turn + "-q"
}

// resultID is the record id of turn's i-th tool result from the caller.
func resultID(turn string, i int) string {
	if turn == "" {
		return ""
	}
	return turn + "-r" + strconv.Itoa(i)
}

// TurnOfRecord returns the ID of the turn that stored the record id, when
// id names a turn's user message or one of the caller's tool results (see
// [Turn.ID]); the record of a turn's answer is the turn's ID itself.
func TurnOfRecord(id string) (turnID string, ok bool) {
	if turn, ok := strings.CutSuffix(id, "-q"); ok && turn != "" {
		return turn, true
	}
	i := strings.LastIndex(id, "-r")
	if i <= 0 || i+2 == len(id) {
		return "", false
	}
	if _, err := strconv.ParseUint(id[i+2:], 10, 32); err != nil {
		return "", false
	}
	return id[:i], true
}

// answeredIn reports whether msgs hold a result of call id.
func answeredIn(msgs []llm.Message, id string) bool {
	for _, m := range msgs {
		if m.Role == llm.RoleTool && m.ToolCallID == id {
			return true
		}
	}
	return false
}
