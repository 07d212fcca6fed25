// Package factstest is the contract suite every [facts.Store] must pass:
// call [Run] from a test with a constructor.
//
//	func TestContract(t *testing.T) {
//		factstest.Run(t, func(t *testing.T) facts.Store { return facts.NewInMemory() })
//	}
//
// Every subtest uses scopes under a fresh random tenant, so stores backed
// by a shared server need no cleanup between subtests. Embeddings have
// four dimensions.
package factstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/weftlabs/weft/memory/facts"
)

// Run runs the contract suite against the stores newStore returns, once
// per subtest (a fresh store or a shared one). Subtests run in parallel.
func Run(t *testing.T, newStore func(t *testing.T) facts.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s facts.Store)
	}{
		{"PutGet", testPutGet},
		{"Replace", testReplace},
		{"List", testList},
		{"Search", testSearch},
		{"Delete", testDelete},
		{"Forget", testForget},
		{"Isolation", testIsolation},
		{"Concurrent", testConcurrent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, newStore(t))
		})
	}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newTenant returns a tenant no other test uses.
func newTenant() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "factstest-" + hex.EncodeToString(b[:])
}

func fact(sc facts.Scope, id, text string, vec ...float32) facts.Fact {
	return facts.Fact{ID: id, Scope: sc, Text: text, Embedding: vec, Source: facts.Source{Kind: facts.SourceExtraction, Agent: "a", Session: "s", Message: "m"}}
}

func mustPut(t *testing.T, s facts.Store, fs ...facts.Fact) []facts.Fact {
	t.Helper()
	out, err := s.Put(ctxFor(t), fs...)
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	if len(out) != len(fs) {
		t.Fatalf("Put returned %d facts for %d", len(out), len(fs))
	}
	return out
}

// equal compares facts field by field, times with time.Equal.
func equal(a, b facts.Fact) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) || !a.UpdatedAt.Equal(b.UpdatedAt) {
		return false
	}
	a.CreatedAt, a.UpdatedAt, b.CreatedAt, b.UpdatedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	return reflect.DeepEqual(a, b)
}

func ids(fs []facts.Fact) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.ID
	}
	return out
}

func hitIDs(hs []facts.Hit) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.Fact.ID
	}
	return out
}

func testPutGet(t *testing.T, s facts.Store) {
	sc := facts.Scope{Tenant: newTenant(), User: "u"}
	before := time.Now().Add(-time.Minute)
	at := time.Date(2026, 1, 2, 3, 4, 5, 678901234, time.UTC)
	in := fact(sc, "", "Lives in Berlin ✓ \"quoted\".", 1, 0, 0, 0)
	given := fact(sc, "given", "Has a dog.", 0, 1, 0, 0)
	given.CreatedAt, given.UpdatedAt = at, at.Add(time.Hour)
	out := mustPut(t, s, in, given)
	if out[0].ID == "" || out[0].CreatedAt.Before(before) || out[0].UpdatedAt.Before(before) {
		t.Fatalf("Put filled %+v: want an id and times of now", out[0])
	}
	if !equal(out[1], given) {
		t.Fatalf("Put returned %+v, want %+v", out[1], given)
	}
	for _, want := range out {
		got, err := s.Get(ctxFor(t), sc, want.ID)
		if err != nil {
			t.Fatalf("Get(%q): %v", want.ID, err)
		}
		if !equal(got, want) {
			t.Fatalf("Get(%q) = %+v, want %+v", want.ID, got, want)
		}
	}
	if _, err := s.Get(ctxFor(t), sc, "absent"); !errors.Is(err, facts.ErrNotFound) {
		t.Fatalf("Get of an absent fact: err = %v, want ErrNotFound", err)
	}
	// The store keeps its own copy.
	out[0].Embedding[0] = 9
	got, _ := s.Get(ctxFor(t), sc, out[0].ID)
	if got.Embedding[0] != 1 {
		t.Fatal("changing a returned embedding changed the stored one")
	}
	// A fact without an embedding is kept, and found by id.
	bare := mustPut(t, s, fact(sc, "bare", "Likes tea."))
	if got, err := s.Get(ctxFor(t), sc, "bare"); err != nil || !equal(got, bare[0]) {
		t.Fatalf("Get of a fact without an embedding = %+v, %v", got, err)
	}
}

