package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/weftlabs/weft/platform/client"
)

func TestKBCreateListRm(t *testing.T) {
	t.Parallel()
	p := newTestPlatform(t)
	r := runCLI(t, t.Context(), p.vars(), "", "kb", "create", "handbook", "--chunk-size", "128", "--chunk-overlap", "0", "--embedding-model", "scripted/embed")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "knowledge base handbook created (kb") || !strings.Contains(r.stdout, "hybrid recall") {
		t.Fatalf("code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	kb, err := p.c.FindKnowledgeBase(t.Context(), "handbook")
	if err != nil || kb.ChunkSize != 128 || kb.ChunkOverlap != 0 || kb.EmbeddingModel != "scripted/embed" {
		t.Fatalf("stored %+v, %v", kb, err)
	}
	// An explicitly empty embedding model: keyword-only.
	r = runCLI(t, t.Context(), p.vars(), "", "kb", "create", "words", "--embedding-model", "", "--json")
	var got client.KnowledgeBase
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &got) != nil || got.EmbeddingModel != "" || got.ChunkOverlap != 64 {
		t.Fatalf("keyword-only: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"create", "handbook"}, exitFailure, `knowledge base "handbook": a knowledge base named "handbook" already exists`},
		{[]string{"create", "x", "--chunk-size", "4"}, exitFailure, "chunk_size"},
		{[]string{"create", "x", "--embedding-model", "nope"}, exitFailure, "embedding_model"},
		{[]string{"create"}, exitUsage, "accepts 1 arg"},
		{[]string{"rm", "nothing"}, exitFailure, `no knowledge base named or with id "nothing"`},
		{[]string{"search", "handbook", "q", "--mode", "fuzzy"}, exitUsage, "hybrid, vector or keyword"},
		{[]string{"search", "words", "q", "--mode", "vector"}, exitFailure, "keyword-only"},
		{[]string{"ingest", "handbook", "/no/such/file.md"}, exitFailure, "no such file"},
		{[]string{"ingest", "nothing", writeFile(t, "a.md", "a")}, exitFailure, `no knowledge base named or with id "nothing"`},
	} {
		r := runCLI(t, t.Context(), p.vars(), "", append([]string{"kb"}, tc.args...)...)
		if r.code != tc.code || !strings.HasPrefix(r.stderr, "weft: ") || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: code %d stderr %q, want %d and %q", tc.args, r.code, r.stderr, tc.code, tc.want)
		}
	}
	r = runCLI(t, t.Context(), p.vars(), "", "kb", "list")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "NAME") || !strings.Contains(r.stdout, "scripted/embed") || !strings.Contains(r.stdout, "(keyword-only)") || !strings.Contains(r.stdout, "128/0") {
		t.Fatalf("list: code %d stdout %q", r.code, r.stdout)
	}
	// Renamed in place: same id; a taken name is refused.
	r = runCLI(t, t.Context(), p.vars(), "", "kb", "rename", "handbook", "manual")
	if renamed, err := p.c.FindKnowledgeBase(t.Context(), "manual"); r.code != 0 || err != nil || renamed.ID != kb.ID ||
		r.stdout != "knowledge base handbook renamed manual ("+kb.ID+")\n" {
		t.Fatalf("rename: code %d stdout %q stderr %q (%+v, %v)", r.code, r.stdout, r.stderr, renamed, err)
	}
	if r = runCLI(t, t.Context(), p.vars(), "", "kb", "rename", "manual", "words"); r.code != exitFailure || !strings.Contains(r.stderr, `a knowledge base named "words" already exists`) {
		t.Fatalf("rename to a taken name: code %d stderr %q", r.code, r.stderr)
	}
	r = runCLI(t, t.Context(), p.vars(), "", "kb", "rm", "manual", got.ID)
	if r.code != 0 || strings.Count(r.stdout, "removed") != 2 {
		t.Fatalf("rm: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, t.Context(), p.vars(), "", "kb", "list")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "no knowledge bases") {
		t.Fatalf("empty list: %q", r.stdout)
	}
}

