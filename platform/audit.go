package platform

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/weftlabs/weft/platform/meta"
)

// The audit log records every change made through the API: each route that
// is not a GET and not a use of the platform (access.use: turns, searches)
// leaves, when it succeeds, a record of who (the key's id, name and role),
// when, what (route, path, the object's collection, id and name) and the
// object before and after as the API shows it — before from the route's
// GET on the same path (PUT, PATCH, DELETE), after from the answer (a
// DELETE's is null). Secret values never get there: the API shows none
// (secrets are listed by name, a key's secret only in POST /v1/api-keys'
// answer), and redactAudit removes what looks like one anyway. A change to
// an end user's data (/v1/users/{user}/…) keeps no id of theirs, only its
// hash (meta.UserHash, as forgetting them does), and no content.

// auditStore keeps the audit log (meta.SQL).
type auditStore interface {
	AddAudit(ctx context.Context, r meta.AuditRecord) error
	Audit(ctx context.Context, q meta.AuditQuery) ([]meta.AuditRecord, error)
}

// auditBodyLimit bounds the answer kept as a record's after: a longer one
// is recorded as {"truncated": true}.
const auditBodyLimit = 256 << 10

// audited reports whether a request to a route of access a is recorded.
func (a access) audited(method string) bool {
	return !a.use && method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions
}

// captureWriter keeps the first auditBodyLimit bytes of an answer and its
// status, passing everything through (Flush and Unwrap too, for streams).
type captureWriter struct {
	http.ResponseWriter
	status    int
	body      bytes.Buffer
	truncated bool
}

func (w *captureWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *captureWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if room := auditBodyLimit - w.body.Len(); room >= len(b) {
		w.body.Write(b)
	} else {
		w.truncated = true
	}
	return w.ResponseWriter.Write(b)
}

func (w *captureWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *captureWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

var wildcard = regexp.MustCompile(`\{([a-zA-Z_]+)(\.\.\.)?\}`)

// serveAudited runs h and records the change it made, if it succeeded.
func (s *Server) serveAudited(w http.ResponseWriter, r *http.Request, pattern string, p principal, h http.HandlerFunc) {
	_, path, _ := strings.Cut(pattern, " ")
	var before json.RawMessage
	if r.Method == http.MethodPut || r.Method == http.MethodPatch || r.Method == http.MethodDelete {
		before = s.snapshot(r, path)
	}
	cw := &captureWriter{ResponseWriter: w}
	h(cw, r)
	status := cw.status
	if status == 0 {
		status = http.StatusOK
	}
	if status >= 300 {
		return // nothing changed
	}
	var after json.RawMessage
	switch {
	case r.Method == http.MethodDelete:
	case cw.truncated:
		after = json.RawMessage(`{"truncated":true}`)
	case json.Valid(cw.body.Bytes()) && cw.body.Len() > 0:
		after = bytes.Clone(cw.body.Bytes())
	case strings.HasPrefix(cw.Header().Get("Content-Type"), "text/event-stream"):
		after = json.RawMessage(`{"stream":true}`)
	default:
		after = s.snapshot(r, path)
	}
	before, after = redactAudit(before), redactAudit(after)
	rec := meta.AuditRecord{
		ID: meta.NewID("aud"), TenantID: p.Tenant, At: time.Now().UTC(),
		ActorID: p.Key.ID, ActorName: p.Key.Name, ActorRole: p.Key.Role,
		Method: r.Method, Route: pattern, Path: r.URL.Path, Status: status,
		Before: before, After: after, RequestID: requestID(r.Context()),
	}
	rec.ResourceType, rec.ResourceID = auditResource(r, path)
	if u := r.PathValue("user"); u != "" && strings.Contains(path, "{user}") {
		// An end user's data (memories, forgetting them): the record keeps
		// no id of theirs, only its hash (as forgetting does), and none of
		// the content.
		h := meta.UserHash(p.Tenant, u)
		rec.Path = strings.Replace(rec.Path, "/users/"+u, "/users/"+h, 1)
		if rec.ResourceID == u {
			rec.ResourceID = h
		}
		rec.Before, rec.After = nil, nil
		before, after = nil, nil
	}
	for _, obj := range []json.RawMessage{after, before} {
		var o struct {
			ID   any    `json:"id"`
			Name string `json:"name"`
		}
		if json.Unmarshal(obj, &o) != nil {
			continue
		}
		if id, ok := o.ID.(string); ok && rec.ResourceID == "" {
			rec.ResourceID = id
		}
		if rec.ResourceName == "" {
			rec.ResourceName = o.Name
		}
	}
	if rec.ResourceID == "" {
		rec.ResourceID = rec.ResourceName
	}
	// The change is made: record it even if the client has gone.
	if err := s.audit.AddAudit(context.WithoutCancel(r.Context()), rec); err != nil {
		s.log.ErrorContext(r.Context(), "audit record not stored", "request_id", rec.RequestID, "route", pattern, "err", err)
	}
}

// auditResource names the object a request changes: the collection (the
// path's first segment after /v1/, the nested one after it when there is
// one: "knowledge-bases/documents") and the last id in the path.
func auditResource(r *http.Request, path string) (typ, id string) {
	var parts []string
	for _, seg := range strings.Split(strings.TrimPrefix(path, "/v1/"), "/") {
		if m := wildcard.FindStringSubmatch(seg); m != nil {
			id = r.PathValue(m[1])
			continue
		}
		if len(parts) < 2 && seg != "" {
			parts = append(parts, seg)
		}
	}
	return strings.Join(parts, "/"), id
}

// snapshot answers the route's GET on path as the caller, as JSON, or
// nil when there is no such route or it fails.
func (s *Server) snapshot(r *http.Request, path string) json.RawMessage {
	get := s.getters[path]
	if get == nil {
		return nil
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, r.URL.Path, nil)
	if err != nil {
		return nil
	}
	for _, m := range wildcard.FindAllStringSubmatch(path, -1) {
		req.SetPathValue(m[1], r.PathValue(m[1]))
	}
	rec := &recorder{header: http.Header{}}
	get(rec, req)
	if rec.status != 0 && rec.status != http.StatusOK || !json.Valid(rec.body.Bytes()) {
		return nil
	}
	return rec.body.Bytes()
}

// secretFields are the fields whose value an audit record never keeps
// (the clear key of POST /v1/api-keys, a secret's value, credentials).
var secretFields = map[string]bool{
	"key": true, "value": true, "api_key": true, "apikey": true, "password": true, "secret": true,
	"token": true, "access_token": true, "refresh_token": true, "client_secret": true,
	"authorization": true, "dsn": true, "private_key": true,
}

// refOnly matches a value that is only a reference (${secret:NAME},
// ${VAR}), which is kept: it names the secret, it is not one.
var refOnly = regexp.MustCompile(`^\$\{[^}]+\}$`)

// redactAudit removes secret values from a JSON object: the fields of
// secretFields, every value of "headers" and "env" objects that is not a
// reference, and the server's own secrets wherever they appear.
func redactAudit(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil
	}
	out, err := json.Marshal(redactValue(v, false))
	if err != nil {
		return nil
	}
	return out
}

