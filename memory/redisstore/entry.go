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
func decodePayload(payload string) (memory.Record, error) { return decodePayloadIn(payload, nil) }

// decodePayloadIn is decodePayload that puts the text part of a compact
// payload in slot (a slice of length 1) when it is not nil, so that a Load
// allocates the parts of all its records at once.
func decodePayloadIn(payload string, slot []llm.Part) (memory.Record, error) {
	if !strings.HasPrefix(payload, "~") {
		var st stored
		if err := json.Unmarshal([]byte(payload), &st); err != nil {
			return memory.Record{}, err
		}
		// Append never writes empty lists (omitempty); read them as absent.
		if len(st.Message.Parts) == 0 {
			st.Message.Parts = nil
		}
		if len(st.Message.ToolCalls) == 0 {
			st.Message.ToolCalls = nil
		}
		return memory.Record{ID: st.ID, Message: st.Message, CreatedAt: time.Unix(0, st.CreatedAt).UTC(), Partial: st.Partial}, nil
	}
	role, rest, ok1 := strings.Cut(payload[1:], "|")
	ns, rest, ok2 := strings.Cut(rest, "|")
	partial, rest, ok3 := strings.Cut(rest, "|")
	idLen, rest, ok4 := strings.Cut(rest, ":")
	if !ok1 || !ok2 || !ok3 || !ok4 || (partial != "0" && partial != "1") {
		return memory.Record{}, malformedPayload(payload)
	}
	at, err1 := strconv.ParseInt(ns, 10, 64)
	n, err2 := strconv.Atoi(idLen)
	if err1 != nil || err2 != nil || n < 0 || n > len(rest) {
		return memory.Record{}, malformedPayload(payload)
	}
	if slot == nil {
		slot = make([]llm.Part, 1)
	}
	slot[0] = llm.Part{Kind: llm.PartText, Text: rest[n:]}
	return memory.Record{
		ID:        rest[:n],
		Message:   llm.Message{Role: llm.Role(role), Parts: slot},
		CreatedAt: time.Unix(0, at).UTC(),
		Partial:   partial == "1",
	}, nil
}

func malformedPayload(payload string) error {
	return fmt.Errorf("malformed payload %.40q", payload)
}

// decodeEntry decodes a log entry, "<tokens>|<seq>|<payload>".
func decodeEntry(e string) (memory.Record, error) { return decodeEntryIn(e, nil) }

// decodeEntryIn is decodeEntry with the slot of [decodePayloadIn].
func decodeEntryIn(e string, slot []llm.Part) (memory.Record, error) {
	tok, rest, ok1 := strings.Cut(e, "|")
	seq, payload, ok2 := strings.Cut(rest, "|")
	t, err1 := strconv.Atoi(tok)
	n, err2 := strconv.ParseInt(seq, 10, 64)
	if !ok1 || !ok2 || err1 != nil || err2 != nil {
		return memory.Record{}, fmt.Errorf("malformed entry %.40q", e)
	}
	r, err := decodePayloadIn(payload, slot)
	if err != nil {
		return memory.Record{}, fmt.Errorf("decode entry seq %d: %w", n, err)
	}
	r.Seq, r.Tokens = n, t
	return r, nil
}
