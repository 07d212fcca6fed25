package facts

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/tokens"
)

// Defaults of a [Memory].
const (
	// DefaultRecallK is how many facts a recall ranks before its budget
	// cuts them.
	DefaultRecallK = 16
	// DefaultMinScore is the similarity below which a fact is not
	// recalled.
	DefaultMinScore = 0.25
	// DefaultSameFact is the similarity at which a new fact is the one
	// kept already, and is not added twice.
	DefaultSameFact = 0.92
	// learnK is how many kept facts an extraction is shown.
	learnK = 24
)

// Memory is long-term memory over a [Store]: facts about end users
// learned from their turns, told, recalled by relevance and forgotten (see
// the package documentation). It is safe for concurrent use.
type Memory struct {
	store     Store
	embedder  rag.Embedder
	extractor *Extractor
	counter   tokens.Counter
	recallK   int
	minScore  float64
	same      float64
}

// Option configures a [Memory].
type Option func(*Memory)

// WithExtractor sets the extractor [Memory.Learn] asks; without one Learn
// fails.
func WithExtractor(e *Extractor) Option { return func(m *Memory) { m.extractor = e } }

// WithCounter sets the counter of recall budgets (default
// tokens.Estimator); give the chat model's.
func WithCounter(c tokens.Counter) Option { return func(m *Memory) { m.counter = c } }

// MinScore sets the similarity below which a fact is not recalled
// (default [DefaultMinScore]); it depends on the embedding model.
func MinScore(s float64) Option { return func(m *Memory) { m.minScore = s } }

// SameFact sets the similarity at which a new fact is taken for one kept
// already (default [DefaultSameFact]).
func SameFact(s float64) Option { return func(m *Memory) { m.same = s } }

// New returns long-term memory over store, whose facts are embedded with
// embedder. It panics if either is nil, a programming error.
func New(store Store, embedder rag.Embedder, opts ...Option) *Memory {
	if store == nil || embedder == nil {
		panic("facts: New with a nil store or embedder")
	}
	m := &Memory{store: store, embedder: embedder, counter: tokens.Estimator{},
		recallK: DefaultRecallK, minScore: DefaultMinScore, same: DefaultSameFact}
	for _, o := range opts {
		o(m)
	}
	return m
}

// Store returns the memory's store.
func (m *Memory) Store() Store { return m.store }

// Changes are what [Memory.Learn] changed.
type Changes struct {
	// Added are the new facts; Updated the facts whose text changed, as
	// they are now; Deleted the facts removed, as they were.
	Added, Updated, Deleted []Fact
}

func checkScope(scope Scope) error {
	if scope.User == "" {
		return errors.New("facts: no end user: a scope needs a user")
	}
	return nil
}

// Learn asks the extractor what msgs (a turn's messages) teach about the
// user of scope, shown the kept facts most relevant to the user's
// messages, and applies its decisions with src as their source: a fact
// added when the kept one nearest to it is not the same fact (by
// SameFact), a fact updated, a fact deleted. It makes one model call and
// two embedding calls; programs run it after the turn, not during it.
func (m *Memory) Learn(ctx context.Context, scope Scope, msgs []llm.Message, src Source) (Changes, error) {
	if m.extractor == nil {
		return Changes{}, errors.New("facts: Learn needs an extractor (facts.WithExtractor)")
	}
	if err := checkScope(scope); err != nil {
		return Changes{}, err
	}
	var said []string
	for _, msg := range msgs {
		if t := strings.TrimSpace(msg.Text()); msg.Role == llm.RoleUser && t != "" {
			said = append(said, t)
		}
	}
	if len(said) == 0 {
		return Changes{}, nil
	}
	vecs, err := m.embed(ctx, strings.Join(said, "\n"))
	if err != nil {
		return Changes{}, err
	}
	hits, err := m.store.Search(ctx, scope, vecs[0], learnK)
	if err != nil {
		return Changes{}, err
	}
	kept := make([]Fact, len(hits))
	byID := make(map[string]Fact, len(hits))
	for i, h := range hits {
		kept[i] = h.Fact
		byID[h.Fact.ID] = h.Fact
	}
	ds, err := m.extractor.Extract(ctx, msgs, kept)
	if err != nil {
		return Changes{}, err
	}
	var texts []string
	for _, d := range ds {
		if d.Op == Add || d.Op == Update {
			texts = append(texts, d.Text)
		}
	}
	if len(texts) > 0 {
		if vecs, err = m.embed(ctx, texts...); err != nil {
			return Changes{}, err
		}
	}
	var ch Changes
	now := time.Now().UTC().Round(0)
	next := 0
	for _, d := range ds {
		switch d.Op {
		case Add:
			vec := vecs[next]
			next++
			f, added, err := m.add(ctx, scope, d.Text, vec, src, now)
			if err != nil {
				return ch, err
			}
			if added {
				ch.Added = append(ch.Added, f)
			}
		case Update:
			vec := vecs[next]
			next++
			f := byID[d.ID]
			if f.Text == d.Text {
				continue
			}
			f.Text, f.Embedding, f.UpdatedAt, f.Source = d.Text, vec, now, src
			out, err := m.store.Put(ctx, f)
			if err != nil {
				return ch, err
			}
			ch.Updated = append(ch.Updated, out[0])
		case Delete:
			n, err := m.store.Delete(ctx, scope, d.ID)
			if err != nil {
				return ch, err
			}
			if n > 0 {
				ch.Deleted = append(ch.Deleted, byID[d.ID])
			}
		}
	}
	return ch, nil
}

