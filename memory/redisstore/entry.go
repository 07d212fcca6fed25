package redisstore

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
)

// The log's entry format is written here by hand rather than as JSON alone
// because decoding dominates Load: a plain text message (one text part and
// nothing else) decodes by slicing, without scanning its text.

// stored is the JSON payload of a message that is not plain text.
type stored struct {
	ID        string      `json:"i"`
	Message   llm.Message `json:"m"`
	CreatedAt int64       `json:"t"` // Unix ns
	Partial   bool        `json:"p,omitempty"`
}

// plain reports whether m has the compact encoding: one text part and no
// other field, and a role without "|".
func plain(m llm.Message) bool {
	return len(m.Parts) == 1 && m.Parts[0].Kind == llm.PartText && m.Parts[0].Image == nil &&
		m.Reasoning == "" && m.ToolCalls == nil && m.ToolCallID == "" && m.Name == "" && !m.IsError &&
		!strings.Contains(string(m.Role), "|")
}

// encodePayload returns the payload of r (everything but tokens and seq).
func encodePayload(r memory.Record) (string, error) {
	if plain(r.Message) {
		var b strings.Builder
		text := r.Message.Parts[0].Text
		b.Grow(len(r.Message.Role) + len(r.ID) + len(text) + 32)
		b.WriteByte('~')
		b.WriteString(string(r.Message.Role))
		b.WriteByte('|')
		b.WriteString(strconv.FormatInt(r.CreatedAt.UnixNano(), 10))
		if r.Partial {
			b.WriteString("|1|")
		} else {
			b.WriteString("|0|")
		}
		b.WriteString(strconv.Itoa(len(r.ID)))
		b.WriteByte(':')
		b.WriteString(r.ID)
		b.WriteString(text)
		return b.String(), nil
	}
	js, err := json.Marshal(stored{ID: r.ID, Message: r.Message, CreatedAt: r.CreatedAt.UnixNano(), Partial: r.Partial})
	return string(js), err
}

// decodePayload decodes a payload into a record's ID, Message, CreatedAt
// and Partial. The compact form's strings share memory with payload.
func decodePayload(payload string) (memory.Record, error) {
	if !strings.HasPrefix(payload, "~") {
		var st stored
		if err := json.Unmarshal([]byte(payload), &st); err != nil {
			return memory.Record{}, err
		}
		return memory.Record{ID: st.ID, Message: st.Message, CreatedAt: time.Unix(0, st.CreatedAt).UTC(), Partial: st.Partial}, nil
	}
	bad := fmt.Errorf("malformed payload %.40q", payload)
	role, rest, ok1 := strings.Cut(payload[1:], "|")
	ns, rest, ok2 := strings.Cut(rest, "|")
	partial, rest, ok3 := strings.Cut(rest, "|")
	idLen, rest, ok4 := strings.Cut(rest, ":")
	if !ok1 || !ok2 || !ok3 || !ok4 || (partial != "0" && partial != "1") {
		return memory.Record{}, bad
	}
	at, err1 := strconv.ParseInt(ns, 10, 64)
	n, err2 := strconv.Atoi(idLen)
	if err1 != nil || err2 != nil || n < 0 || n > len(rest) {
		return memory.Record{}, bad
	}
	return memory.Record{
		ID:        rest[:n],
		Message:   llm.Message{Role: llm.Role(role), Parts: []llm.Part{{Kind: llm.PartText, Text: rest[n:]}}},
		CreatedAt: time.Unix(0, at).UTC(),
		Partial:   partial == "1",
	}, nil
}

// decodeEntry decodes a log entry, "<tokens>|<seq>|<payload>".
func decodeEntry(e string) (memory.Record, error) {
	tok, rest, ok1 := strings.Cut(e, "|")
	seq, payload, ok2 := strings.Cut(rest, "|")
	t, err1 := strconv.Atoi(tok)
	n, err2 := strconv.ParseInt(seq, 10, 64)
	if !ok1 || !ok2 || err1 != nil || err2 != nil {
		return memory.Record{}, fmt.Errorf("malformed entry %.40q", e)
	}
	r, err := decodePayload(payload)
	if err != nil {
		return memory.Record{}, fmt.Errorf("decode entry seq %d: %w", n, err)
	}
	r.Seq, r.Tokens = n, t
	return r, nil
}
