package rag

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"
)

// DefaultRecallTimeout bounds each retriever (and the reranker) of a
// [MultiRetriever] whose Timeout is zero, so that one slow store cannot stall
// a turn.
const DefaultRecallTimeout = 10 * time.Second

// Degradation reports a step of retrieval that failed and was skipped while
// the rest went on: a retriever of a [MultiRetriever], its reranker, or a
// query transform of an [Augmentor]. It is an error; match it with
// errors.As and the cause with errors.Is (a timed-out step wraps
// context.DeadlineExceeded).
type Degradation struct {
	// Step is "retrieve", "rerank" or "transform".
	Step string
	// Name names the retriever, reranker or transform.
	Name string
	// Err is the failure.
	Err error
}

// Error describes the degradation.
func (d *Degradation) Error() string {
	if d.Name == "" {
		return fmt.Sprintf("rag: %s skipped: %v", d.Step, d.Err)
	}
	return fmt.Sprintf("rag: %s %q skipped: %v", d.Step, d.Name, d.Err)
}

// Unwrap returns the failure.
func (d *Degradation) Unwrap() error { return d.Err }

// NamedRetriever is one member of a [MultiRetriever].
type NamedRetriever struct {
	// Name identifies the retriever in degradations and in Describe
	// ("vector", "keyword", a knowledge base's name…).
	Name      string
	Retriever Retriever
	// Timeout bounds this member, overriding the MultiRetriever's Timeout
	// when not zero (negative means no bound beyond ctx).
	Timeout time.Duration
}

// Recall is what a [MultiRetriever] found and what it had to skip.
type Recall struct {
	// Sources are the fused (and reranked) sources, best first, at most k.
	Sources []Source
	// Degraded lists the steps that failed; their absence is what the
	// Sources lack. All retrievers failing gives no Sources and one
	// degradation per retriever.
	Degraded []*Degradation
}

// Err joins the degradations into one error, nil when there are none, for
// callers that log or report them.
func (r Recall) Err() error {
	errs := make([]error, len(r.Degraded))
	for i, d := range r.Degraded {
		errs[i] = d
	}
	return errors.Join(errs...)
}

// Recaller is implemented by retrievers that report degradations beside
// their sources; the [Augmentor] built by [NewAugmentor] uses it to pass
// them to its OnDegraded hook.
type Recaller interface {
	Recall(ctx context.Context, query string, k int) Recall
}

// MultiRetriever recalls from several retrievers at once, fuses their
// rankings by reciprocal rank fusion ([FuseRRF]), optionally reranks the
// fused list, and keeps the best k.
//
// It never fails: a retriever that errors, panics or outlives Timeout is
// skipped and reported in [Recall].Degraded, the others' results are used,
// and when every retriever fails the result is empty. Retrieve (the
// [Retriever] method) drops the report and always returns a nil error; call
// Recall to see it.
//
// Scores: with two or more retrievers, a Source's Score is its RRF score
// (see FuseRRF), or the reranker's score when a Reranker is set. With a
// single retriever its own ranking and scores are kept. Minimum scores are
// the members' business: each retriever applies its own (see [MinScore])
// to its own scale before fusion; the fused list is not filtered again.
//
// Members may themselves be MultiRetrievers (one per knowledge base, say):
// a member that implements [Recaller] is asked for its Recall, and its
// degradations are reported with the member's name in front ("kb1/vector").
//
// Set the fields before first use; a MultiRetriever is then safe for
// concurrent use.
type MultiRetriever struct {
	// Retrievers are the members, queried concurrently.
	Retrievers []NamedRetriever
	// K is the RRF constant (default DefaultRRFK).
	K int
	// Candidates is how many sources each member is asked for (default
	// max(2k, 20) for a request of k), so that fusion and reranking have
	// more than the final k to choose from.
	Candidates int
	// Timeout bounds each member and the reranker (default
	// DefaultRecallTimeout; negative means no bound beyond ctx).
	Timeout time.Duration
	// Reranker, if set, reorders the fused candidates before the best k are
	// kept. Its failure keeps the fused order and is reported.
	Reranker Reranker
	// Note is appended to Describe, for example why a member is missing.
	Note string
}

// NewHybrid returns the standard knowledge-base recall: keyword and vector
// retrievers fused by RRF. With a nil vector retriever (no embedding model
// configured) it runs keyword-only and Describe says so; with a nil keyword
// retriever it runs vector-only.
func NewHybrid(keyword, vector Retriever) *MultiRetriever {
	m := &MultiRetriever{}
	if vector != nil {
		m.Retrievers = append(m.Retrievers, NamedRetriever{Name: "vector", Retriever: vector})
	} else {
		m.Note = "no embedding model configured"
	}
	if keyword != nil {
		m.Retrievers = append(m.Retrievers, NamedRetriever{Name: "keyword", Retriever: keyword})
	}
	return m
}

// Describe says how the retriever recalls, for logs and for a knowledge
// base's status: "vector + keyword (reciprocal rank fusion, k=60)",
// "keyword-only: no embedding model configured", …
func (m *MultiRetriever) Describe() string {
	var b strings.Builder
	switch len(m.Retrievers) {
	case 0:
		b.WriteString("no retrievers")
	case 1:
		b.WriteString(m.Retrievers[0].Name)
		b.WriteString("-only")
	default:
		for i, r := range m.Retrievers {
			if i > 0 {
				b.WriteString(" + ")
			}
			b.WriteString(r.Name)
		}
		fmt.Fprintf(&b, " (reciprocal rank fusion, k=%d)", m.rrfK())
	}
	if m.Reranker != nil {
		b.WriteString(", reranked")
	}
	if m.Note != "" {
		b.WriteString(": ")
		b.WriteString(m.Note)
	}
	return b.String()
}

