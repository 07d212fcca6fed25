package meta

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// UpdateTool and UpdateKB change a record in place: same id, new name and
// settings; a name taken by another record is ErrConflict, another
// tenant's id ErrNotFound.
func TestUpdateToolAndKB(t *testing.T) {
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			s := st.(*SQL)
			ctx := context.Background()
			now := time.Now().UTC().Truncate(time.Microsecond)
			for _, tl := range []Tool{
				{ID: "tool_a", TenantID: "t1", Name: "a", Kind: "http", Config: json.RawMessage(`{"name":"a"}`), CreatedAt: now},
				{ID: "tool_b", TenantID: "t1", Name: "b", Kind: "http", Config: json.RawMessage(`{"name":"b"}`), CreatedAt: now},
			} {
				if err := s.CreateTool(ctx, tl); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.UpdateTool(ctx, Tool{ID: "tool_a", TenantID: "t1", Name: "a2", Kind: "http", Config: json.RawMessage(`{"name":"a2"}`)}); err != nil {
				t.Fatal(err)
			}
			got, err := s.Tool(ctx, "t1", "tool_a")
			if err != nil || got.Name != "a2" || string(got.Config) != `{"name":"a2"}` || got.Kind != "http" || !got.CreatedAt.Equal(now) {
				t.Fatalf("after update: %+v, %v", got, err)
			}
			if err := s.UpdateTool(ctx, Tool{ID: "tool_a", TenantID: "t1", Name: "b", Config: json.RawMessage(`{}`)}); !errors.Is(err, ErrConflict) {
				t.Fatalf("rename onto b: %v; want ErrConflict", err)
			}
			if err := s.UpdateTool(ctx, Tool{ID: "tool_a", TenantID: "t2", Name: "x", Config: json.RawMessage(`{}`)}); !errors.Is(err, ErrNotFound) {
				t.Fatalf("other tenant: %v; want ErrNotFound", err)
			}

			for _, kb := range []KnowledgeBase{
				{ID: "kb_a", TenantID: "t1", Name: "a", ChunkSize: 256, ChunkOverlap: 32, CreatedAt: now},
				{ID: "kb_b", TenantID: "t1", Name: "b", ChunkSize: 256, ChunkOverlap: 32, CreatedAt: now},
			} {
				if err := s.CreateKB(ctx, kb); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.UpdateKB(ctx, KnowledgeBase{ID: "kb_a", TenantID: "t1", Name: "a2", ChunkSize: 256, ChunkOverlap: 32, CreatedAt: now}); err != nil {
				t.Fatal(err)
			}
			kb, err := s.KB(ctx, "t1", "kb_a")
			if err != nil || kb.Name != "a2" || kb.ChunkSize != 256 || !kb.CreatedAt.Equal(now) {
				t.Fatalf("after update: %+v, %v", kb, err)
			}
			if err := s.UpdateKB(ctx, KnowledgeBase{ID: "kb_a", TenantID: "t1", Name: "b"}); !errors.Is(err, ErrConflict) {
				t.Fatalf("rename onto b: %v; want ErrConflict", err)
			}
			if err := s.UpdateKB(ctx, KnowledgeBase{ID: "kb_a", TenantID: "t2", Name: "x"}); !errors.Is(err, ErrNotFound) {
				t.Fatalf("other tenant: %v; want ErrNotFound", err)
			}
		})
	}
}
