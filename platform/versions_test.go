package platform

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
)

// TestAgentVersions: every save is a version; a draft is not served until
// published, a builder chats with it by ?version=N, an end user may not;
// publishing, rollback (twice: back through the publications) and the
// diff; on SQLite and PostgreSQL.
func TestAgentVersions(t *testing.T) {
	onEachStore(t, func(t *testing.T, e *testEnv) {
		keys := e.roleKeys("versioned")
		b := keys[builder].Key
		a := e.createAgent(b, map[string]any{"name": "helper", "system_prompt": "v1"})
		if a.Version != 1 {
			t.Fatalf("created at version %d", a.Version)
		}
		var got meta.Agent
		e.do(b, "PUT", "/v1/agents/"+a.ID, map[string]any{"system_prompt": "v2"}, &got)
		if got.Version != 2 || got.SystemPrompt != "v2" {
			t.Fatalf("update: %+v", got)
		}
		// A draft: saved as version 3, not served.
		if resp := e.do(b, "PUT", "/v1/agents/"+a.ID+"?draft=true", map[string]any{"system_prompt": "v3 draft"}, &got); resp.StatusCode != 200 || got.Version != 3 {
			t.Fatalf("draft: %d %+v", resp.StatusCode, got)
		}
		e.do(b, "GET", "/v1/agents/"+a.ID, nil, &got)
		if got.Version != 2 || got.SystemPrompt != "v2" {
			t.Fatalf("the draft is served: %+v", got)
		}
		// A draft over a draft starts from the latest version.
		e.do(b, "PUT", "/v1/agents/"+a.ID+"?draft=true", map[string]any{"temperature": 0.5}, &got)
		if got.Version != 4 || got.SystemPrompt != "v3 draft" {
			t.Fatalf("second draft: %+v", got)
		}
		var vs []meta.AgentVersion
		e.do(keys[viewer].Key, "GET", "/v1/agents/"+a.ID+"/versions", nil, &vs)
		if len(vs) != 4 || vs[0].Version != 4 || vs[0].Published || !vs[2].Published || vs[2].Version != 2 || vs[0].CreatedBy != "builder" || vs[3].PublishedAt == nil || vs[0].PublishedAt != nil {
			t.Fatalf("versions %+v", vs)
		}
		// The playground: a builder chats with the draft, the echo model
		// answering with the system prompt it was given.
		var ans api.ChatAnswer
		if resp := e.do(b, "POST", "/v1/agents/"+a.ID+"/chat?version=3", map[string]any{"query": "hi"}, &ans); resp.StatusCode != 200 {
			t.Fatalf("chat with the draft: %d %s", resp.StatusCode, body(resp))
		}
		if !containsPrompt(e, "v3 draft") {
			t.Fatal("the draft's prompt did not reach the model")
		}
		e.wantError(e.do(keys[endUser].Key, "POST", "/v1/agents/"+a.ID+"/chat?version=3", map[string]any{"query": "hi"}, nil), http.StatusForbidden, CodeForbidden)
		if resp := e.do(keys[endUser].Key, "POST", "/v1/agents/"+a.ID+"/chat?version=2", map[string]any{"query": "hi"}, nil); resp.StatusCode != 200 {
			t.Fatalf("end user with the published version: %d", resp.StatusCode)
		}
		e.wantError(e.do(b, "POST", "/v1/agents/"+a.ID+"/chat?version=9", map[string]any{"query": "hi"}, nil), http.StatusNotFound, CodeNotFound)
		e.wantError(e.do(b, "POST", "/v1/agents/"+a.ID+"/chat?version=x", map[string]any{"query": "hi"}, nil), http.StatusBadRequest, CodeInvalidRequest)

		// Diff of the draft against the published version.
		var d versionDiff
		e.do(keys[viewer].Key, "GET", "/v1/agents/"+a.ID+"/versions/4/diff", nil, &d)
		if d.From != 2 || d.To != 4 || len(d.Changes) != 2 || d.Changes[0].Field != "system_prompt" || d.Changes[0].From != "v2" || d.Changes[1].Field != "temperature" {
			t.Fatalf("diff %+v", d)
		}
		// Publish the draft: served at once.
		e.wantError(e.do(keys[viewer].Key, "POST", "/v1/agents/"+a.ID+"/versions/4/publish", nil, nil), http.StatusForbidden, CodeForbidden)
		if resp := e.do(b, "POST", "/v1/agents/"+a.ID+"/versions/4/publish", nil, &got); resp.StatusCode != 200 || got.Version != 4 {
			t.Fatalf("publish: %d %+v", resp.StatusCode, got)
		}
		e.do(keys[endUser].Key, "POST", "/v1/agents/"+a.ID+"/chat", map[string]any{"query": "hi"}, nil)
		if !containsPrompt(e, "v3 draft") {
			t.Fatal("the published version is not served")
		}
		// Rollback: 4 → 2, then 2 → 1, then nothing before.
		if e.do(b, "POST", "/v1/agents/"+a.ID+"/rollback", nil, &got); got.Version != 2 || got.SystemPrompt != "v2" {
			t.Fatalf("rollback: %+v", got)
		}
		e.do(b, "GET", "/v1/agents/"+a.ID, nil, &got)
		if got.Version != 2 {
			t.Fatalf("after rollback the agent serves %d", got.Version)
		}
		if e.do(b, "POST", "/v1/agents/"+a.ID+"/rollback", nil, &got); got.Version != 1 || got.SystemPrompt != "v1" {
			t.Fatalf("second rollback: %+v", got)
		}
		e.wantError(e.do(b, "POST", "/v1/agents/"+a.ID+"/rollback", nil, nil), http.StatusConflict, CodeConflict)
		e.wantError(e.do(b, "POST", "/v1/agents/"+a.ID+"/versions/7/publish", nil, nil), http.StatusNotFound, CodeNotFound)
		// Another tenant sees no version of it.
		other := e.roleKeys("other")
		e.wantError(e.do(other[owner].Key, "GET", "/v1/agents/"+a.ID+"/versions", nil, nil), http.StatusNotFound, CodeNotFound)
		e.wantError(e.do(other[owner].Key, "GET", "/v1/agents/"+a.ID+"/versions/1", nil, nil), http.StatusNotFound, CodeNotFound)
		e.wantError(e.do(other[owner].Key, "POST", "/v1/agents/"+a.ID+"/versions/1/publish", nil, nil), http.StatusNotFound, CodeNotFound)
		e.wantError(e.do(other[owner].Key, "POST", "/v1/agents/"+a.ID+"/rollback", nil, nil), http.StatusNotFound, CodeNotFound)
		// Deleting the agent deletes its versions.
		e.do(b, "DELETE", "/v1/agents/"+a.ID, nil, nil)
		e.wantError(e.do(b, "GET", "/v1/agents/"+a.ID+"/versions", nil, nil), http.StatusNotFound, CodeNotFound)
	})
}