func testReplace(t *testing.T, s facts.Store) {
	sc := facts.Scope{Tenant: newTenant(), User: "u"}
	first := mustPut(t, s, fact(sc, "f", "Lives in Paris.", 1, 0, 0, 0), fact(sc, "g", "Has a cat.", 0, 0, 1, 0))[0]
	next := fact(sc, "f", "Lives in Berlin.", 0, 1, 0, 0)
	next.CreatedAt = first.CreatedAt
	mustPut(t, s, next)
	got, err := s.Get(ctxFor(t), sc, "f")
	if err != nil || got.Text != "Lives in Berlin." || !got.CreatedAt.Equal(first.CreatedAt) {
		t.Fatalf("Get after a replace = %+v, %v", got, err)
	}
	all, err := s.List(ctxFor(t), sc)
	if err != nil || len(all) != 2 {
		t.Fatalf("List after a replace = %d facts, %v; want 2", len(all), err)
	}
	hits, err := s.Search(ctxFor(t), sc, []float32{0, 1, 0, 0}, 1)
	if err != nil || len(hits) != 1 || hits[0].Fact.ID != "f" || hits[0].Score < 0.99 {
		t.Fatalf("Search by the new embedding = %+v, %v", hits, err)
	}
	hits, err = s.Search(ctxFor(t), sc, []float32{1, 0, 0, 0}, 2)
	if err != nil || len(hits) != 2 || hits[0].Score > 0.01 {
		t.Fatalf("Search by the old embedding = %+v, %v: the old vector is still there", hits, err)
	}
}

func testList(t *testing.T, s facts.Store) {
	sc := facts.Scope{Tenant: newTenant(), User: "u"}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var in []facts.Fact
	for i, h := range []int{3, 1, 4, 2} {
		f := fact(sc, fmt.Sprint("f", i), fmt.Sprint("fact ", i), 1, float32(i), 0, 0)
		f.CreatedAt, f.UpdatedAt = base, base.Add(time.Duration(h)*time.Hour)
		in = append(in, f)
	}
	mustPut(t, s, in...)
	mustPut(t, s, fact(facts.Scope{Tenant: sc.Tenant, User: "other"}, "x", "other's", 1, 0, 0, 0))
	got, err := s.List(ctxFor(t), sc)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"f2", "f0", "f3", "f1"}; !slices.Equal(ids(got), want) {
		t.Fatalf("List = %q, want most recently updated first: %q", ids(got), want)
	}
	if got, err := s.List(ctxFor(t), facts.Scope{Tenant: sc.Tenant, User: "nobody"}); err != nil || len(got) != 0 {
		t.Fatalf("List of a scope without facts = %v, %v", got, err)
	}
}

func testSearch(t *testing.T, s facts.Store) {
	sc := facts.Scope{Tenant: newTenant(), User: "u"}
	mustPut(t, s,
		fact(sc, "a", "a", 1, 0, 0, 0),
		fact(sc, "b", "b", 1, 1, 0, 0),
		fact(sc, "c", "c", 0, 1, 0, 0),
		fact(sc, "d", "d", 0, 0, 0, 1),
		fact(sc, "e", "no embedding"),
	)
	hits, err := s.Search(ctxFor(t), sc, []float32{2, 0.1, 0, 0}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b", "c"}; !slices.Equal(hitIDs(hits), want) {
		t.Fatalf("Search = %q, want nearest first %q", hitIDs(hits), want)
	}
	for i, h := range hits {
		if h.Score > 1.0001 || h.Score < -1.0001 || (i > 0 && h.Score > hits[i-1].Score) {
			t.Fatalf("scores %v are not cosines, best first", hits)
		}
	}
	if math.Abs(hits[0].Score-2/math.Sqrt(4.01)) > 1e-3 {
		t.Fatalf("score of a = %v, want the cosine %v", hits[0].Score, 2/math.Sqrt(4.01))
	}
	if hits[0].Fact.Text != "a" || len(hits[0].Fact.Embedding) != 4 {
		t.Fatalf("Search returned the fact %+v", hits[0].Fact)
	}
	all, err := s.Search(ctxFor(t), sc, []float32{1, 0, 0, 0}, 50)
	if err != nil || len(all) != 4 {
		t.Fatalf("Search(k 50) = %q, %v; want the four facts with an embedding", hitIDs(all), err)
	}
	if got, err := s.Search(ctxFor(t), facts.Scope{Tenant: sc.Tenant, User: "nobody"}, []float32{1, 0, 0, 0}, 3); err != nil || len(got) != 0 {
		t.Fatalf("Search of a scope without facts = %v, %v", got, err)
	}
}

func testDelete(t *testing.T, s facts.Store) {
	sc := facts.Scope{Tenant: newTenant(), User: "u"}
	other := facts.Scope{Tenant: sc.Tenant, User: "v"}
	mustPut(t, s, fact(sc, "a", "a", 1, 0, 0, 0), fact(sc, "b", "b", 0, 1, 0, 0), fact(other, "a", "other a", 1, 0, 0, 0))
	n, err := s.Delete(ctxFor(t), sc, "a", "absent")
	if err != nil || n != 1 {
		t.Fatalf("Delete = %d, %v; want 1", n, err)
	}
	if _, err := s.Get(ctxFor(t), sc, "a"); !errors.Is(err, facts.ErrNotFound) {
		t.Fatalf("Get after Delete: %v", err)
	}
	if hits, _ := s.Search(ctxFor(t), sc, []float32{1, 0, 0, 0}, 5); !slices.Equal(hitIDs(hits), []string{"b"}) {
		t.Fatalf("Search after Delete = %q, want only b", hitIDs(hits))
	}
	// The same id in another scope is another fact.
	if got, err := s.Get(ctxFor(t), other, "a"); err != nil || got.Text != "other a" {
		t.Fatalf("another scope's fact after Delete = %+v, %v", got, err)
	}
	if n, err := s.Delete(ctxFor(t), facts.Scope{Tenant: sc.Tenant, User: "nobody"}, "b"); err != nil || n != 0 {
		t.Fatalf("Delete from another scope = %d, %v; want 0", n, err)
	}
}

