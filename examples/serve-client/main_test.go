package main

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/platform"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/provider/scripted"
)

// TestRun runs the program against a platform server in the process, on
// embedded stores and the demo model: what `weft serve` runs by default.
func TestRun(t *testing.T) {
	ctx := context.Background()
	store, err := meta.OpenSQLite(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	key, err := platform.Bootstrap(ctx, store, "")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := platform.New(platform.Config{
		Meta: store, Sessions: memory.NewInMemory(),
		OpenModel: func(spec string) (*llm.Model, error) {
			return llm.New(scripted.Demo(), llm.WithName(spec)), nil
		},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()

	for range 2 { // the second run updates the agent in place
		var out strings.Builder
		if err := run(ctx, &out, hs.URL, key, "Hello there"); err != nil {
			t.Fatal(err)
		}
		got := out.String()
		if !strings.Contains(got, "repeats what you said: Hello there\n") || !strings.Contains(got, "holds 2 messages") {
			t.Errorf("output:\n%s", got)
		}
	}
}
