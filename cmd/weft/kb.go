package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/weftlabs/weft/platform/client"
)

func newKBCmd(e *env) *cobra.Command {
	var r remoteFlags
	cmd := &cobra.Command{
		Use:     "kb",
		Aliases: []string{"knowledge-base"},
		Short:   "Manage the knowledge bases of a running weft server",
		Long: `Create knowledge bases, ingest documents into them, search them, list and
remove them. Agents recall from the knowledge bases listed, by id, in their
knowledge_base_ids (see "weft agent apply"). KB is a name or an id.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	r.register(cmd)
	r.registerJSON(cmd)
	cmd.AddCommand(newKBCreateCmd(e, &r), newKBListCmd(e, &r), newKBIngestCmd(e, &r), newKBDocsCmd(e, &r),
		newKBSearchCmd(e, &r), newKBRenameCmd(e, &r), newKBRmCmd(e, &r), newKBRmDocCmd(e, &r))
	return cmd
}

func newKBRenameCmd(e *env, r *remoteFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "rename KB NEW_NAME",
		Short: "Rename a knowledge base, keeping its id and documents",
		Long: `Rename a knowledge base in place (PUT /v1/knowledge-bases/{id}): its id,
documents and the agents that recall from it stay. Chunking and the
embedding model cannot change; create a new knowledge base for those.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, kb, err := r.knowledgeBase(cmd.Context(), e, args[0])
			if err != nil {
				return err
			}
			out, err := c.UpdateKnowledgeBase(cmd.Context(), kb.ID, client.NewKnowledgeBase{Name: args[1]})
			if err != nil {
				return remoteError(err, c)
			}
			if r.json {
				return printJSON(e, out)
			}
			fmt.Fprintf(e.stdout, "knowledge base %s renamed %s (%s)\n", kb.Name, out.Name, out.ID)
			return nil
		},
	}
}

func newKBCreateCmd(e *env, r *remoteFlags) *cobra.Command {
	var (
		size, overlap int
		embedding     string
	)
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a knowledge base",
		Long: `Create a knowledge base. Documents are split into chunks of --chunk-size
tokens, overlapping by --chunk-overlap, and embedded by --embedding-model
(default: the server's). --embedding-model "" makes a keyword-only (BM25)
knowledge base.`,
		Example: `  weft kb create handbook --embedding-model openai/text-embedding-3-small`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := client.NewKnowledgeBase{Name: args[0], ChunkSize: size}
			if cmd.Flags().Changed("chunk-overlap") {
				req.ChunkOverlap = &overlap
			}
			if cmd.Flags().Changed("embedding-model") {
				req.EmbeddingModel = &embedding
			}
			c, err := r.client(e)
			if err != nil {
				return err
			}
			kb, err := c.CreateKnowledgeBase(cmd.Context(), req)
			if err != nil {
				return fmt.Errorf("knowledge base %q: %w", args[0], remoteError(err, c))
			}
			if r.json {
				return printJSON(e, kb)
			}
			fmt.Fprintf(e.stdout, "knowledge base %s created (%s): %s\n", kb.Name, kb.ID, kb.Description)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&size, "chunk-size", 0, "chunk size in tokens, 32 to 8192 (default: the server's, 512)")
	f.IntVar(&overlap, "chunk-overlap", 0, "overlap of consecutive chunks in tokens (default: an eighth of the chunk, at most 64)")
	f.StringVar(&embedding, "embedding-model", "", `provider/model that embeds chunks (default: the server's; "" for keyword-only)`)
	return cmd
}