// add keeps text as a new fact of scope unless the kept fact nearest to
// it is the same fact; it returns the fact kept and whether it is new.
func (m *Memory) add(ctx context.Context, scope Scope, text string, vec []float32, src Source, now time.Time) (Fact, bool, error) {
	hits, err := m.store.Search(ctx, scope, vec, 1)
	if err != nil {
		return Fact{}, false, err
	}
	if len(hits) > 0 && (hits[0].Score >= m.same || sameText(hits[0].Fact.Text, text)) {
		return hits[0].Fact, false, nil
	}
	out, err := m.store.Put(ctx, Fact{Scope: scope, Text: text, Embedding: vec, CreatedAt: now, UpdatedAt: now, Source: src})
	if err != nil {
		return Fact{}, false, err
	}
	return out[0], true, nil
}

// sameText reports whether two facts say the same words, ignoring case,
// spacing and a final full stop.
func sameText(a, b string) bool {
	norm := func(s string) string {
		return strings.TrimRight(strings.Join(strings.Fields(strings.ToLower(s)), " "), ".!")
	}
	return norm(a) == norm(b)
}

// embed embeds texts, one vector each.
func (m *Memory) embed(ctx context.Context, texts ...string) ([][]float32, error) {
	vecs, err := m.embedder.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("facts: embed: %w", err)
	}
	if len(vecs) != len(texts) {
		return nil, fmt.Errorf("facts: embed: %d vectors for %d texts", len(vecs), len(texts))
	}
	return vecs, nil
}

// Remember keeps text as a fact of scope, with src as its source, and
// returns it: the kept fact that is the same (by SameFact), with its text
// replaced when the words differ, or a new one. known reports that it was
// kept already.
func (m *Memory) Remember(ctx context.Context, scope Scope, text string, src Source) (f Fact, known bool, err error) {
	if err := checkScope(scope); err != nil {
		return Fact{}, false, err
	}
	text = strings.TrimSpace(text)
	switch {
	case text == "":
		return Fact{}, false, errors.New("facts: remember: an empty fact")
	case len(text) > MaxFactBytes || !utf8.ValidString(text):
		return Fact{}, false, fmt.Errorf("facts: remember: a fact of %d bytes, over the limit of %d", len(text), MaxFactBytes)
	}
	vecs, err := m.embed(ctx, text)
	if err != nil {
		return Fact{}, false, err
	}
	now := time.Now().UTC().Round(0)
	f, added, err := m.add(ctx, scope, text, vecs[0], src, now)
	if err != nil || added {
		return f, false, err
	}
	if f.Text != text {
		f.Text, f.Embedding, f.UpdatedAt, f.Source = text, vecs[0], now, src
		out, err := m.store.Put(ctx, f)
		if err != nil {
			return Fact{}, false, err
		}
		f = out[0]
	}
	return f, true, nil
}

// Forget deletes scope's fact id and reports whether there was one.
func (m *Memory) Forget(ctx context.Context, scope Scope, id string) (bool, error) {
	if err := checkScope(scope); err != nil {
		return false, err
	}
	n, err := m.store.Delete(ctx, scope, id)
	return n > 0, err
}

// Recollection is what [Memory.Recall] found: the facts, most relevant
// first, and their rendering for a prompt.
type Recollection struct {
	Facts []Hit
	// Text is the facts as a prompt carries them, a delimited block; ""
	// for none.
	Text string
	// Tokens is Text's tokens as the memory's counter counts them.
	Tokens int
}

// Recall returns the facts of scope most relevant to query: the nearest
// (at most 16) whose similarity reaches MinScore, most relevant first, as
// many as fit budget tokens once rendered (budget ≤ 0: no bound). An
// empty query recalls nothing.
func (m *Memory) Recall(ctx context.Context, scope Scope, query string, budget int) (Recollection, error) {
	if err := checkScope(scope); err != nil {
		return Recollection{}, err
	}
	if strings.TrimSpace(query) == "" {
		return Recollection{}, nil
	}
	vecs, err := m.embed(ctx, query)
	if err != nil {
		return Recollection{}, err
	}
	hits, err := m.store.Search(ctx, scope, vecs[0], m.recallK)
	if err != nil {
		return Recollection{}, err
	}
	var r Recollection
	for _, h := range hits {
		if h.Score < m.minScore {
			break
		}
		text := render(append(r.Facts, h))
		n := m.counter.Count(text)
		if budget > 0 && n > budget {
			break
		}
		r.Facts, r.Text, r.Tokens = append(r.Facts, h), text, n
	}
	return r, nil
}

// render is the block of recalled facts a prompt carries.
func render(hits []Hit) string {
	var b strings.Builder
	b.WriteString("<user_memory>\nRemembered about the user from earlier conversations, most relevant first (it may be out of date):\n")
	for _, h := range hits {
		b.WriteString("- ")
		b.WriteString(h.Fact.Text)
		b.WriteByte('\n')
	}
	b.WriteString("</user_memory>")
	return b.String()
}
