package loader

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/weftlabs/weft/rag"
)

// loadCSV renders each data row as one line of "column: value" pairs
// (empty values left out), so every line keeps its header and any chunk of
// lines stands on its own. The delimiter (comma, tab or semicolon) is the
// one the header line uses most.
func loadCSV(data []byte) (rag.Document, error) {
	s, err := decodeText(data)
	if err != nil {
		return rag.Document{}, err
	}
	r := csv.NewReader(strings.NewReader(s))
	r.Comma = csvDelimiter(s)
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	r.ReuseRecord = true
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return rag.Document{}, rag.ErrEmptyDocument
	}
	if err != nil {
		return rag.Document{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	cols := make([]string, len(header))
	for i, h := range header {
		if cols[i] = strings.TrimSpace(h); cols[i] == "" {
			cols[i] = "column " + strconv.Itoa(i+1)
		}
	}
	var b strings.Builder
	rows := 0
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return rag.Document{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		n := 0
		for i, v := range rec {
			v = strings.Join(strings.Fields(v), " ")
			if v == "" {
				continue
			}
			if n > 0 {
				b.WriteString("; ")
			}
			col := "column " + strconv.Itoa(i+1)
			if i < len(cols) {
				col = cols[i]
			}
			b.WriteString(col + ": " + v)
			n++
		}
		if n > 0 {
			b.WriteByte('\n')
			rows++
		}
	}
	meta := map[string]string{"columns": strings.Join(cols, ", "), "rows": strconv.Itoa(rows)}
	return rag.Document{Text: b.String(), Metadata: meta}, nil
}

func csvDelimiter(s string) rune {
	line, _, _ := strings.Cut(s, "\n")
	best, n := ',', strings.Count(line, ",")
	for _, d := range []rune{'\t', ';'} {
		if c := strings.Count(line, string(d)); c > n {
			best, n = d, c
		}
	}
	return best
}

// maxJSONDepth bounds the nesting the JSON loader follows.
const maxJSONDepth = 256

// loadJSON flattens JSON to "path: value" lines (paths like
// "user.emails[0]"), in document order. An array of objects at the top —
// and JSON Lines, one value per line — becomes one block per record,
// separated by blank lines, with paths relative to the record.
func loadJSON(data []byte) (rag.Document, error) {
	s, err := decodeText(data)
	if err != nil {
		return rag.Document{}, err
	}
	j := &jsonWriter{dec: json.NewDecoder(strings.NewReader(s))}
	j.dec.UseNumber()
	records := 0
	for {
		tok, err := j.dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return rag.Document{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		switch tok {
		case json.Delim('['):
			for i := 0; j.dec.More(); i++ {
				t, err := j.dec.Token()
				if err != nil {
					return rag.Document{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
				}
				path := "[" + strconv.Itoa(i) + "]"
				if t == json.Delim('{') {
					path = "" // a record
				}
				if err := j.value(t, path, 1); err != nil {
					return rag.Document{}, err
				}
				if path == "" {
					j.record()
					records++
				}
			}
			if _, err := j.dec.Token(); err != nil {
				return rag.Document{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
			}
		default:
			if err := j.value(tok, "", 0); err != nil {
				return rag.Document{}, err
			}
			j.record()
			records++
		}
	}
	meta := map[string]string{}
	if records > 1 {
		meta["records"] = strconv.Itoa(records)
	}
	return rag.Document{Text: strings.TrimSpace(j.b.String()) + "\n", Metadata: meta}, nil
}

// isJSON reports whether data is one JSON value or JSON Lines.
func isJSON(data []byte) bool {
	if json.Valid(data) {
		return true
	}
	lines := bytes.Split(data, []byte("\n"))
	for _, l := range lines {
		if l = bytes.TrimSpace(l); len(l) > 0 && !json.Valid(l) {
			return false
		}
	}
	return len(lines) > 1
}

type jsonWriter struct {
	dec *json.Decoder
	b   strings.Builder
}

// record ends a record with a blank line.
func (j *jsonWriter) record() {
	if s := j.b.String(); s != "" && !strings.HasSuffix(s, "\n\n") {
		j.b.WriteByte('\n')
	}
}

// value writes the value that starts with tok at path.
func (j *jsonWriter) value(tok json.Token, path string, depth int) error {
	if depth > maxJSONDepth {
		return fmt.Errorf("%w: JSON nested deeper than %d levels", ErrCorrupt, maxJSONDepth)
	}
	switch t := tok.(type) {
	case json.Delim:
		open := t == '{'
		n := 0
		for ; j.dec.More(); n++ {
			sub := path + "[" + strconv.Itoa(n) + "]"
			if open {
				k, err := j.dec.Token()
				if err != nil {
					return fmt.Errorf("%w: %v", ErrCorrupt, err)
				}
				key, _ := k.(string)
				sub = key
				if path != "" {
					sub = path + "." + key
				}
			}
			v, err := j.dec.Token()
			if err != nil {
				return fmt.Errorf("%w: %v", ErrCorrupt, err)
			}
			if err := j.value(v, sub, depth+1); err != nil {
				return err
			}
		}
		if _, err := j.dec.Token(); err != nil { // the closing delimiter
			return fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		if n == 0 && path != "" {
			j.line(path, map[bool]string{true: "{}", false: "[]"}[open])
		}
	case string:
		j.line(path, t)
	case json.Number:
		j.line(path, t.String())
	case bool:
		j.line(path, strconv.FormatBool(t))
	case nil:
		j.line(path, "null")
	}
	return nil
}

func (j *jsonWriter) line(path, v string) {
	if path != "" {
		j.b.WriteString(path + ": ")
	}
	j.b.WriteString(v)
	j.b.WriteByte('\n')
}
