package platform

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/weftlabs/weft/platform/meta"
)

// auditOf reads the tenant's audit log with key, following the cursor.
func (e *testEnv) auditOf(key, query string) []meta.AuditRecord {
	e.t.Helper()
	var all []meta.AuditRecord
	cursor := ""
	for {
		q, _ := url.ParseQuery(query)
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page auditPage
		if resp := e.do(key, "GET", "/v1/audit?"+q.Encode(), nil, &page); resp.StatusCode != 200 {
			e.t.Fatalf("GET /v1/audit?%s: %d %s", q.Encode(), resp.StatusCode, body(resp))
		}
		all = append(all, page.Records...)
		if page.NextCursor == "" {
			return all
		}
		cursor = page.NextCursor
	}
}

// TestAudit: changes leave records with who, what, before and after; a
// secret's value and a key's secret never appear; filters, pages and
// tenants hold; on SQLite and PostgreSQL.
func TestAudit(t *testing.T) {
	onEachStore(t, func(t *testing.T, e *testEnv) {
		keys := e.roleKeys("audited")
		b, own := keys[builder], keys[owner]
		start := time.Now().Add(-time.Second)
		ag := e.createAgent(b.Key, map[string]any{"name": "helper", "system_prompt": "v1"})
		e.do(b.Key, "PUT", "/v1/agents/"+ag.ID, map[string]any{"system_prompt": "v2"}, nil)
		e.do(b.Key, "POST", "/v1/agents/"+ag.ID+"/chat", map[string]any{"query": "hi"}, nil) // a use: not recorded
		const secretValue = "sk-very-secret-value-123"
		if resp := e.do(keys[admin].Key, "PUT", "/v1/secrets/CRM", map[string]any{"value": secretValue}, nil); resp.StatusCode >= 300 {
			t.Fatalf("put secret: %d %s", resp.StatusCode, body(resp))
		}
		var nk keyResponse
		e.do(own.Key, "POST", "/v1/api-keys", map[string]any{"name": "ci", "role": "viewer"}, &nk)
		e.do(b.Key, "DELETE", "/v1/agents/"+ag.ID, nil, nil)
		e.do(b.Key, "DELETE", "/v1/agents/nosuch", nil, nil) // failed: nothing changed

		recs := e.auditOf(keys[admin].Key, "")
		raw, _ := json.Marshal(recs)
		if strings.Contains(string(raw), secretValue) || strings.Contains(string(raw), nk.Key) {
			t.Fatalf("the audit log holds a secret: %s", raw)
		}
		var routes []string
		for i := len(recs) - 1; i >= 0; i-- {
			routes = append(routes, recs[i].Route)
		}
		want := []string{"POST /v1/api-keys", "POST /v1/api-keys", "POST /v1/api-keys", "POST /v1/api-keys", // roleKeys
			"POST /v1/agents", "PUT /v1/agents/{id}", "PUT /v1/secrets/{name}", "POST /v1/api-keys", "DELETE /v1/agents/{id}"}
		if strings.Join(routes, ",") != strings.Join(want, ",") {
			t.Fatalf("routes recorded:\n%v\nwant\n%v", routes, want)
		}
		put := recs[len(recs)-6]
		if put.ActorID != b.ID || put.ActorName != "builder" || put.ActorRole != builder || put.ResourceType != "agents" || put.ResourceID != ag.ID || put.ResourceName != "helper" || put.Status != 200 || put.At.Before(start) {
			t.Fatalf("PUT record %+v", put)
		}
		var before, after meta.Agent
		json.Unmarshal(put.Before, &before)
		json.Unmarshal(put.After, &after)
		if before.SystemPrompt != "v1" || after.SystemPrompt != "v2" {
			t.Fatalf("before %q after %q", before.SystemPrompt, after.SystemPrompt)
		}
		del := recs[0]
		if string(del.After) != "null" || !strings.Contains(string(del.Before), `"v2"`) {
			t.Fatalf("DELETE record before %s after %s", del.Before, del.After)
		}
		sec := recs[len(recs)-7]
		if sec.ResourceType != "secrets" || sec.ResourceID != "CRM" {
			t.Fatalf("secret record %+v", sec)
		}
		created := recs[1]
		if !strings.Contains(string(created.After), `"key":"[redacted]"`) || created.ResourceID != nk.ID {
			t.Fatalf("key record %+v after %s", created, created.After)
		}

		// Filters: resource (id or name), actor (id or name), type, time.
		if got := e.auditOf(keys[admin].Key, "resource="+ag.ID); len(got) != 3 {
			t.Fatalf("by resource: %d records", len(got))
		}
		if got := e.auditOf(keys[admin].Key, "resource=helper&actor=builder"); len(got) != 3 {
			t.Fatalf("by name and actor: %d records", len(got))
		}
		if got := e.auditOf(keys[admin].Key, "actor="+own.ID+"&type=api-keys"); len(got) != 5 {
			t.Fatalf("by actor id and type: %d records", len(got))
		}
		future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		if got := e.auditOf(keys[admin].Key, "since="+future); len(got) != 0 {
			t.Fatalf("since the future: %d", len(got))
		}
		if got := e.auditOf(keys[admin].Key, "until="+start.UTC().Format(time.RFC3339Nano)); len(got) != 0 {
			t.Fatalf("until the start: %d", len(got))
		}
		// Pages of 2 give the same records in the same order.
		paged := e.auditOf(keys[admin].Key, "limit=2")
		if len(paged) != len(recs) {
			t.Fatalf("%d records in pages of 2, %d at once", len(paged), len(recs))
		}
		for i := range recs {
			if paged[i].ID != recs[i].ID {
				t.Fatalf("page order differs at %d", i)
			}
		}
		e.wantError(e.do(keys[admin].Key, "GET", "/v1/audit?cursor=zzz", nil, nil), 400, CodeInvalidRequest)
		e.wantError(e.do(keys[admin].Key, "GET", "/v1/audit?since=yesterday", nil, nil), 400, CodeInvalidRequest)
		e.wantError(e.do(keys[admin].Key, "GET", "/v1/audit?limit=0", nil, nil), 400, CodeInvalidRequest)
		// A builder may not read it; another tenant sees none of it.
		if resp := e.do(b.Key, "GET", "/v1/audit", nil, nil); !refusedForRole(resp) {
			t.Fatalf("builder reads the audit log: %d", resp.StatusCode)
		}
		other := e.roleKeys("elsewhere")
		for _, r := range e.auditOf(other[owner].Key, "") {
			if r.Route != "POST /v1/api-keys" || r.ActorID != other[owner].ID {
				t.Fatalf("tenant elsewhere sees %+v", r)
			}
		}
		if got := e.auditOf(other[owner].Key, "resource="+ag.ID); len(got) != 0 {
			t.Fatalf("another tenant sees %d records of the agent", len(got))
		}
	})
}

