package client_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/platform"
	"github.com/weftlabs/weft/platform/client"
	"github.com/weftlabs/weft/platform/meta"
)

func Example_knowledgeBase() {
	// A platform server in the process; a real program would point the
	// client at `weft serve`.
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "weft-example")
	defer os.RemoveAll(dir)
	store, _ := meta.OpenSQLite(ctx, filepath.Join(dir, "meta.db"))
	defer store.Close()
	adminKey, _ := platform.Bootstrap(ctx, store, "")
	srv, _ := platform.New(platform.Config{Meta: store, Sessions: memory.NewInMemory(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()

	c := client.New(hs.URL, adminKey)
	// A keyword-only knowledge base: no embedding model.
	kb, err := c.CreateKnowledgeBase(ctx, client.NewKnowledgeBase{Name: "handbook", EmbeddingModel: new("")})
	if err != nil {
		fmt.Println("create:", err)
		return
	}
	doc, err := c.UploadDocument(ctx, kb.ID, "returns.md", strings.NewReader("# Returns\n\nItems may be returned within 30 days."))
	if err != nil {
		fmt.Println("upload:", err)
		return
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	doc, err = c.WaitDocument(wctx, kb.ID, doc.ID, 10*time.Millisecond)
	if err != nil {
		fmt.Println("wait:", err)
		return
	}
	fmt.Println(doc.Name, doc.Status)
	results, err := c.Search(ctx, kb.ID, client.SearchRequest{Query: "returned days", TopK: 1})
	if err != nil {
		fmt.Println("search:", err)
		return
	}
	for _, r := range results {
		fmt.Printf("%s: %s\n", r.DocumentName, r.Content)
	}
	// Output:
	// returns.md ready
	// returns.md: # Returns
	//
	// Items may be returned within 30 days.
}
