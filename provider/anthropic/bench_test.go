package anthropic

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftlabs/weft/llm"
)

// BenchmarkDecodeStream measures decoding a long text stream: 1,000
// text_delta events between the usual framing events.
func BenchmarkDecodeStream(b *testing.B) {
	head, err := os.ReadFile(filepath.Join("testdata", "stream_text.sse"))
	if err != nil {
		b.Fatal(err)
	}
	// Repeat the text deltas of the fixture to make a long answer.
	parts := strings.SplitAfter(string(head), "\n\n")
	var buf bytes.Buffer
	for _, p := range parts {
		if strings.Contains(p, "text_delta") {
			for range 500 {
				buf.WriteString(p)
			}
			continue
		}
		buf.WriteString(p)
	}
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
