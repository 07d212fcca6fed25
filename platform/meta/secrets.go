package meta

import (
	"context"
	"time"
)

// Secret is a tenant secret as stored: its value sealed (encrypted and
// authenticated) by package platform/secrets, never in clear.
type Secret struct {
	TenantID  string
	Name      string
	Sealed    []byte
	CreatedAt time.Time
	UpdatedAt time.Time
}

// PutSecret creates or replaces a secret in one statement (so concurrent
// puts of one name cannot conflict); created says which. A replaced secret
// keeps its CreatedAt.
func (s *SQL) PutSecret(ctx context.Context, sec Secret) (created bool, err error) {
	var createdAt int64
	err = s.queryRow(ctx, `INSERT INTO secrets (tenant_id, name, sealed, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (tenant_id, name) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at
		RETURNING created_at`,
		sec.TenantID, sec.Name, sec.Sealed, micros(sec.CreatedAt), micros(sec.UpdatedAt)).Scan(&createdAt)
	return err == nil && createdAt == micros(sec.CreatedAt), wrap("put secret "+sec.Name, err)
}

// Secret returns a secret of tenant.
func (s *SQL) Secret(ctx context.Context, tenant, name string) (Secret, error) {
	sec := Secret{TenantID: tenant}
	var created, updated int64
	err := s.queryRow(ctx, `SELECT name, sealed, created_at, updated_at FROM secrets WHERE tenant_id = ? AND name = ?`, tenant, name).
		Scan(&sec.Name, &sec.Sealed, &created, &updated)
	sec.CreatedAt, sec.UpdatedAt = fromMicros(created), fromMicros(updated)
	return sec, wrap("secret "+name, err)
}

// ListSecrets returns the tenant's secrets by name, without their sealed
// values.
func (s *SQL) ListSecrets(ctx context.Context, tenant string) ([]Secret, error) {
	rows, err := s.query(ctx, `SELECT name, created_at, updated_at FROM secrets WHERE tenant_id = ? ORDER BY name`, tenant)
	if err != nil {
		return nil, wrap("list secrets", err)
	}
	defer rows.Close()
	out := []Secret{}
	for rows.Next() {
		sec := Secret{TenantID: tenant}
		var created, updated int64
		if err := rows.Scan(&sec.Name, &created, &updated); err != nil {
			return nil, wrap("list secrets", err)
		}
		sec.CreatedAt, sec.UpdatedAt = fromMicros(created), fromMicros(updated)
		out = append(out, sec)
	}
	return out, wrap("list secrets", rows.Err())
}

// DeleteSecret removes a secret of tenant.
func (s *SQL) DeleteSecret(ctx context.Context, tenant, name string) error {
	return s.deleteOne(ctx, "delete secret "+name, `DELETE FROM secrets WHERE tenant_id = ? AND name = ?`, tenant, name)
}
