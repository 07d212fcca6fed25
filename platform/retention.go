package platform

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/weftlabs/weft/platform/meta"
)

// Retention per tenant (GET and PUT /v1/retention): how long a tenant's
// sessions (from their last update) and turn traces are kept. A sweep
// every minute deletes what a tenant's retention let go; the server-wide
// trace retention (WEFT_TRACE_RETENTION) still bounds every tenant's
// traces.

const (
	// maxRetentionDays bounds a tenant's retention (ten years).
	maxRetentionDays = 3650
	// retentionSweep is how often the sweep runs.
	retentionSweep = time.Minute
	// sweepBatch bounds the sessions one sweep deletes per tenant; the
	// next sweep goes on.
	sweepBatch = 500
)

// retentionStore is what per-tenant retention needs of the metadata store.
type retentionStore interface {
	SetRetention(ctx context.Context, r meta.Retention) error
	Retentions(ctx context.Context, tenant string) ([]meta.Retention, error)
	ExpiredSessions(ctx context.Context, tenant string, before time.Time, limit int) ([]meta.Session, error)
	DeleteSessions(ctx context.Context, tenant string, ids []string) (int, error)
	PruneTenantTraces(ctx context.Context, tenant string, before time.Time) (int64, error)
}

// retention runs the sweep; nil when the metadata store keeps no
// retention.
type retention struct {
	store retentionStore
	stop  chan struct{}
	once  sync.Once
	done  sync.WaitGroup
}

func (s *Server) startRetention() {
	rs, ok := s.meta.(retentionStore)
	if !ok {
		return
	}
	s.retention = &retention{store: rs, stop: make(chan struct{})}
	s.handle("GET /v1/retention", need(viewer), s.getRetention)
	s.handle("PUT /v1/retention", need(admin), s.putRetention)
	s.retention.done.Add(1)
	go func() {
		defer s.retention.done.Done()
		t := time.NewTicker(retentionSweep)
		defer t.Stop()
		for {
			select {
			case <-s.retention.stop:
				return
			case now := <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), retentionSweep)
				if err := s.sweepRetention(ctx, now); err != nil {
					s.log.Warn("retention sweep failed", "err", err)
				}
				cancel()
			}
		}
	}()
}

func (r *retention) close() {
	if r != nil {
		r.once.Do(func() { close(r.stop) })
		r.done.Wait()
	}
}

// sweepRetention deletes, for every tenant with a retention, the sessions
// not updated within it (messages and summaries in the session store
// first, then their registry, traces and A2A tasks) and the traces older
// than its trace retention.
func (s *Server) sweepRetention(ctx context.Context, now time.Time) error {
	list, err := s.retention.store.Retentions(ctx, "")
	if err != nil {
		return err
	}
	for _, r := range list {
		if r.TracesDays > 0 {
			if _, err := s.retention.store.PruneTenantTraces(ctx, r.TenantID, now.Add(-time.Duration(r.TracesDays)*24*time.Hour)); err != nil {
				return err
			}
		}
		if r.SessionsDays <= 0 {
			continue
		}
		s.touches.flush(ctx)
		expired, err := s.retention.store.ExpiredSessions(ctx, r.TenantID, now.Add(-time.Duration(r.SessionsDays)*24*time.Hour), sweepBatch)
		if err != nil {
			return err
		}
		ids := make([]string, 0, len(expired))
		for _, ss := range expired {
			if err := s.sessions.Delete(ctx, sessionKey(ss)); err != nil {
				return err
			}
			ids = append(ids, ss.ID)
		}
		if len(ids) == 0 {
			continue
		}
		n, err := s.retention.store.DeleteSessions(ctx, r.TenantID, ids)
		if err != nil {
			return err
		}
		for _, id := range ids {
			s.bus.publish(ctx, "session", r.TenantID, id)
		}
		s.log.Info("expired sessions deleted", "tenant", r.TenantID, "count", n, "retention_days", r.SessionsDays)
	}
	return nil
}

// getRetention: GET /v1/retention — the caller tenant's retention.
func (s *Server) getRetention(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	list, err := s.retention.store.Retentions(r.Context(), p.Tenant)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	out := meta.Retention{}
	if len(list) > 0 {
		out = list[0]
	}
	writeJSON(w, http.StatusOK, out)
}

// putRetention: PUT /v1/retention {sessions_days, traces_days} — sets the
// caller tenant's retention (0: the server's).
func (s *Server) putRetention(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	var in meta.Retention
	if e := decodeJSON(w, r, &in); e != nil {
		writeError(w, e)
		return
	}
	switch {
	case in.SessionsDays < 0 || in.SessionsDays > maxRetentionDays:
		writeError(w, invalid("field \"sessions_days\": want 0 (kept until deleted) to %d", maxRetentionDays))
		return
	case in.TracesDays < 0 || in.TracesDays > maxRetentionDays:
		writeError(w, invalid("field \"traces_days\": want 0 (the server's retention) to %d", maxRetentionDays))
		return
	}
	if s.traces != nil && in.TracesDays > 0 && time.Duration(in.TracesDays)*24*time.Hour > s.traces.retention {
		writeError(w, invalid("field \"traces_days\": this server keeps traces at most %v", s.traces.retention))
		return
	}
	in.TenantID, in.UpdatedAt = p.Tenant, time.Now().UTC()
	if err := s.retention.store.SetRetention(r.Context(), in); err != nil {
		writeError(w, asAPIError(err))
		return
	}
	writeJSON(w, http.StatusOK, in)
}