func testForget(t *testing.T, s facts.Store) {
	sc := facts.Scope{Tenant: newTenant(), User: "u"}
	other := facts.Scope{Tenant: sc.Tenant, User: "v"}
	mustPut(t, s, fact(sc, "a", "a", 1, 0, 0, 0), fact(sc, "b", "b"), fact(other, "c", "c", 1, 0, 0, 0))
	n, err := s.Forget(ctxFor(t), sc)
	if err != nil || n != 2 {
		t.Fatalf("Forget = %d, %v; want 2", n, err)
	}
	if got, _ := s.List(ctxFor(t), sc); len(got) != 0 {
		t.Fatalf("List after Forget = %q", ids(got))
	}
	if hits, _ := s.Search(ctxFor(t), sc, []float32{1, 0, 0, 0}, 5); len(hits) != 0 {
		t.Fatalf("Search after Forget = %q", hitIDs(hits))
	}
	if got, _ := s.List(ctxFor(t), other); !slices.Equal(ids(got), []string{"c"}) {
		t.Fatalf("another user's facts after Forget = %q", ids(got))
	}
	if n, err := s.Forget(ctxFor(t), sc); err != nil || n != 0 {
		t.Fatalf("Forget again = %d, %v", n, err)
	}
	// A forgotten scope takes facts again.
	mustPut(t, s, fact(sc, "d", "d", 0, 1, 0, 0))
	if hits, _ := s.Search(ctxFor(t), sc, []float32{0, 1, 0, 0}, 5); !slices.Equal(hitIDs(hits), []string{"d"}) {
		t.Fatalf("Search after Forget and Put = %q, want d", hitIDs(hits))
	}
}

// testIsolation puts the same ids and vectors in scopes that differ by
// tenant or by user: none reads, finds or deletes another's facts.
func testIsolation(t *testing.T, s facts.Store) {
	tenant := newTenant()
	scopes := []facts.Scope{
		{Tenant: tenant, User: "u"},
		{Tenant: tenant + "-b", User: "u"},
		{Tenant: tenant, User: "u2"},
		{Tenant: tenant + ":u", User: ""},
		{Tenant: tenant, User: "u:"},
	}
	for i, sc := range scopes {
		mustPut(t, s, fact(sc, "same", fmt.Sprint("fact of ", i), 1, 0, 0, 0))
	}
	for i, sc := range scopes {
		got, err := s.Get(ctxFor(t), sc, "same")
		if err != nil || got.Text != fmt.Sprint("fact of ", i) || got.Scope != sc {
			t.Fatalf("Get in scope %d = %+v, %v", i, got, err)
		}
		hits, err := s.Search(ctxFor(t), sc, []float32{1, 0, 0, 0}, 10)
		if err != nil || len(hits) != 1 || hits[0].Fact.Text != fmt.Sprint("fact of ", i) {
			t.Fatalf("Search in scope %d = %+v, %v", i, hits, err)
		}
		list, err := s.List(ctxFor(t), sc)
		if err != nil || len(list) != 1 {
			t.Fatalf("List in scope %d = %d facts, %v", i, len(list), err)
		}
	}
	if _, err := s.Forget(ctxFor(t), scopes[0]); err != nil {
		t.Fatal(err)
	}
	for i, sc := range scopes[1:] {
		if _, err := s.Get(ctxFor(t), sc, "same"); err != nil {
			t.Fatalf("scope %d lost its fact when another was forgotten: %v", i+1, err)
		}
	}
}

func testConcurrent(t *testing.T, s facts.Store) {
	sc := facts.Scope{Tenant: newTenant(), User: "u"}
	const writers, each = 4, 10
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				id := fmt.Sprintf("w%d-%d", w, i)
				if _, err := s.Put(ctxFor(t), fact(sc, id, id, 1, float32(w), float32(i), 1)); err != nil {
					t.Errorf("Put: %v", err)
					return
				}
				if _, err := s.Search(ctxFor(t), sc, []float32{1, 0, 0, 0}, 3); err != nil {
					t.Errorf("Search: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	got, err := s.List(ctxFor(t), sc)
	if err != nil || len(got) != writers*each {
		t.Fatalf("List after concurrent puts = %d facts, %v; want %d", len(got), err, writers*each)
	}
}