func newKBListCmd(e *env, r *remoteFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the knowledge bases",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := r.client(e)
			if err != nil {
				return err
			}
			kbs, err := c.ListKnowledgeBases(cmd.Context())
			if err != nil {
				return remoteError(err, c)
			}
			if r.json {
				if kbs == nil {
					kbs = []client.KnowledgeBase{}
				}
				return printJSON(e, kbs)
			}
			if len(kbs) == 0 {
				fmt.Fprintln(e.stdout, `no knowledge bases (create one with "weft kb create NAME")`)
				return nil
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tID\tEMBEDDING MODEL\tCHUNK\tCREATED")
			for _, kb := range kbs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%s\n", kb.Name, kb.ID, orDash(kb.EmbeddingModel, "(keyword-only)"), kb.ChunkSize, kb.ChunkOverlap, when(kb.CreatedAt))
			}
			return tw.Flush()
		},
	}
}

func newKBRmCmd(e *env, r *remoteFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "rm KB...",
		Aliases: []string{"delete"},
		Short:   "Remove knowledge bases and their documents",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := r.client(e)
			if err != nil {
				return err
			}
			var removed []string
			for _, ref := range args {
				kb, err := c.FindKnowledgeBase(cmd.Context(), ref)
				if err != nil {
					return remoteError(err, c)
				}
				if err := c.DeleteKnowledgeBase(cmd.Context(), kb.ID); err != nil {
					return remoteError(err, c)
				}
				removed = append(removed, kb.ID)
				if !r.json {
					fmt.Fprintf(e.stdout, "knowledge base %s removed (%s)\n", kb.Name, kb.ID)
				}
			}
			if r.json {
				return printJSON(e, map[string]any{"removed": removed})
			}
			return nil
		},
	}
}

func newKBRmDocCmd(e *env, r *remoteFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "rm-doc KB DOC...",
		Short: "Remove documents, and their chunks, from a knowledge base",
		Long:  `Remove documents from a knowledge base. DOC is a document's name (as "weft kb docs" shows it) or id.`,
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, kb, err := r.knowledgeBase(cmd.Context(), e, args[0])
			if err != nil {
				return err
			}
			docs, err := c.ListDocuments(cmd.Context(), kb.ID)
			if err != nil {
				return remoteError(err, c)
			}
			removed := []string{}
			for _, ref := range args[1:] {
				i := slices.IndexFunc(docs, func(d client.Document) bool { return d.ID == ref })
				if i < 0 {
					i = slices.IndexFunc(docs, func(d client.Document) bool { return d.Name == ref })
				}
				if i < 0 {
					return fmt.Errorf("knowledge base %s has no document named or with id %q", kb.Name, ref)
				}
				if err := c.DeleteDocument(cmd.Context(), kb.ID, docs[i].ID); err != nil {
					return remoteError(err, c)
				}
				removed = append(removed, docs[i].ID)
				if !r.json {
					fmt.Fprintf(e.stdout, "document %s removed (%s)\n", docs[i].Name, docs[i].ID)
				}
			}
			if r.json {
				return printJSON(e, map[string]any{"removed": removed})
			}
			return nil
		},
	}
}

