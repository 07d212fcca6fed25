package meta

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSecrets(t *testing.T) {
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			s := st.(*SQL)
			ctx := context.Background()
			t0 := time.Now().UTC().Truncate(time.Microsecond)
			created, err := s.PutSecret(ctx, Secret{TenantID: "a", Name: "tok", Sealed: []byte{1, 2}, CreatedAt: t0, UpdatedAt: t0})
			if err != nil || !created {
				t.Fatalf("first put = %v, %v", created, err)
			}
			t1 := t0.Add(time.Second)
			created, err = s.PutSecret(ctx, Secret{TenantID: "a", Name: "tok", Sealed: []byte{3}, CreatedAt: t1, UpdatedAt: t1})
			if err != nil || created {
				t.Fatalf("replace = %v, %v", created, err)
			}
			got, err := s.Secret(ctx, "a", "tok")
			if err != nil || string(got.Sealed) != "\x03" || !got.CreatedAt.Equal(t0) || !got.UpdatedAt.Equal(t1) {
				t.Fatalf("Secret = %+v, %v", got, err)
			}
			// Another tenant sees nothing of it.
			if _, err := s.Secret(ctx, "b", "tok"); !errors.Is(err, ErrNotFound) {
				t.Errorf("other tenant's read: %v", err)
			}
			if err := s.DeleteSecret(ctx, "b", "tok"); !errors.Is(err, ErrNotFound) {
				t.Errorf("other tenant's delete: %v", err)
			}
			if _, err := s.PutSecret(ctx, Secret{TenantID: "b", Name: "tok", Sealed: []byte{9}, CreatedAt: t0, UpdatedAt: t0}); err != nil {
				t.Fatal(err)
			}
			list, err := s.ListSecrets(ctx, "a")
			if err != nil || len(list) != 1 || list[0].Name != "tok" || list[0].Sealed != nil {
				t.Fatalf("ListSecrets = %+v, %v", list, err)
			}
			if err := s.DeleteSecret(ctx, "a", "tok"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Secret(ctx, "a", "tok"); !errors.Is(err, ErrNotFound) {
				t.Errorf("read after delete: %v", err)
			}
			if got, _ := s.Secret(ctx, "b", "tok"); string(got.Sealed) != "\x09" {
				t.Errorf("the other tenant's secret changed: %+v", got)
			}
		})
	}
}
