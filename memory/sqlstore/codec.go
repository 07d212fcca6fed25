package sqlstore

import (
	"encoding/json"
	"strings"

	"github.com/weftlabs/weft/llm"
)

// Messages are stored in memory_messages.message as text. A plain message
// (one text part and nothing else: most messages) is "~<role>|<text>",
// which decodes without a JSON parser (decoding was most of a window
// load's cost); any other message is its JSON, which starts with "{".
// Both forms are read, so rows written before the plain form remain
// readable.

// plain reports whether m has the plain form.
func plain(m llm.Message) bool {
	return len(m.Parts) == 1 && m.Parts[0].Kind == llm.PartText && m.Parts[0].Image == nil &&
		m.Reasoning == "" && m.ToolCalls == nil && m.ToolCallID == "" && m.Name == "" && !m.IsError &&
		m.Role != "" && !strings.ContainsRune(string(m.Role), '|')
}

// encodeMessage returns m's stored text, and a copy of m that shares no
// memory with it (what Append returns).
func encodeMessage(m llm.Message) (string, llm.Message, error) {
	if plain(m) {
		text := m.Parts[0].Text
		return "~" + string(m.Role) + "|" + text, llm.Message{Role: m.Role, Parts: []llm.Part{llm.TextPart(text)}}, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", llm.Message{}, err
	}
	var c llm.Message
	err = json.Unmarshal(b, &c)
	return string(b), c, err
}

// decodeMessage decodes a stored message (either form).
func decodeMessage(s string) (llm.Message, error) {
	if len(s) > 0 && s[0] == '~' {
		role, text, ok := strings.Cut(s[1:], "|")
		if ok {
			return llm.Message{Role: llm.Role(role), Parts: []llm.Part{llm.TextPart(text)}}, nil
		}
	}
	var m llm.Message
	err := json.Unmarshal([]byte(s), &m)
	return m, err
}
