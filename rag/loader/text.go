package loader

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/weftlabs/weft/rag"
)

// decodeText turns bytes into UTF-8 text: UTF-8 (a BOM dropped, stray
// invalid bytes replaced by U+FFFD), UTF-16 with a BOM, or legacy 8-bit text
// (read as ISO-8859-1). Content with NUL bytes, many control characters, or
// mostly undecodable bytes is binary. Line endings become "\n".
func decodeText(data []byte) (string, error) {
	switch {
	case bytes.HasPrefix(data, []byte{0xEF, 0xBB, 0xBF}):
		data = data[3:]
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE}), bytes.HasPrefix(data, []byte{0xFE, 0xFF}):
		return decodeUTF16(data)
	}
	var control, invalid, multi int
	for i := 0; i < len(data); {
		c := data[i]
		if c < utf8.RuneSelf {
			if c == 0 {
				return "", fmt.Errorf("%w: NUL byte at offset %d", ErrBinary, i)
			}
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v' || c == 0x7F {
				control++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 {
			invalid++
		} else {
			multi++
		}
		i += size
	}
	n := len(data)
	switch {
	case control*20 > n: // over 5% control characters
		return "", fmt.Errorf("%w: %d control characters in %d bytes", ErrBinary, control, n)
	case invalid*10 > n*3: // over 30% bytes that are not UTF-8
		return "", fmt.Errorf("%w: %d of %d bytes are not valid UTF-8", ErrBinary, invalid, n)
	}
	var s string
	switch {
	case invalid == 0:
		s = string(data)
	case multi >= invalid:
		// Mostly UTF-8 with some damage: keep it, marking the damage.
		s = strings.ToValidUTF8(string(data), "\uFFFD")
	default:
		// No or few UTF-8 sequences: an 8-bit legacy encoding. ISO-8859-1
		// maps every byte to the code point of the same value.
		runes := make([]rune, len(data))
		for i, c := range data {
			runes[i] = rune(c)
		}
		s = string(runes)
	}
	return normalizeNewlines(s), nil
}

func decodeUTF16(data []byte) (string, error) {
	be := data[0] == 0xFE
	data = data[2:]
	if len(data)%2 != 0 {
		return "", fmt.Errorf("%w: UTF-16 text with an odd number of bytes", ErrCorrupt)
	}
	u := make([]uint16, len(data)/2)
	for i := range u {
		if be {
			u[i] = uint16(data[2*i])<<8 | uint16(data[2*i+1])
		} else {
			u[i] = uint16(data[2*i+1])<<8 | uint16(data[2*i])
		}
		if u[i] == 0 {
			return "", fmt.Errorf("%w: NUL character in UTF-16 text", ErrBinary)
		}
	}
	return normalizeNewlines(string(utf16.Decode(u))), nil
}

func normalizeNewlines(s string) string {
	if !strings.Contains(s, "\r") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

func loadText(data []byte) (rag.Document, error) {
	s, err := decodeText(data)
	if err != nil {
		return rag.Document{}, err
	}
	return rag.Document{Text: s}, nil
}

// loadMarkdown keeps the Markdown as it is (the splitter reads its
// structure), removes YAML ("---") or TOML ("+++") front matter, and takes
// the title from the front matter or else the first heading.
func loadMarkdown(data []byte) (rag.Document, error) {
	s, err := decodeText(data)
	if err != nil {
		return rag.Document{}, err
	}
	body, meta := frontMatter(s)
	if meta[rag.MetaTitle] == "" {
		if t := firstHeading(body); t != "" {
			meta[rag.MetaTitle] = t
		}
	}
	return rag.Document{Text: body, Metadata: meta}, nil
}

// frontMatterKeys are the front matter fields kept as document metadata.
var frontMatterKeys = map[string]bool{"title": true, "description": true, "author": true, "date": true, "lang": true}

// frontMatter splits off a leading front matter block and reads its simple
// top-level "key: value" (YAML) or key = "value" (TOML) string fields. A YAML
// library would read more, but only a few scalar fields matter here and a
// malformed block must not fail the document.
func frontMatter(s string) (string, map[string]string) {
	meta := map[string]string{}
	var delim, sep string
	switch {
	case strings.HasPrefix(s, "---\n"):
		delim, sep = "---", ":"
	case strings.HasPrefix(s, "+++\n"):
		delim, sep = "+++", "="
	default:
		return s, meta
	}
	rest := s[len(delim)+1:]
	var end, next int
	switch {
	case strings.HasPrefix(rest, delim+"\n") || rest == delim:
		end, next = 0, min(len(rest), len(delim)+1)
	default:
		i := strings.Index(rest, "\n"+delim+"\n")
		if i < 0 {
			if !strings.HasSuffix(rest, "\n"+delim) {
				return s, meta // not front matter after all
			}
			i = len(rest) - len(delim) - 1
		}
		end, next = i, min(len(rest), i+len(delim)+2)
	}
	for _, line := range strings.Split(rest[:end], "\n") {
		if line == "" || line[0] == ' ' || line[0] == '\t' || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, sep)
		k = strings.ToLower(strings.TrimSpace(k))
		if !ok || !frontMatterKeys[k] {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
			v = v[1 : len(v)-1]
		}
		if v != "" {
			meta[k] = v
		}
	}
	return rest[next:], meta
}

// firstHeading returns the text of the first ATX or setext heading outside
// fenced code.
func firstHeading(s string) string {
	lines := strings.Split(s, "\n")
	inFence := ""
	for i, line := range lines {
		t := strings.TrimSpace(line)
		if inFence != "" {
			if strings.HasPrefix(t, inFence) {
				inFence = ""
			}
			continue
		}
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			inFence = t[:3]
			continue
		}
		if strings.HasPrefix(t, "#") {
			h := strings.TrimLeft(t, "#")
			if len(t)-len(h) <= 6 && (h == "" || h[0] == ' ' || h[0] == '\t') {
				if h = strings.TrimSpace(strings.TrimRight(h, "#")); h != "" {
					return h
				}
			}
			continue
		}
		if t != "" && i+1 < len(lines) {
			u := strings.TrimSpace(lines[i+1])
			if len(u) >= 3 && (strings.Trim(u, "=") == "" || strings.Trim(u, "-") == "") {
				return t
			}
		}
	}
	return ""
}