func TestKBIngestAndSearch(t *testing.T) {
	t.Parallel()
	p := newTestPlatform(t)
	if _, err := p.c.CreateKnowledgeBase(t.Context(), client.NewKnowledgeBase{Name: "handbook", EmbeddingModel: new("scripted/embed")}); err != nil {
		t.Fatal(err)
	}
	returns := writeFile(t, "returns.md", "# Returns\n\nItems may be returned within 30 days of delivery.\n")
	shipping := writeFile(t, "shipping.md", "# Shipping\n\nOrders ship within two business days.\n")
	blob := writeFile(t, "blob.txt", "\x00\x01\x02binary\x00\x00")

	// Plain lines (stdout is not a terminal): a failed document fails the
	// command, naming it; the others are ingested.
	r := runCLI(t, t.Context(), p.vars(), "", "kb", "ingest", "handbook", returns, blob, shipping, "--poll", "10ms")
	if r.code != exitFailure || r.stderr != "weft: 1 of 3 documents failed: blob.txt\n" {
		t.Fatalf("code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"added    returns.md (", "added    blob.txt", "ready    returns.md: 1 chunk\n", "ready    shipping.md: 1 chunk\n", "failed   blob.txt: "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout %q lacks %q", r.stdout, want)
		}
	}
	if strings.Contains(r.stdout, "\r") || strings.Contains(r.stdout, "%") {
		t.Errorf("a progress bar on a non-terminal: %q", r.stdout)
	}

	// A bar when asked for; --json reports the documents.
	r = runCLI(t, t.Context(), p.vars(), "", "kb", "ingest", "handbook", returns, "--poll", "10ms", "--progress", "bar")
	if r.code != 0 || !strings.Contains(r.stdout, "100%") || !strings.Contains(r.stdout, "(1/1)") || !strings.Contains(r.stdout, "indexed") || !strings.Contains(r.stdout, "uploading") {
		t.Fatalf("bar: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, t.Context(), p.vars(), "", "kb", "ingest", "handbook", shipping, returns, "--poll", "10ms", "--json")
	var docs []client.Document
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &docs) != nil || len(docs) != 2 || docs[0].Name != "shipping.md" || docs[0].Status != client.DocumentReady {
		t.Fatalf("json: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, t.Context(), p.vars(), "", "kb", "ingest", "handbook", returns, "--progress", "fancy")
	if r.code != exitUsage || !strings.Contains(r.stderr, "auto, bar or plain") {
		t.Fatalf("bad --progress: code %d stderr %q", r.code, r.stderr)
	}

	r = runCLI(t, t.Context(), p.vars(), "", "kb", "docs", "handbook")
	if r.code != 0 || !strings.Contains(r.stdout, "returns.md") || !strings.Contains(r.stdout, "failed: ") {
		t.Fatalf("docs: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}

	r = runCLI(t, t.Context(), p.vars(), "", "kb", "search", "handbook", "how", "many", "days", "to", "return", "items", "--top-k", "1")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "1. returns.md  (score ") || !strings.Contains(r.stdout, "   Items may be returned within 30 days") || strings.Contains(r.stdout, "2. ") {
		t.Fatalf("search: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, t.Context(), p.vars(), "", "kb", "search", "handbook", "ship orders", "--mode", "keyword", "--json")
	var res []client.RagFragment
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &res) != nil || len(res) == 0 || res[0].DocumentName != "shipping.md" {
		t.Fatalf("search --json: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, t.Context(), p.vars(), "", "kb", "search", "handbook", "zebra", "--mode", "keyword")
	if r.code != 0 || r.stdout != "no results\n" {
		t.Fatalf("no results: code %d stdout %q", r.code, r.stdout)
	}
}