// redactAudit keeps references and removes values.
func TestRedactAudit(t *testing.T) {
	in := `{"name":"t","http":{"headers":{"Authorization":"Bearer abc","X-Ref":"${secret:CRM}"}},"api_key":"${secret:K}","token":"plain","key":"wk_1","nested":[{"password":"p"}],"n":1}`
	got := string(redactAudit(json.RawMessage(in)))
	for _, bad := range []string{"Bearer abc", `"plain"`, "wk_1", `"p"`} {
		if strings.Contains(got, bad) {
			t.Fatalf("%s kept in %s", bad, got)
		}
	}
	for _, keep := range []string{"${secret:CRM}", "${secret:K}", `"n":1`, `"name":"t"`} {
		if !strings.Contains(got, keep) {
			t.Fatalf("%s lost in %s", keep, got)
		}
	}
	if redactAudit(nil) != nil || redactAudit(json.RawMessage("{")) != nil {
		t.Fatal("empty or broken JSON is not nil")
	}
}

// A change to an end user's data keeps only the hash of their id, and none
// of the content.
func TestAuditEndUser(t *testing.T) {
	e, _ := newMemoryEnv(t, "sqlite")
	const user = "alice@example.com"
	resp := e.do(e.admin, "PUT", "/v1/users/"+url.PathEscape(user)+"/memories/m1", map[string]any{"text": "Alice is allergic to peanuts"}, nil)
	if resp.StatusCode >= 300 {
		t.Fatalf("put memory: %d %s", resp.StatusCode, body(resp))
	}
	e.do(e.admin, "DELETE", "/v1/users/"+url.PathEscape(user), nil, nil)
	var recs []meta.AuditRecord
	for _, r := range e.auditOf(e.admin, "") {
		if strings.HasPrefix(r.Route, "PUT /v1/users/") || strings.HasPrefix(r.Route, "DELETE /v1/users/") {
			recs = append(recs, r)
		}
	}
	raw, _ := json.Marshal(recs)
	if len(recs) != 2 || strings.Contains(string(raw), "alice") || strings.Contains(string(raw), "peanuts") {
		t.Fatalf("end user records: %s", raw)
	}
	if h := meta.UserHash(e.tenant(), user); recs[0].ResourceID != h || !strings.Contains(recs[1].Path, h) {
		t.Fatalf("records %+v lack the user's hash %s", recs, h)
	}
}