func newKBDocsCmd(e *env, r *remoteFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "docs KB",
		Aliases: []string{"documents"},
		Short:   "List a knowledge base's documents and their status",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, kb, err := r.knowledgeBase(cmd.Context(), e, args[0])
			if err != nil {
				return err
			}
			docs, err := c.ListDocuments(cmd.Context(), kb.ID)
			if err != nil {
				return remoteError(err, c)
			}
			if r.json {
				if docs == nil {
					docs = []client.Document{}
				}
				return printJSON(e, docs)
			}
			if len(docs) == 0 {
				fmt.Fprintf(e.stdout, "knowledge base %s has no documents (add some with \"weft kb ingest %s FILE...\")\n", kb.Name, kb.Name)
				return nil
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tID\tSTATUS\tCHUNKS\tBYTES\tUPDATED")
			for _, d := range docs {
				status := d.Status
				if d.Error != "" {
					status += ": " + firstLine(d.Error, 60)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", d.Name, d.ID, status, d.Chunks, d.Bytes, when(d.UpdatedAt))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			// The table cuts errors to a line; the failures follow whole.
			first := true
			for _, d := range docs {
				if d.Status != client.DocumentFailed || d.Error == "" {
					continue
				}
				if first {
					fmt.Fprintln(e.stdout, "\nErrors:")
					first = false
				}
				fmt.Fprintf(e.stdout, "  %s: %s\n", d.Name, strings.TrimSpace(d.Error))
			}
			return nil
		},
	}
}

func newKBSearchCmd(e *env, r *remoteFlags) *cobra.Command {
	var (
		topK int
		mode string
	)
	cmd := &cobra.Command{
		Use:   "search KB QUERY...",
		Short: "Search a knowledge base: the chunks an agent would recall",
		Example: `  weft kb search handbook how long do refunds take
  weft kb search handbook "refund policy" --mode keyword --top-k 10`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch mode {
			case "", "hybrid", "vector", "keyword":
			default:
				return usageError{fmt.Errorf("--mode %q: want hybrid, vector or keyword", mode)}
			}
			if topK < 0 || topK > 100 {
				return usageError{errors.New("--top-k: want 1 to 100")}
			}
			c, kb, err := r.knowledgeBase(cmd.Context(), e, args[0])
			if err != nil {
				return err
			}
			res, err := c.Search(cmd.Context(), kb.ID, client.SearchRequest{Query: strings.Join(args[1:], " "), TopK: topK, Mode: mode})
			if err != nil {
				return remoteError(err, c)
			}
			if r.json {
				if res == nil {
					res = []client.RagFragment{}
				}
				return printJSON(e, res)
			}
			if len(res) == 0 {
				fmt.Fprintln(e.stdout, "no results")
				return nil
			}
			for i, f := range res {
				fmt.Fprintf(e.stdout, "%d. %s  (score %.4f, %s)\n", i+1, orDash(f.DocumentName, f.DocumentID), f.Score, f.ChunkID)
				for l := range strings.Lines(strings.TrimSpace(f.Content)) {
					if strings.TrimSpace(l) != "" {
						l = "   " + l
					}
					fmt.Fprint(e.stdout, l)
				}
				fmt.Fprint(e.stdout, "\n\n")
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&topK, "top-k", 0, "how many chunks, 1 to 100 (default: the server's, 5)")
	cmd.Flags().StringVar(&mode, "mode", "", "hybrid (the default), vector or keyword")
	return cmd
}

func newKBIngestCmd(e *env, r *remoteFlags) *cobra.Command {
	var (
		progress         string
		poll             time.Duration
		include, exclude []string
		concurrency      int
	)
	cmd := &cobra.Command{
		Use:   "ingest KB PATH|URL...",
		Short: "Upload files, folders and web pages into a knowledge base and wait until they are indexed",
		Long: `Upload documents into a knowledge base, then wait until the server has indexed
them, showing progress. A folder is read recursively; its documents are named
by their path inside it ("go/src" holding fmt/doc.go and strconv/doc.go gives
two documents, "fmt/doc.go" and "strconv/doc.go"); a file given directly is
named by its base name. --include and --exclude filter a folder's files by
glob patterns, matched against the relative path and against the base name.
The file's extension tells the server how to read it (.txt, .md, .html, .pdf,
…). An http or https URL is fetched by the server (through its outbound
guard; a web page becomes Markdown) and named by the URL. Each document is
reported as added, replaced (a name uploaded before: its old chunks give way
to the new ones) or unchanged (the same content as the stored version,
which the server recognises by its hash and does not ingest again). Uploads
run --concurrency at a time and wait out the server's rate limit (429
Retry-After). The command fails if any document fails, saying which and why.`,
		Example: `  weft kb ingest handbook docs/*.md policies.pdf
  weft kb ingest gosrc /usr/lib/go/src --include '*.go' --exclude '*_test.go' --exclude 'testdata/*'
  weft kb ingest handbook https://example.com/shipping.html`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if progress != "auto" && progress != "bar" && progress != "plain" {
				return usageError{fmt.Errorf("--progress %q: want auto, bar or plain", progress)}
			}
			if poll <= 0 {
				return usageError{errors.New("--poll: want a positive duration")}
			}
			if concurrency < 1 || concurrency > 32 {
				return usageError{errors.New("--concurrency: want 1 to 32")}
			}
			for _, g := range slices.Concat(include, exclude) {
				if _, err := path.Match(g, ""); err != nil {
					return usageError{fmt.Errorf("glob %q: %w", g, err)}
				}
			}
			files, total, err := collectFiles(args[1:], include, exclude)
			if err != nil {
				return err
			}
			c, kb, err := r.knowledgeBase(cmd.Context(), e, args[0])
			if err != nil {
				return err
			}
			bar := progress == "bar" || progress == "auto" && !r.json && writerIsTerminal(e.stdout)
			in := &ingestion{e: e, c: c, kb: kb, bar: bar, quiet: r.json, poll: poll, concurrency: concurrency}
			docs, err := in.run(cmd, files, total)
			if err != nil {
				return err
			}
			if r.json {
				if err := printJSON(e, docs); err != nil {
					return err
				}
			}
			var failed []string
			for _, d := range docs {
				if d.Status == client.DocumentFailed {
					failed = append(failed, d.Name)
				}
			}
			if len(failed) > 0 {
				return fmt.Errorf("%d of %s failed: %s", len(failed), plural(len(docs), "document"), strings.Join(failed, ", "))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&progress, "progress", "auto", "progress display: bar, plain (a line per event) or auto (a bar on a terminal)")
	cmd.Flags().DurationVar(&poll, "poll", 250*time.Millisecond, "how often to ask the server for the documents' status")
	cmd.Flags().StringSliceVar(&include, "include", nil, "in folders, upload only files matching this glob (repeatable; default: all)")
	cmd.Flags().StringSliceVar(&exclude, "exclude", nil, "in folders, skip files and folders matching this glob (repeatable)")
	cmd.Flags().IntVar(&concurrency, "concurrency", 4, "uploads at a time, 1 to 32")
	return cmd
}

// localFile is a file to upload, or a URL for the server to fetch.
type localFile struct {
	path, name string
	size       int64
	url        string
}

// isURL reports whether a PATH argument is a web address.
func isURL(arg string) bool {
	return strings.HasPrefix(arg, "http://") || strings.HasPrefix(arg, "https://")
}

// collectFiles lists the files to upload: files as given, named by their
// base name, and the regular files under folders, named by their path
// relative to the folder, filtered by the include and exclude globs. It
// checks every file before any is uploaded, so that a typo does not leave
// half the set ingested.
func collectFiles(paths, include, exclude []string) ([]localFile, int64, error) {
	var out []localFile
	var total int64
	matches := func(globs []string, rel string) bool {
		for _, g := range globs {
			if ok, _ := path.Match(g, rel); ok {
				return true
			}
			if ok, _ := path.Match(g, path.Base(rel)); ok {
				return true
			}
		}
		return false
	}
	for _, p := range paths {
		if isURL(p) {
			out = append(out, localFile{url: p, name: p})
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			return nil, 0, err
		}
		if st.Mode().IsRegular() {
			out = append(out, localFile{path: p, name: filepath.Base(p), size: st.Size()})
			total += st.Size()
			continue
		}
		if !st.IsDir() {
			return nil, 0, fmt.Errorf("%s is neither a regular file nor a folder", p)
		}
		err = filepath.WalkDir(p, func(file string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if file == p {
				return nil
			}
			rel, err := filepath.Rel(p, file)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			if matches(exclude, rel) {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() || !d.Type().IsRegular() || len(include) > 0 && !matches(include, rel) {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			out = append(out, localFile{path: file, name: rel, size: info.Size()})
			total += info.Size()
			return nil
		})
		if err != nil {
			return nil, 0, err
		}
	}
	if len(out) == 0 {
		return nil, 0, errors.New("no files to upload (check --include and --exclude)")
	}
	return out, total, nil
}

// writerIsTerminal reports whether w is an interactive terminal.
func writerIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// ingestion uploads files into a knowledge base and follows their
// indexing, reporting progress as a bar (on a terminal) or as plain lines.
type ingestion struct {
	e     *env
	c     *client.Client
	kb    client.KnowledgeBase
	bar   bool // progress bars rather than lines
	quiet bool // neither (--json)
	poll  time.Duration

	concurrency int // uploads at a time
	mu          sync.Mutex
}

func (in *ingestion) newBar(max int64, desc string, bytes bool) *progressbar.ProgressBar {
	return progressbar.NewOptions64(max,
		progressbar.OptionSetWriter(in.e.stdout),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowBytes(bytes),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(in.e.stdout) }),
	)
}

func (in *ingestion) linef(format string, args ...any) {
	if !in.bar && !in.quiet {
		in.mu.Lock()
		defer in.mu.Unlock()
		fmt.Fprintf(in.e.stdout, format+"\n", args...)
	}
}

// run uploads the files, then waits for their documents to be indexed, and
// returns the documents as they ended. A document the server refused is
// returned failed, with the server's reason.
func (in *ingestion) run(cmd *cobra.Command, files []localFile, total int64) ([]client.Document, error) {
	ctx := cmd.Context()
	var up *progressbar.ProgressBar
	if in.bar && !in.quiet {
		up = in.newBar(total, "uploading", true)
	}
	// Upload concurrently; the results keep the files' order.
	uploaded := make([]client.Document, len(files))
	var (
		wg    sync.WaitGroup
		fatal error
		once  sync.Once
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, in.concurrency)
	for i, f := range files {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			d, err := in.upload(ctx, f, up)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				var ce *client.Error
				if !errors.As(err, &ce) || ce.Code == client.CodeUnauthorized || ce.Code == client.CodeNotFound || ce.Status >= 500 || ce.Status == http.StatusTooManyRequests {
					// Not about this file: the others would fail the same way.
					once.Do(func() { fatal = fmt.Errorf("uploading %s: %w", f.path, remoteError(err, in.c)) })
					cancel()
					return
				}
				d = client.Document{Name: f.name, Status: client.DocumentFailed, Error: remoteError(err, in.c).Error()}
				in.linef("failed   %s: %s", f.name, d.Error)
			} else {
				in.report(f, d)
			}
			uploaded[i] = d
		})
	}
	wg.Wait()
	if fatal != nil {
		return nil, fatal
	}
	if err := cmd.Context().Err(); err != nil {
		return nil, err
	}
	var docs []client.Document
	index := map[string]int{} // document id → position in docs
	for _, d := range uploaded {
		if i, dup := index[d.ID]; dup && d.ID != "" {
			docs[i] = d // the same name twice: the later upload replaces the document
			continue
		}
		index[d.ID] = len(docs)
		docs = append(docs, d)
	}
	if up != nil {
		up.Finish()
	}
	return docs, in.wait(cmd.Context(), docs)
}

