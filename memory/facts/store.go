// Package facts is long-term memory: short facts about an end user ("Lives
// in Berlin.", "Has a dog named Rex."), kept across all of that user's
// conversations and recalled into the prompts of later ones by relevance.
//
// A [Fact] belongs to a [Scope], an end user of a tenant; nothing reads
// or changes a fact outside its scope, and the tools of this package take
// the user from their context ([tool.User]), never from the model's
// arguments. Facts live in a [Store] with their embeddings ([InMemory]
// here; package sqlfacts keeps them on SQLite and on PostgreSQL with
// pgvector, where the Weft platform keeps them; every store passes
// factstest.Run). [Memory] is what programs use over a store:
//
//   - [Memory.Learn] asks a model, through an [Extractor], what a turn's
//     messages teach about the user, against the relevant facts already
//     kept, and applies its decisions: facts are added, updated rather
//     than appended ("moved to Berlin" replaces "lives in Paris") or
//     deleted, and a fact kept already is not added twice. Programs run
//     it after a turn, in the background: it never needs to hold a turn
//     up.
//   - [Memory.Recall] returns the facts most relevant to a query that fit
//     a token budget, rendered for a prompt (ai.RecallFacts sends them
//     after a turn's system prompt, as the answer's sources).
//   - [Memory.Remember] and [Memory.Forget] change one fact; [Memory.Tools]
//     gives an agent remember, recall and forget tools over them.
//
// This is the ADD/UPDATE/DELETE/NONE pattern of Mem0, with one model call
// per turn: the extractor sees the relevant facts with short ids and the
// messages together.
package facts

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/rag/vector"
)

// Scope is whose facts: an end user of a tenant. The library's programs
// may leave Tenant empty; a server fills both.
type Scope struct {
	Tenant string `json:"tenant,omitempty"`
	User   string `json:"user"`
}

// Fact is one thing remembered about an end user.
type Fact struct {
	// ID names the fact within its scope; a store fills an empty one.
	ID    string `json:"id"`
	Scope Scope  `json:"scope"`
	// Text is the fact, one short sentence ("Lives in Berlin.").
	Text string `json:"text"`
	// Embedding is Text's vector, by which the fact is recalled.
	Embedding []float32 `json:"embedding,omitempty"`
	// CreatedAt and UpdatedAt are set by the store when zero.
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Source says where the fact was learned or last changed.
	Source Source `json:"source"`
}

// Source says where a fact was learned or last changed.
type Source struct {
	// Kind is how: SourceExtraction, SourceTool, or a kind of the
	// program's own (the platform's API, its console).
	Kind string `json:"kind"`
	// Agent, Session and Message name the conversation and the record
	// the fact came from, when known.
	Agent   string `json:"agent,omitempty"`
	Session string `json:"session,omitempty"`
	Message string `json:"message,omitempty"`
}

// The kinds of [Source] this package writes.
const (
	// SourceExtraction: learned from a turn by [Memory.Learn].
	SourceExtraction = "extraction"
	// SourceTool: told by the agent through the remember tool.
	SourceTool = "tool"
)

// Hit is a fact found by similarity, with its cosine similarity to the
// query (higher is nearer).
type Hit struct {
	Fact  Fact    `json:"fact"`
	Score float64 `json:"score"`
}

// ErrNotFound is returned by [Store.Get] for a fact its scope does not
// hold.
var ErrNotFound = errors.New("facts: no such fact")

// Store keeps facts with their embeddings. Every method works within one
// scope: a fact of another scope is never read, changed nor deleted, also
// when its id is named. Implementations are safe for concurrent use.
type Store interface {
	// Put stores facts: one whose ID its scope holds replaces it, one with
	// an empty ID gets a fresh one. Zero CreatedAt and UpdatedAt are set
	// to the time of the put. It returns the facts as stored.
	Put(ctx context.Context, facts ...Fact) ([]Fact, error)
	// Get returns scope's fact id, or an error matching ErrNotFound.
	Get(ctx context.Context, scope Scope, id string) (Fact, error)
	// List returns scope's facts, most recently updated first.
	List(ctx context.Context, scope Scope) ([]Fact, error)
	// Search returns up to k of scope's facts nearest to vec, nearest
	// first (equal scores by ID), with their cosine similarity. Facts
	// without an embedding are not searched.
	Search(ctx context.Context, scope Scope, vec []float32, k int) ([]Hit, error)
	// Delete removes scope's facts with the given ids, ignoring unknown
	// ones, and returns how many it removed.
	Delete(ctx context.Context, scope Scope, ids ...string) (int, error)
	// Forget removes every fact of scope and returns how many.
	Forget(ctx context.Context, scope Scope) (int, error)
}

// InMemory is the in-process [Store]: facts in maps, searched with an
// exact vector index per scope (vector.Flat). Facts go in and come out as
// copies. It is safe for concurrent use; the zero value is not usable,
// call [NewInMemory].
type InMemory struct {
	mu     sync.RWMutex
	scopes map[Scope]*scoped
}

type scoped struct {
	facts map[string]Fact
	index *vector.Flat // created with the first embedding's dimension
}

var _ Store = (*InMemory)(nil)

// NewInMemory returns an empty in-process store.
func NewInMemory() *InMemory { return &InMemory{scopes: map[Scope]*scoped{}} }