const redactedValue = "[redacted]"

func redactValue(v any, credentials bool) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			lk := strings.ToLower(k)
			switch {
			case secretFields[lk] || strings.Contains(lk, "secret") || strings.Contains(lk, "password") || strings.HasSuffix(lk, "_token"):
				if s, ok := x.(string); ok && refOnly.MatchString(s) {
					continue
				}
				if x != nil && x != "" {
					t[k] = redactedValue
				}
			case lk == "headers" || lk == "env":
				t[k] = redactValue(x, true)
			default:
				t[k] = redactValue(x, credentials)
			}
		}
		return t
	case []any:
		for i := range t {
			t[i] = redactValue(t[i], credentials)
		}
		return t
	case string:
		if credentials && !refOnly.MatchString(t) {
			return redactedValue
		}
		return processSecrets.Text(t)
	}
	return v
}

// auditPage is GET /v1/audit's answer.
type auditPage struct {
	Records    []meta.AuditRecord `json:"records"`
	NextCursor string             `json:"next_cursor,omitempty"`
}

// listAudit: GET /v1/audit[?resource=&type=&actor=&since=&until=&limit=&cursor=]
// (admin): the tenant's audit records, newest first, a page at a time.
func (s *Server) listAudit(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	aq := meta.AuditQuery{Tenant: principalFrom(r.Context()).Tenant, Resource: q.Get("resource"), Type: q.Get("type"), Actor: q.Get("actor"), Limit: 100}
	for _, b := range []struct {
		name string
		to   *time.Time
	}{{"since", &aq.Since}, {"until", &aq.Until}} {
		if v := q.Get(b.name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				writeError(w, invalid("query parameter %q: want an RFC 3339 time, e.g. 2026-12-01T10:00:00Z", b.name))
				return
			}
			*b.to = t
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			writeError(w, invalid("query parameter \"limit\": want 1 to 1000"))
			return
		}
		aq.Limit = n
	}
	if v := q.Get("cursor"); v != "" {
		c, ok := parseAuditCursor(v)
		if !ok {
			writeError(w, invalid("query parameter \"cursor\": not a cursor this server gave"))
			return
		}
		aq.After = &c
	}
	recs, err := s.audit.Audit(r.Context(), aq)
	if err != nil {
		writeError(w, asAPIError(err))
		return
	}
	page := auditPage{Records: recs}
	if len(recs) == aq.Limit {
		last := recs[len(recs)-1]
		page.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(last.At.UnixMicro(), 10) + ":" + last.ID))
	}
	writeJSON(w, http.StatusOK, page)
}

func parseAuditCursor(v string) (meta.AuditCursor, bool) {
	if len(v) > 200 {
		return meta.AuditCursor{}, false
	}
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		return meta.AuditCursor{}, false
	}
	at, id, ok := strings.Cut(string(b), ":")
	us, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || id == "" {
		return meta.AuditCursor{}, false
	}
	return meta.AuditCursor{At: time.UnixMicro(us).UTC(), ID: id}, true
}
