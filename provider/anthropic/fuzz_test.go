package anthropic

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/weftlabs/weft/llm"
)

// FuzzDecodeStream feeds arbitrary bytes to the event decoder: it must not
// panic, must end, must return only *llm.Error values, and must emit a
// finish chunk when it ends cleanly.
func FuzzDecodeStream(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.sse"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("data: {\"type\":\"message_stop\"}\n\n"))
	f.Add([]byte("event: error\ndata: {}\n\n"))
	f.Add([]byte("data: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\"}}\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		finished := false
		err := decodeStream(bytes.NewReader(data), func(c llm.Chunk) bool {
			if c.Type == llm.ChunkFinish {
				finished = true
			}
			return true
		})
		var le *llm.Error
		if err != nil && !errors.As(err, &le) {
			t.Fatalf("error %v is not an *llm.Error", err)
		}
		if err == nil && !finished {
			t.Fatal("stream ended cleanly without a finish chunk")
		}
	})
}
