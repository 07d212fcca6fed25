package rag

import (
	"context"
	"fmt"
	"strings"

	"github.com/weftlabs/weft/llm"
)

// AugmentOption configures the augmentor [NewAugmentor] builds.
type AugmentOption func(*RetrievalAugmentor)

// WithTopK sets how many sources are retrieved per turn (default: the
// retriever's own default, DefaultTopK for this package's retrievers).
func WithTopK(k int) AugmentOption {
	return func(a *RetrievalAugmentor) { a.topK = k }
}

// WithQueryTransforms sets the transforms the query goes through before
// retrieval, in order: typically [CompressQuery] then [ExpandQuery]. Each
// transform is applied to every query the previous one produced; when it
// fails, the query it was given is kept.
func WithQueryTransforms(ts ...QueryTransformer) AugmentOption {
	return func(a *RetrievalAugmentor) { a.transforms = append(a.transforms, ts...) }
}

// WithInjector sets how sources are added to the message (default: a zero
// [ContentInjector]).
func WithInjector(in Injector) AugmentOption {
	return func(a *RetrievalAugmentor) { a.injector = in }
}

// OnDegraded sets a function told about every step that failed and was
// skipped (a transform, a retriever, the reranker), for logs and metrics.
// It is called on the Augment goroutine, before Augment returns.
func OnDegraded(f func(ctx context.Context, d *Degradation)) AugmentOption {
	return func(a *RetrievalAugmentor) { a.onDegraded = f }
}

// RetrievalAugmentor is the [Augmentor] of retrieval-augmented generation:
// query transforms → retrieval → content injection. Build it with
// [NewAugmentor]; it is safe for concurrent use.
type RetrievalAugmentor struct {
	retriever  Retriever
	topK       int
	transforms []QueryTransformer
	injector   Injector
	onDegraded func(ctx context.Context, d *Degradation)
}

// NewAugmentor returns an augmentor that recalls from r. Plug it into a
// typed function with ai.Augmentor(a, false).
//
// Augment degrades instead of failing: a failed transform keeps the
// original query; a retriever error, panic or timeout means no context
// (with a [MultiRetriever], only the failed members are missing); either
// way the message goes on, unchanged when nothing was found, and the
// failures go to the OnDegraded hook. Augment returns an error only when ctx
// itself is done, since the turn is over then anyway.
//
// Several queries (from [ExpandQuery]) are recalled concurrently and fused
// with [FuseRRF]; the best k of the fused list are injected.
//
// NewAugmentor panics if r is nil, which is a programming error.
func NewAugmentor(r Retriever, opts ...AugmentOption) *RetrievalAugmentor {
	if r == nil {
		panic("rag: NewAugmentor with a nil Retriever")
	}
	a := &RetrievalAugmentor{retriever: r, injector: ContentInjector{}}
	for _, o := range opts {
		o(a)
	}
	return a
}

// Augment returns q's message with the sources retrieved for it.
func (a *RetrievalAugmentor) Augment(ctx context.Context, q Query) (Augmentation, error) {
	msg := q.Message
	if len(msg.Parts) == 0 {
		msg = llm.UserMessage(q.Text)
	}
	text := q.Text
	if text == "" {
		text = msg.Text()
	}
	if strings.TrimSpace(text) == "" {
		return Augmentation{Message: msg}, nil
	}
	q.Text = text

	queries := a.transform(ctx, q)
	if err := ctx.Err(); err != nil {
		return Augmentation{Message: msg}, err
	}
	sources := a.retrieve(ctx, queries)
	if err := ctx.Err(); err != nil {
		return Augmentation{Message: msg}, err
	}
	if len(sources) == 0 {
		return Augmentation{Message: msg}, nil
	}
	out, used := a.injector.Inject(msg, sources)
	return Augmentation{Message: out, Sources: used}, nil
}

func (a *RetrievalAugmentor) transform(ctx context.Context, q Query) []string {
	queries := []string{q.Text}
	for _, t := range a.transforms {
		var next []string
		for _, text := range queries {
			tq := q
			tq.Text = text
			var out []string
			err := protect(func() error {
				var err error
				out, err = t.Transform(ctx, tq)
				return err
			})
			if err == nil && len(out) == 0 {
				err = fmt.Errorf("no queries")
			}
			if err != nil {
				a.degraded(ctx, &Degradation{Step: "transform", Name: transformName(t), Err: err})
				out = []string{text}
			}
			next = append(next, out...)
		}
		if next = dedupe(next); len(next) > 0 {
			queries = next
		}
	}
	return queries
}

func (a *RetrievalAugmentor) retrieve(ctx context.Context, queries []string) []Source {
	type answer struct {
		sources  []Source
		degraded []*Degradation
	}
	answers := make([]answer, len(queries))
	done := make(chan struct{}, len(queries))
	for i, query := range queries {
		go func() {
			defer func() { done <- struct{}{} }()
			var sources []Source
			var degraded []*Degradation
			err := protect(func() error {
				if rc, ok := a.retriever.(Recaller); ok {
					rec := rc.Recall(ctx, query, a.topK)
					sources, degraded = rec.Sources, rec.Degraded
					return nil
				}
				var err error
				sources, err = a.retriever.Retrieve(ctx, query, a.topK)
				return err
			})
			if err != nil {
				answers[i] = answer{degraded: []*Degradation{{Step: "retrieve", Err: err}}}
				return
			}
			answers[i] = answer{sources: sources, degraded: degraded}
		}()
	}
	for range queries {
		<-done
	}
	lists := make([][]Source, 0, len(queries))
	for _, ans := range answers {
		for _, d := range ans.degraded {
			a.degraded(ctx, d)
		}
		if ans.sources != nil {
			lists = append(lists, ans.sources)
		}
	}
	switch len(lists) {
	case 0:
		return nil
	case 1:
		if len(queries) == 1 {
			return lists[0]
		}
	}
	fused := FuseRRF(DefaultRRFK, lists...)
	k := a.topK
	if k < 1 {
		k = DefaultTopK
		for _, l := range lists {
			k = max(k, len(l))
		}
	}
	if len(fused) > k {
		fused = fused[:k]
	}
	return fused
}

func (a *RetrievalAugmentor) degraded(ctx context.Context, d *Degradation) {
	if a.onDegraded != nil {
		a.onDegraded(ctx, d)
	}
}

func transformName(t QueryTransformer) string {
	if n, ok := t.(interface{ Name() string }); ok {
		return n.Name()
	}
	return fmt.Sprintf("%T", t)
}

func dedupe(queries []string) []string {
	seen := make(map[string]bool, len(queries))
	out := queries[:0:0]
	for _, q := range queries {
		key := strings.ToLower(strings.TrimSpace(q))
		if key == "" || seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, q)
	}
	return out
}