// Put implements [Store]. A batch whose embeddings do not fit the scope's
// index (another dimension, a zero vector) stores nothing.
func (m *InMemory) Put(ctx context.Context, facts ...Fact) ([]Fact, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("facts: put: %w", err)
	}
	now := time.Now().UTC().Round(0)
	out := make([]Fact, len(facts))
	for i, f := range facts {
		if f.ID == "" {
			f.ID = memory.NewID()
		}
		if f.CreatedAt.IsZero() {
			f.CreatedAt = now
		}
		if f.UpdatedAt.IsZero() {
			f.UpdatedAt = now
		}
		f.Embedding = slices.Clone(f.Embedding)
		out[i] = f
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	// Check every embedding against its scope's index first: a batch with
	// one the index would refuse stores nothing.
	indexes := map[Scope]*vector.Flat{}
	for _, f := range out {
		if len(f.Embedding) == 0 {
			continue
		}
		idx := indexes[f.Scope]
		if idx == nil {
			if idx = m.scope(f.Scope, false).index; idx == nil {
				idx = vector.NewFlat(len(f.Embedding), vector.WithWorkers(1))
			}
			indexes[f.Scope] = idx
		}
		if err := checkVector(f.Embedding, idx.Dim()); err != nil {
			return nil, fmt.Errorf("facts: put %q: %w", f.ID, err)
		}
	}
	for _, f := range out {
		if len(f.Embedding) > 0 {
			if err := indexes[f.Scope].Add(ctx, vector.Item{ID: f.ID, Vector: f.Embedding}); err != nil {
				return nil, fmt.Errorf("facts: put %q: %w", f.ID, err) // checked above
			}
		}
	}
	for _, f := range out {
		s := m.scope(f.Scope, true)
		if idx := indexes[f.Scope]; idx != nil {
			s.index = idx
		}
		if old, ok := s.facts[f.ID]; ok && len(old.Embedding) > 0 && len(f.Embedding) == 0 && s.index != nil {
			_ = s.index.Delete(ctx, f.ID) // replaced without an embedding
		}
		s.facts[f.ID] = f
	}
	for i := range out {
		out[i].Embedding = slices.Clone(out[i].Embedding)
	}
	return out, nil
}

// checkVector reports whether an index of dimension dim takes v: its
// length, finite components, not all zero.
func checkVector(v []float32, dim int) error {
	if len(v) != dim {
		return fmt.Errorf("%w: %d components, the scope's facts have %d", vector.ErrDimension, len(v), dim)
	}
	zero := true
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("%w: component %v", vector.ErrInvalidVector, x)
		}
		zero = zero && x == 0
	}
	if zero {
		return fmt.Errorf("%w: a zero vector", vector.ErrInvalidVector)
	}
	return nil
}

// scope returns sc's facts, made when create is set (nil otherwise when
// there are none). m.mu is held.
func (m *InMemory) scope(sc Scope, create bool) *scoped {
	s := m.scopes[sc]
	if s == nil {
		if !create {
			return &scoped{}
		}
		s = &scoped{facts: map[string]Fact{}}
		m.scopes[sc] = s
	}
	return s
}

// Get implements [Store].
func (m *InMemory) Get(ctx context.Context, scope Scope, id string) (Fact, error) {
	if err := ctx.Err(); err != nil {
		return Fact{}, fmt.Errorf("facts: get: %w", err)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	f, ok := m.scope(scope, false).facts[id]
	if !ok {
		return Fact{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	f.Embedding = slices.Clone(f.Embedding)
	return f, nil
}

// List implements [Store].
func (m *InMemory) List(ctx context.Context, scope Scope) ([]Fact, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("facts: list: %w", err)
	}
	m.mu.RLock()
	out := make([]Fact, 0, len(m.scope(scope, false).facts))
	for _, f := range m.scope(scope, false).facts {
		f.Embedding = slices.Clone(f.Embedding)
		out = append(out, f)
	}
	m.mu.RUnlock()
	slices.SortFunc(out, func(a, b Fact) int {
		if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// Search implements [Store].
func (m *InMemory) Search(ctx context.Context, scope Scope, vec []float32, k int) ([]Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("facts: search: %w", err)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	s := m.scope(scope, false)
	if s.index == nil || s.index.Len() == 0 {
		return nil, nil
	}
	hits, err := s.index.Search(ctx, vec, k, nil)
	if err != nil {
		return nil, fmt.Errorf("facts: search: %w", err)
	}
	out := make([]Hit, len(hits))
	for i, h := range hits {
		f := s.facts[h.ID]
		f.Embedding = slices.Clone(f.Embedding)
		out[i] = Hit{Fact: f, Score: float64(h.Score)}
	}
	return out, nil
}

// Delete implements [Store].
func (m *InMemory) Delete(ctx context.Context, scope Scope, ids ...string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("facts: delete: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.scopes[scope]
	if s == nil {
		return 0, nil
	}
	n := 0
	for _, id := range ids {
		if _, ok := s.facts[id]; ok {
			delete(s.facts, id)
			n++
			if s.index != nil {
				_ = s.index.Delete(ctx, id)
			}
		}
	}
	if len(s.facts) == 0 {
		delete(m.scopes, scope)
	}
	return n, nil
}

// Forget implements [Store].
func (m *InMemory) Forget(ctx context.Context, scope Scope) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("facts: forget: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	if s := m.scopes[scope]; s != nil {
		n = len(s.facts)
	}
	delete(m.scopes, scope)
	return n, nil
}
