package platform

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
)

// TestSessionTitlesAndFeedback: a session is titled and renamed; an
// answer gets thumbs up or down with a comment, shown with its turn's
// trace, replaced, deleted; feedback rates answers of the caller's
// tenant's sessions only; a deleted session takes its notes with it.
func TestSessionTitlesAndFeedback(t *testing.T) {
	e := newEnv(t, nil)
	a := e.createAgent(e.admin, map[string]any{"name": "helper"})
	var ans api.ChatAnswer
	if resp := e.do(e.admin, "POST", "/v1/agents/helper/chat", map[string]any{"query": "where is my invoice?"}, &ans); resp.StatusCode != http.StatusOK {
		t.Fatalf("chat: %d %s", resp.StatusCode, body(resp))
	}
	sesPath := "/v1/sessions/" + ans.SessionID
	var ss api.Session
	if resp := e.do(e.admin, "PUT", sesPath, map[string]any{"title": "  where is my\ninvoice? "}, &ss); resp.StatusCode != http.StatusOK || ss.Title != "where is my invoice?" {
		t.Fatalf("title: %d %+v", resp.StatusCode, ss)
	}
	var list []api.Session
	e.do(e.admin, "GET", "/v1/sessions?agent_id="+a.ID, nil, &list)
	if len(list) != 1 || list[0].Title != "where is my invoice?" {
		t.Fatalf("listed: %+v", list)
	}
	e.do(e.admin, "PUT", sesPath, map[string]any{"title": "Invoice"}, nil)
	if e.do(e.admin, "GET", sesPath, nil, &ss); ss.Title != "Invoice" {
		t.Fatalf("renamed: %+v", ss)
	}
	e.wantError(e.do(e.admin, "PUT", sesPath, map[string]any{"title": strings.Repeat("x", 201)}, nil), http.StatusBadRequest, CodeInvalidRequest)
	e.wantError(e.do(e.admin, "PUT", sesPath, map[string]any{}, nil), http.StatusBadRequest, CodeInvalidRequest)

	fbPath := sesPath + "/messages/" + ans.MessageID + "/feedback"
	var f meta.Feedback
	if resp := e.do(e.admin, "PUT", fbPath, map[string]any{"rating": -1, "comment": "wrong invoice"}, &f); resp.StatusCode != http.StatusOK || f.Rating != -1 || f.Comment != "wrong invoice" || f.KeyID == "" {
		t.Fatalf("feedback: %d %+v", resp.StatusCode, f)
	}
	var f2 meta.Feedback
	if resp := e.do(e.admin, "PUT", fbPath, map[string]any{"rating": 1}, &f2); resp.StatusCode != http.StatusOK || f2.Rating != 1 || f2.Comment != "" {
		t.Fatalf("replaced: %d %+v", resp.StatusCode, f2)
	}
	var trace struct {
		Feedback *meta.Feedback `json:"feedback"`
	}
	if resp := e.do(e.admin, "GET", sesPath+"/messages/"+ans.MessageID+"/trace", nil, &trace); resp.StatusCode != http.StatusOK || trace.Feedback == nil || trace.Feedback.Rating != 1 {
		t.Fatalf("trace: %d %+v", resp.StatusCode, trace.Feedback)
	}
	var all []meta.Feedback
	if e.do(e.admin, "GET", sesPath+"/feedback", nil, &all); len(all) != 1 || all[0].MessageID != ans.MessageID {
		t.Fatalf("session feedback: %+v", all)
	}
	eb := e.wantError(e.do(e.admin, "PUT", fbPath, map[string]any{"rating": 0}, nil), http.StatusBadRequest, CodeInvalidRequest)
	if !strings.Contains(eb.Error.Message, "rating") {
		t.Errorf("bad rating: %+v", eb)
	}
	var msgs []api.Message
	e.do(e.admin, "GET", sesPath+"/messages", nil, &msgs)
	if msgs[0].Role != "user" {
		t.Fatalf("messages: %+v", msgs)
	}
	e.wantError(e.do(e.admin, "PUT", sesPath+"/messages/"+msgs[0].ID+"/feedback", map[string]any{"rating": 1}, nil), http.StatusBadRequest, CodeInvalidRequest)
	e.wantError(e.do(e.admin, "PUT", sesPath+"/messages/msg_nope/feedback", map[string]any{"rating": 1}, nil), http.StatusNotFound, CodeNotFound)

	// Another tenant sees none of it.
	other := e.tenantKey("other")
	e.wantError(e.do(other, "PUT", fbPath, map[string]any{"rating": -1}, nil), http.StatusNotFound, CodeNotFound)
	e.wantError(e.do(other, "PUT", sesPath, map[string]any{"title": "mine"}, nil), http.StatusNotFound, CodeNotFound)
	e.wantError(e.do(other, "GET", sesPath+"/feedback", nil, nil), http.StatusNotFound, CodeNotFound)

	if resp := e.do(e.admin, "DELETE", fbPath, nil, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
	if resp := e.do(e.admin, "DELETE", fbPath, nil, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete again: %d", resp.StatusCode)
	}
	if e.do(e.admin, "GET", sesPath+"/feedback", nil, &all); len(all) != 0 {
		t.Fatalf("after the delete: %+v", all)
	}

	e.do(e.admin, "PUT", fbPath, map[string]any{"rating": 1}, nil)
	if resp := e.do(e.admin, "DELETE", sesPath, nil, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete session: %d", resp.StatusCode)
	}
	ns := e.srv.meta.(notesStore)
	left, _ := ns.SessionFeedback(context.Background(), e.tenant(), ans.SessionID)
	titles, _ := ns.SessionTitles(context.Background(), e.tenant())
	if len(left) != 0 || len(titles) != 0 {
		t.Fatalf("after the session's deletion: %+v %v", left, titles)
	}
}