// Concurrent saves of one agent number their versions one after the
// other: no number twice, none lost.
func TestAgentVersionsConcurrent(t *testing.T) {
	onEachStore(t, func(t *testing.T, e *testEnv) {
		a := e.createAgent(e.admin, map[string]any{"name": "busy"})
		var wg sync.WaitGroup
		codes := make([]int, 8)
		for i := range codes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				q := ""
				if i%2 == 0 {
					q = "?draft=true"
				}
				codes[i] = e.do(e.admin, "PUT", "/v1/agents/"+a.ID+q, map[string]any{"max_tokens": 100 + i}, nil).StatusCode
			}()
		}
		wg.Wait()
		for i, c := range codes {
			if c != 200 {
				t.Fatalf("save %d: %d", i, c)
			}
		}
		var vs []meta.AgentVersion
		e.do(e.admin, "GET", "/v1/agents/"+a.ID+"/versions", nil, &vs)
		if len(vs) != 9 {
			t.Fatalf("%d versions, want 9", len(vs))
		}
		for i, v := range vs {
			if v.Version != 9-i {
				t.Fatalf("versions %d: %d", i, v.Version)
			}
		}
	})
}

// containsPrompt reports whether the model's last request carried prompt
// in its system message.
func containsPrompt(e *testEnv, prompt string) bool {
	reqs := e.model.Requests()
	if len(reqs) == 0 {
		return false
	}
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == llm.RoleSystem && strings.Contains(m.Text(), prompt) {
			return true
		}
	}
	return false
}
