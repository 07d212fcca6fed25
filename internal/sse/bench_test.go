package sse

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func BenchmarkReader(b *testing.B) {
	dir := fixtureDir(b)
	files, _ := filepath.Glob(filepath.Join(dir, "*.sse"))
	txt, _ := filepath.Glob(filepath.Join(dir, "*.chunks.txt"))
	files = append(files, txt...)
	if len(files) == 0 {
		b.Skip("no fixtures")
	}
	var all []byte
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		all = append(all, body...)
		all = append(all, '\n', '\n')
	}
	br := bytes.NewReader(all)
	b.SetBytes(int64(len(all)))
	b.ReportAllocs()
	events := 0
	for b.Loop() {
		br.Reset(all)
		rd := NewReader(br)
		for {
			if _, err := rd.Next(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
			events++
		}
	}
	b.ReportMetric(float64(events)/float64(b.N), "events/op")
}
