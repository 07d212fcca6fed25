package ollama

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/weftlabs/weft/llm"
)

// FuzzDecodeStream feeds arbitrary bytes to the NDJSON decoder: it must not
// panic, must end, and must either finish with a ChunkFinish or return an
// error of kind ErrStreamBroken.
func FuzzDecodeStream(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.ndjson"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"done":true}`))
	f.Add([]byte(`{"message":{"tool_calls":[{"function":{"name":"f","arguments":"{\"a\":1}"}}]},"done":true}`))
	f.Add([]byte(`{"error":{"message":"boom"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		finished := false
		err := decodeStream(bytes.NewReader(data), func(c llm.Chunk) bool {
			if c.Type == llm.ChunkFinish {
				finished = true
			}
			return true
		})
		if err == nil && !finished {
			t.Fatalf("stream ended cleanly without a finish chunk")
		}
		if err != nil && !errors.Is(err, llm.ErrStreamBroken) {
			t.Fatalf("error %v is not ErrStreamBroken", err)
		}
	})
}
