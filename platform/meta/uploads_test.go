package meta

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestUploads: an upload is stored with its document, claimed by one owner
// at a time, taken over once the claim expires, superseded by a newer
// upload, and removed when finished; documents left pending without an
// upload are failed.
func TestUploads(t *testing.T) {
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			s := st.(*SQL)
			ctx := context.Background()
			t0 := time.Now().UTC().Truncate(time.Microsecond)
			d := Document{ID: "doc1", TenantID: "t1", KBID: "kb1", Name: "a.txt", Status: DocQueued, Bytes: 5, CreatedAt: t0, UpdatedAt: t0}
			if err := s.PutUpload(ctx, d, "u1", []byte("hello")); err != nil {
				t.Fatal(err)
			}
			if got, err := s.Document(ctx, "t1", "kb1", "doc1"); err != nil || got.Status != DocQueued {
				t.Fatalf("document = %+v, %v", got, err)
			}
			if s.Embedded() != (name == "sqlite") {
				t.Fatalf("Embedded() = %v", s.Embedded())
			}
			pending, err := s.PendingUploads(ctx, t0, 10)
			if err != nil || len(pending) != 1 || pending[0].ID != "u1" || pending[0].Document.Name != "a.txt" || pending[0].Document.TenantID != "t1" {
				t.Fatalf("pending = %+v, %v", pending, err)
			}

			// Two owners race for the claim: exactly one wins.
			var wg sync.WaitGroup
			wins := make(chan string, 2)
			for _, owner := range []string{"A", "B"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					data, ok, err := s.ClaimUpload(ctx, "t1", "kb1", "doc1", "u1", owner, t0, t0.Add(time.Minute))
					if err != nil {
						t.Error(err)
					}
					if ok {
						if string(data) != "hello" {
							t.Errorf("claimed data %q", data)
						}
						wins <- owner
					}
				}()
			}
			wg.Wait()
			close(wins)
			var winners []string
			for w := range wins {
				winners = append(winners, w)
			}
			if len(winners) != 1 {
				t.Fatalf("winners %v, want one", winners)
			}
			owner, other := winners[0], "A"
			if owner == "A" {
				other = "B"
			}
			if p, _ := s.PendingUploads(ctx, t0.Add(30*time.Second), 10); len(p) != 0 {
				t.Fatalf("a claimed upload is pending: %+v", p)
			}
			if got, _ := s.Document(ctx, "t1", "kb1", "doc1"); got.Status != DocIndexing {
				t.Fatalf("status after the claim: %s", got.Status)
			}
			if ok, err := s.RenewUpload(ctx, "t1", "kb1", "doc1", "u1", owner, t0.Add(2*time.Minute)); !ok || err != nil {
				t.Fatalf("renew = %v, %v", ok, err)
			}
			// After the claim expires, the other owner takes over and the first loses it.
			if _, ok, _ := s.ClaimUpload(ctx, "t1", "kb1", "doc1", "u1", other, t0.Add(time.Minute), t0.Add(3*time.Minute)); ok {
				t.Fatal("claimed before the claim expired")
			}
			if _, ok, _ := s.ClaimUpload(ctx, "t1", "kb1", "doc1", "u1", other, t0.Add(3*time.Minute), t0.Add(4*time.Minute)); !ok {
				t.Fatal("expired claim not taken over")
			}
			if ok, _ := s.RenewUpload(ctx, "t1", "kb1", "doc1", "u1", owner, t0.Add(5*time.Minute)); ok {
				t.Fatal("the first owner renewed a claim taken over")
			}

			// A new upload supersedes: the old one's finish changes nothing.
			d2 := d
			d2.Bytes = 6
			if err := s.PutUpload(ctx, d2, "u2", []byte("hello2")); err != nil {
				t.Fatal(err)
			}
			old := d
			old.Status = DocReady
			if ok, err := s.FinishUpload(ctx, old, "u1"); ok || err != nil {
				t.Fatalf("finish superseded = %v, %v", ok, err)
			}
			if got, _ := s.Document(ctx, "t1", "kb1", "doc1"); got.Status != DocQueued {
				t.Fatalf("status after a superseded finish: %s", got.Status)
			}
			data, ok, err := s.ClaimUpload(ctx, "t1", "kb1", "doc1", "u2", owner, t0, t0.Add(time.Minute))
			if !ok || err != nil || string(data) != "hello2" {
				t.Fatalf("claim new upload = %q, %v, %v", data, ok, err)
			}
			if p, _ := s.PendingUploads(ctx, t0, 10); len(p) != 0 {
				t.Fatalf("claimed upload pending: %+v", p)
			}
			if err := s.ResetClaims(ctx); err != nil {
				t.Fatal(err)
			}
			if p, _ := s.PendingUploads(ctx, t0, 10); len(p) != 1 {
				t.Fatalf("upload not pending after ResetClaims: %+v", p)
			}
			if _, ok, _ := s.ClaimUpload(ctx, "t1", "kb1", "doc1", "u2", owner, t0, t0.Add(time.Minute)); !ok {
				t.Fatal("claim after reset failed")
			}
			if err := s.ReleaseUpload(ctx, "t1", "kb1", "doc1", "u2", owner); err != nil {
				t.Fatal(err)
			}
			if p, _ := s.PendingUploads(ctx, t0, 10); len(p) != 1 {
				t.Fatalf("released upload not pending: %+v", p)
			}
			d2.Status, d2.Chunks = DocReady, 1
			if ok, err := s.FinishUpload(ctx, d2, "u2"); !ok || err != nil {
				t.Fatalf("finish = %v, %v", ok, err)
			}
			if got, _ := s.Document(ctx, "t1", "kb1", "doc1"); got.Status != DocReady || got.Chunks != 1 {
				t.Fatalf("document after finish: %+v", got)
			}
			if p, _ := s.PendingUploads(ctx, t0.Add(time.Hour), 10); len(p) != 0 {
				t.Fatalf("finished upload pending: %+v", p)
			}

			// Documents pending without an upload fail; those with one do not.
			lost := Document{ID: "doc2", TenantID: "t1", KBID: "kb1", Name: "b.txt", Status: DocIndexing, CreatedAt: t0, UpdatedAt: t0}
			if err := s.PutDocument(ctx, lost); err != nil {
				t.Fatal(err)
			}
			kept := Document{ID: "doc3", TenantID: "t1", KBID: "kb1", Name: "c.txt", Status: DocIndexing, CreatedAt: t0, UpdatedAt: t0}
			if err := s.PutUpload(ctx, kept, "u3", []byte("x")); err != nil {
				t.Fatal(err)
			}
			if n, err := s.FailOrphanDocuments(ctx, "lost", t0); n != 1 || err != nil {
				t.Fatalf("failed %d, %v", n, err)
			}
			if got, _ := s.Document(ctx, "t1", "kb1", "doc2"); got.Status != DocFailed || got.Error != "lost" {
				t.Fatalf("orphan: %+v", got)
			}
			if got, _ := s.Document(ctx, "t1", "kb1", "doc3"); got.Status != DocIndexing {
				t.Fatalf("document with an upload: %+v", got)
			}
			// Deleting the document deletes its upload.
			if err := s.DeleteDocumentRecord(ctx, "t1", "kb1", "doc3"); err != nil {
				t.Fatal(err)
			}
			if p, _ := s.PendingUploads(ctx, t0.Add(time.Hour), 10); len(p) != 0 {
				t.Fatalf("deleted document's upload pending: %+v", p)
			}
		})
	}
}