// report says what an upload did: added, replaced (with the old version's
// chunk count) or unchanged.
func (in *ingestion) report(f localFile, d client.Document) {
	name, size := f.name, byteCount(f.size)
	if f.url != "" {
		name, size = d.Name, byteCount(d.Bytes)
		if d.Name != f.url {
			name += " (" + f.url + ")"
		}
	}
	switch d.Outcome {
	case client.OutcomeUnchanged:
		in.linef("unchanged %s: the same content is already %s", name, d.Status)
	case client.OutcomeReplaced:
		in.linef("replaced %s (%s; %s)", name, size, plural(d.ReplacedChunks, "old chunk"))
	default:
		in.linef("added    %s (%s)", name, size)
	}
}

// upload sends one file, counting its bytes on bar when there is one. The
// file goes to the client as an *os.File, which it can rewind to retry a
// rate-limited upload. A URL is fetched by the server.
func (in *ingestion) upload(ctx context.Context, f localFile, bar *progressbar.ProgressBar) (client.Document, error) {
	if f.url != "" {
		return in.c.IngestURL(ctx, in.kb.ID, f.url, "")
	}
	file, err := os.Open(f.path)
	if err != nil {
		return client.Document{}, err
	}
	defer file.Close()
	d, err := in.c.UploadDocument(ctx, in.kb.ID, f.name, file)
	if err == nil && bar != nil {
		in.mu.Lock()
		bar.Add64(f.size)
		in.mu.Unlock()
	}
	return d, err
}

