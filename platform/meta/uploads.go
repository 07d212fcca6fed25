package meta

import (
	"context"
	"database/sql"
	"time"
)

// Uploads: the bytes of a document waiting to be ingested live in the
// metadata database from the moment the upload is accepted until the
// document is ready or failed, so that ingestion survives a crash and any
// replica can take it over. An upload carries a claim (owner and expiry): a
// worker claims it before ingesting and renews the claim while it works;
// another replica takes it over only once the claim has expired.
//
// Each upload has an ID of its own, so that a document uploaded again
// while its previous upload is still being ingested supersedes it: the
// older worker's Finish then changes nothing.

// Upload is a stored upload awaiting ingestion.
type Upload struct {
	// Document is the document record the upload belongs to.
	Document Document
	// ID identifies this upload of the document.
	ID string
}

// PutUpload stores a document record (status queued) and its upload in one
// transaction, replacing an earlier upload of the document.
func (s *SQL) PutUpload(ctx context.Context, d Document, uploadID string, data []byte) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if err := putDocument(ctx, tx, s.d, d); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.d.rebind(`INSERT INTO document_uploads (tenant_id, kb_id, id, upload_id, data, claimed_by, claimed_until, created_at)
			VALUES (?, ?, ?, ?, ?, '', 0, ?)
			ON CONFLICT (tenant_id, kb_id, id) DO UPDATE SET upload_id = excluded.upload_id, data = excluded.data,
			claimed_by = '', claimed_until = 0, created_at = excluded.created_at`),
			d.TenantID, d.KBID, d.ID, uploadID, data, micros(d.UpdatedAt))
		return err
	})
	return wrap("put upload "+d.ID, err)
}

// ClaimUpload claims upload uploadID of a document for owner until the
// given time, when nobody else holds an unexpired claim on it, marks the
// document indexing and returns the upload's bytes. It reports false (and no error) when the upload is claimed by
// another owner, superseded or gone.
func (s *SQL) ClaimUpload(ctx context.Context, tenant, kb, id, uploadID, owner string, now, until time.Time) ([]byte, bool, error) {
	var data []byte
	claimed := false
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.d.rebind(`UPDATE document_uploads SET claimed_by = ?, claimed_until = ?
			WHERE tenant_id = ? AND kb_id = ? AND id = ? AND upload_id = ? AND (claimed_by = '' OR claimed_by = ? OR claimed_until < ?)`),
			owner, micros(until), tenant, kb, id, uploadID, owner, micros(now))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.d.rebind(`UPDATE documents SET status = ?, error = '', updated_at = ? WHERE tenant_id = ? AND kb_id = ? AND id = ?`),
			DocIndexing, micros(now), tenant, kb, id); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, s.d.rebind(`SELECT data FROM document_uploads WHERE tenant_id = ? AND kb_id = ? AND id = ?`), tenant, kb, id).Scan(&data); err != nil {
			return err
		}
		claimed = true
		return nil
	})
	if err != nil {
		return nil, false, wrap("claim upload "+id, err)
	}
	return data, claimed, nil
}

// RenewUpload extends owner's claim on an upload; it reports false when
// the claim was lost (taken over, superseded or the upload is gone).
func (s *SQL) RenewUpload(ctx context.Context, tenant, kb, id, uploadID, owner string, until time.Time) (bool, error) {
	res, err := s.exec(ctx, `UPDATE document_uploads SET claimed_until = ? WHERE tenant_id = ? AND kb_id = ? AND id = ? AND upload_id = ? AND claimed_by = ?`,
		micros(until), tenant, kb, id, uploadID, owner)
	if err != nil {
		return false, wrap("renew upload "+id, err)
	}
	n, err := res.RowsAffected()
	return n == 1, wrap("renew upload "+id, err)
}

