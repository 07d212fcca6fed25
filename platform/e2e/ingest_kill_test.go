package e2e

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weftlabs/weft/llmtest"
	"github.com/weftlabs/weft/platform/client"
)

// TestIngestionSurvivesSIGKILL kills `weft serve` with SIGKILL while it
// ingests a document (its embedding call hangs upstream) and restarts it on
// the same data directory: the upload was stored before the 202, so the
// new process resumes it and the document becomes ready — within a
// bounded number of polls, never stuck indexing.
func TestIngestionSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	up := llmtest.NewServer()
	t.Cleanup(up.Close)
	// The knowledge base's dimension probe answers; the ingestion's
	// embedding call then hangs until the process is killed.
	up.EnqueueEmbed(llmtest.Turn{}, llmtest.Turn{Delay: 10 * time.Minute})
	vars := upstreamVars(up)
	vars["WEFT_ADMIN_KEY"] = adminKey
	dir := t.TempDir()
	p := startServe(t, dir, vars, "--addr", "127.0.0.1:0", "--log-format", "json")
	c := client.New(p.url(), adminKey)
	ctx := t.Context()
	model := "openai/text-embedding-3-small"
	kb, err := c.CreateKnowledgeBase(ctx, client.NewKnowledgeBase{Name: "handbook", EmbeddingModel: &model})
	if err != nil {
		t.Fatal(err)
	}
	text := "# Returns\n\nCustomers may return any product within 30 days of delivery for a full refund.\n"
	doc, err := c.UploadDocument(ctx, kb.ID, "returns.md", strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	// Wait until the ingestion is inside its embedding call.
	for i := 0; ; i++ {
		d, err := c.GetDocument(ctx, kb.ID, doc.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d.Status == "indexing" && embedCalls(up) >= 2 {
			break
		}
		if i == 600 {
			t.Fatalf("document %+v never reached its embedding call (%d calls)", d, embedCalls(up))
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.signal(syscall.SIGKILL, 10*time.Second)

	p2 := startServe(t, dir, vars, "--addr", "127.0.0.1:0", "--log-format", "json")
	c2 := client.New(p2.url(), adminKey)
	var d client.Document
	for i := 0; ; i++ {
		if d, err = c2.GetDocument(ctx, kb.ID, doc.ID); err != nil {
			t.Fatal(err)
		}
		if d.Done() {
			break
		}
		if i == 600 {
			t.Fatalf("after the restart the document is still %s", d.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if d.Status != "ready" || d.Chunks == 0 {
		t.Fatalf("after the restart: %+v", d)
	}
	res, err := c2.Search(context.Background(), kb.ID, client.SearchRequest{Query: "how many days to return a product", Mode: "keyword"})
	if err != nil || len(res) == 0 || !strings.Contains(res[0].Content, "30 days") {
		t.Fatalf("search after the restart = %+v, %v", res, err)
	}
}

// embedCalls counts the embeddings requests the fake upstream received.
func embedCalls(up *llmtest.Server) int {
	n := 0
	for _, r := range up.Requests() {
		if strings.HasSuffix(r.Path, "/embeddings") {
			n++
		}
	}
	return n
}