func (m *MultiRetriever) rrfK() int {
	if m.K < 1 {
		return DefaultRRFK
	}
	return m.K
}

func (m *MultiRetriever) timeout() time.Duration {
	if m.Timeout == 0 {
		return DefaultRecallTimeout
	}
	return m.Timeout
}

func (m *MultiRetriever) memberTimeout(r NamedRetriever) time.Duration {
	if r.Timeout != 0 {
		return r.Timeout
	}
	return m.timeout()
}

// Retrieve returns the best k sources (DefaultTopK when k ≤ 0). It never
// returns an error; see Recall for what was skipped.
func (m *MultiRetriever) Retrieve(ctx context.Context, query string, k int) ([]Source, error) {
	return m.Recall(ctx, query, k).Sources, nil
}

// Recall queries every member concurrently, each bounded by Timeout, fuses
// what they found, reranks, and keeps the best k (DefaultTopK when k ≤ 0).
// It returns when every member has answered or timed out; a member that
// ignores its context is abandoned, not waited for.
func (m *MultiRetriever) Recall(ctx context.Context, query string, k int) Recall {
	if k < 1 {
		k = DefaultTopK
	}
	var rec Recall
	if strings.TrimSpace(query) == "" || len(m.Retrievers) == 0 {
		return rec
	}
	n := m.Candidates
	if n < 1 {
		n = max(2*k, 20)
	}
	type answer struct {
		sources []Source
		nested  []*Degradation
		err     error
	}
	results := make([]chan answer, len(m.Retrievers))
	cancels := make([]context.CancelFunc, len(m.Retrievers))
	ctxs := make([]context.Context, len(m.Retrievers))
	for i, member := range m.Retrievers {
		results[i] = make(chan answer, 1) // buffered: an abandoned member never blocks
		ctxs[i], cancels[i] = stepContext(ctx, m.memberTimeout(member))
		go func() {
			var a answer
			a.err = protect(func() error {
				if rc, ok := member.Retriever.(Recaller); ok {
					rec := rc.Recall(ctxs[i], query, n)
					a.sources, a.nested = rec.Sources, rec.Degraded
					return nil
				}
				var err error
				a.sources, err = member.Retriever.Retrieve(ctxs[i], query, n)
				return err
			})
			results[i] <- a
		}()
	}
	lists := make([][]Source, 0, len(m.Retrievers))
	for i, member := range m.Retrievers {
		var a answer
		select {
		case a = <-results[i]:
		case <-ctxs[i].Done():
			// The members' deadlines expire together: while this loop
			// waited for a slow one, the others' answers arrived in time.
			select {
			case a = <-results[i]:
			default:
				a.err = stepTimeout(ctx, ctxs[i], m.memberTimeout(member))
			}
		}
		cancels[i]()
		for _, d := range a.nested {
			nd := *d
			nd.Name = joinName(member.Name, d.Name)
			rec.Degraded = append(rec.Degraded, &nd)
		}
		if a.err != nil {
			rec.Degraded = append(rec.Degraded, &Degradation{Step: "retrieve", Name: member.Name, Err: a.err})
			continue
		}
		lists = append(lists, a.sources)
	}

	var fused []Source
	switch {
	case len(lists) == 0:
		return rec
	case len(m.Retrievers) == 1:
		fused = lists[0]
	default:
		fused = FuseRRF(m.rrfK(), lists...)
	}
	if m.Reranker != nil && len(fused) > 0 {
		reranked, d := m.rerank(ctx, query, fused)
		if d != nil {
			rec.Degraded = append(rec.Degraded, d)
		} else {
			fused = reranked
		}
	}
	if len(fused) > k {
		fused = fused[:k]
	}
	rec.Sources = fused
	return rec
}

func (m *MultiRetriever) rerank(ctx context.Context, query string, candidates []Source) ([]Source, *Degradation) {
	sctx, cancel := stepContext(ctx, m.timeout())
	defer cancel()
	done := make(chan []Source, 1)
	errc := make(chan error, 1)
	in := append([]Source(nil), candidates...) // the reranker may reorder its argument
	go func() {
		var out []Source
		if err := protect(func() error {
			var err error
			out, err = m.Reranker.Rerank(sctx, query, in)
			return err
		}); err != nil {
			errc <- err
			return
		}
		done <- out
	}()
	var err error
	select {
	case out := <-done:
		return out, nil
	case err = <-errc:
	case <-sctx.Done():
		err = stepTimeout(ctx, sctx, m.timeout())
	}
	return nil, &Degradation{Step: "rerank", Err: err}
}

func stepContext(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d > 0 {
		return context.WithTimeout(ctx, d)
	}
	return context.WithCancel(ctx)
}

// joinName names a nested member's step: "kb1/vector".
func joinName(outer, inner string) string {
	switch {
	case outer == "":
		return inner
	case inner == "":
		return outer
	}
	return outer + "/" + inner
}

// stepTimeout describes why a step's context ended.
func stepTimeout(parent, step context.Context, d time.Duration) error {
	if parent.Err() == nil && errors.Is(step.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no answer within %v: %w", d, context.DeadlineExceeded)
	}
	return context.Cause(step)
}

// protect runs f and turns a panic into an error: retrieval is an
// enhancement, and a bug in one retriever must not take the turn down.
func protect(f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v\n%s", v, debug.Stack())
		}
	}()
	return f()
}