// ReleaseUpload gives up owner's claim on an upload, so that the next
// worker (of any replica) may take it at once.
func (s *SQL) ReleaseUpload(ctx context.Context, tenant, kb, id, uploadID, owner string) error {
	_, err := s.exec(ctx, `UPDATE document_uploads SET claimed_by = '', claimed_until = 0 WHERE tenant_id = ? AND kb_id = ? AND id = ? AND upload_id = ? AND claimed_by = ?`,
		tenant, kb, id, uploadID, owner)
	return wrap("release upload "+id, err)
}

// FinishUpload stores the document's final record (ready or failed) and
// deletes upload uploadID, in one transaction. When that upload is no
// longer stored (a newer upload superseded it, or the document was
// deleted), nothing changes and it reports false.
func (s *SQL) FinishUpload(ctx context.Context, d Document, uploadID string) (bool, error) {
	done := false
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.d.rebind(`DELETE FROM document_uploads WHERE tenant_id = ? AND kb_id = ? AND id = ? AND upload_id = ?`),
			d.TenantID, d.KBID, d.ID, uploadID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return err
		}
		done = true
		return putDocument(ctx, tx, s.d, d)
	})
	return done, wrap("finish upload "+d.ID, err)
}

// PendingUploads lists, oldest first and at most limit, the uploads that
// no worker holds an unexpired claim on at now: those left by a crash,
// those whose worker stopped, and those still waiting in a queue.
func (s *SQL) PendingUploads(ctx context.Context, now time.Time, limit int) ([]Upload, error) {
	cut := micros(now)
	rows, err := s.query(ctx, `SELECT u.tenant_id, u.upload_id, d.id, d.kb_id, d.name, d.status, d.error, d.chunks, d.bytes, d.content_hash, d.source_url, d.format, d.created_at, d.updated_at
		FROM document_uploads u JOIN documents d ON d.tenant_id = u.tenant_id AND d.kb_id = u.kb_id AND d.id = u.id
		WHERE u.claimed_by = '' OR u.claimed_until < ?
		ORDER BY u.created_at, u.id LIMIT ?`, cut, limit)
	if err != nil {
		return nil, wrap("pending uploads", err)
	}
	defer rows.Close()
	var out []Upload
	for rows.Next() {
		var u Upload
		var created, updated int64
		d := &u.Document
		if err := rows.Scan(&d.TenantID, &u.ID, &d.ID, &d.KBID, &d.Name, &d.Status, &d.Error, &d.Chunks, &d.Bytes, &d.ContentHash, &d.SourceURL, &d.Format, &created, &updated); err != nil {
			return nil, wrap("pending uploads", err)
		}
		d.CreatedAt, d.UpdatedAt = fromMicros(created), fromMicros(updated)
		out = append(out, u)
	}
	return out, wrap("pending uploads", rows.Err())
}

// FailOrphanDocuments marks failed, with reason as their error, the
// documents left queued or indexing without a stored upload (accepted by a
// version that kept uploads in memory only, or whose upload was lost), and
// returns how many there were.
func (s *SQL) FailOrphanDocuments(ctx context.Context, reason string, now time.Time) (int, error) {
	res, err := s.exec(ctx, `UPDATE documents SET status = ?, error = ?, updated_at = ?
		WHERE status IN (?, ?) AND NOT EXISTS (SELECT 1 FROM document_uploads u
			WHERE u.tenant_id = documents.tenant_id AND u.kb_id = documents.kb_id AND u.id = documents.id)`,
		DocFailed, reason, micros(now), DocQueued, DocIndexing)
	if err != nil {
		return 0, wrap("fail orphan documents", err)
	}
	n, err := res.RowsAffected()
	return int(n), wrap("fail orphan documents", err)
}

// ResetClaims drops every claim on uploads. A server on an embedded store
// calls it at start: no other process uses the store, so every claim there
// is a dead process's.
func (s *SQL) ResetClaims(ctx context.Context) error {
	_, err := s.exec(ctx, `UPDATE document_uploads SET claimed_by = '', claimed_until = 0 WHERE claimed_by <> ''`)
	return wrap("reset upload claims", err)
}

// Embedded reports whether the store is an embedded database (SQLite),
// used by one process only.
func (s *SQL) Embedded() bool { return s.d.name == "sqlite" }
