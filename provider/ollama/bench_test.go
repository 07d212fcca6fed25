package ollama

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftlabs/weft/llm"
)

// BenchmarkDecodeStream measures decoding a long NDJSON answer of 1,000
// content lines.
func BenchmarkDecodeStream(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join("testdata", "stream_text.ndjson"))
	if err != nil {
		b.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSpace(string(raw)), "\n")
	var buf bytes.Buffer
	for range 1000 {
		buf.WriteString(lines[0])
	}
	buf.WriteString(lines[len(lines)-1])
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		if err := decodeStream(bytes.NewReader(data), func(llm.Chunk) bool { n++; return true }); err != nil {
			b.Fatal(err)
		}
		if n < 1000 {
			b.Fatalf("%d chunks", n)
		}
	}
}