// wait polls the documents until none is queued or indexing, updating docs
// in place.
func (in *ingestion) wait(ctx context.Context, docs []client.Document) error {
	pending := map[string]int{}
	done := 0
	for i, d := range docs {
		if d.Done() || d.ID == "" {
			done++
			continue
		}
		pending[d.ID] = i
	}
	var bar *progressbar.ProgressBar
	if in.bar && !in.quiet {
		bar = in.newBar(int64(len(docs)), "indexing", false)
		bar.Set(done)
	}
	t := time.NewTicker(in.poll)
	defer t.Stop()
	for len(pending) > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		cur, err := in.c.ListDocuments(ctx, in.kb.ID)
		if err != nil {
			return fmt.Errorf("following the indexing: %w", remoteError(err, in.c))
		}
		seen := map[string]bool{}
		for _, d := range cur {
			i, ok := pending[d.ID]
			if !ok {
				continue
			}
			seen[d.ID] = true
			docs[i] = d
			if !d.Done() {
				continue
			}
			delete(pending, d.ID)
			done++
			if d.Status == client.DocumentReady {
				in.linef("ready    %s: %s", d.Name, plural(d.Chunks, "chunk"))
			} else {
				in.linef("failed   %s: %s", d.Name, d.Error)
			}
			if bar != nil {
				bar.Set(done)
				bar.Describe("indexed " + d.Name)
			}
		}
		for id, i := range pending {
			if !seen[id] {
				// Deleted meanwhile (or its knowledge base was).
				docs[i].Status, docs[i].Error = client.DocumentFailed, "the document was deleted while it was being indexed"
				delete(pending, id)
				done++
				in.linef("failed   %s: %s", docs[i].Name, docs[i].Error)
			}
		}
	}
	if bar != nil {
		bar.Describe("indexed")
		bar.Finish()
		for _, d := range docs {
			if d.Status == client.DocumentFailed {
				fmt.Fprintf(in.e.stdout, "failed %s: %s\n", d.Name, d.Error)
			}
		}
	}
	return nil
}

// byteCount formats a size in bytes for people.
func byteCount(n int64) string {
	if n < 1000 {
		return strconv.FormatInt(n, 10) + " B"
	}
	f, unit := float64(n)/1000, "kB"
	for _, u := range []string{"MB", "GB", "TB"} {
		if f < 1000 {
			break
		}
		f, unit = f/1000, u
	}
	return strconv.FormatFloat(f, 'f', 1, 64) + " " + unit
}

// knowledgeBase connects to the server and finds the knowledge base ref
// (a name or an id), as most kb commands begin.
func (r *remoteFlags) knowledgeBase(ctx context.Context, e *env, ref string) (*client.Client, client.KnowledgeBase, error) {
	c, err := r.client(e)
	if err != nil {
		return nil, client.KnowledgeBase{}, err
	}
	kb, err := c.FindKnowledgeBase(ctx, ref)
	if err != nil {
		return nil, client.KnowledgeBase{}, remoteError(err, c)
	}
	return c, kb, nil
}
