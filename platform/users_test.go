package platform

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weftlabs/weft/internal/pgtest"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/memory/facts"
	"github.com/weftlabs/weft/memory/sqlstore"
	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/provider/scripted"
)

// extractModel answers an extraction request with one fact to add, in the
// extractor's JSON.
func extractModel(fact string) *scripted.Model {
	return scripted.New(scripted.Rule{Respond: func(*llm.Request) (*llm.Response, error) {
		b, _ := json.Marshal(map[string]any{"operations": []map[string]string{{"op": "add", "text": fact}}})
		return &llm.Response{Message: llm.AssistantMessage(string(b))}, nil
	}})
}

// memoryEnv is a server whose metadata and sessions are both in SQL
// (SQLite files, or one PostgreSQL schema with pgvector), with an
// embedding model (scripted's bags of words) and "scripted/extract" as an
// extraction model. dump returns every value of every row of every table
// of both stores, as text, a row a string.
func newMemoryEnv(t testing.TB, backend string) (e *testEnv, dump func() []string) {
	t.Helper()
	ctx := context.Background()
	chat := scripted.New(scripted.Echo())
	extract := extractModel("Lives in Berlin.")
	summarize := scripted.New(scripted.Reply("The user told their word, zebra."))
	cfg := Config{
		RateLimit: -1, DefaultEmbeddingModel: "scripted/embed",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OpenModel: func(spec string) (*llm.Model, error) {
			switch spec {
			case "scripted/extract":
				return llm.New(extract, llm.WithName(spec), llm.WithRetries(0)), nil
			case "scripted/summarize":
				return llm.New(summarize, llm.WithName(spec), llm.WithRetries(0)), nil
			}
			return llm.New(chat, llm.WithName(spec), llm.WithRetries(0)), nil
		},
	}
	switch backend {
	case "sqlite":
		dir := t.TempDir()
		ms, err := meta.OpenSQLite(ctx, filepath.Join(dir, "meta.db"))
		if err != nil {
			t.Fatal(err)
		}
		ss, err := sqlstore.OpenSQLite(ctx, filepath.Join(dir, "sessions.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close(); ms.Close() })
		cfg.Meta, cfg.Sessions = ms, ss
		dump = func() []string {
			var out []string
			for _, f := range []string{"meta.db", "sessions.db"} {
				out = append(out, dumpSQLite(t, filepath.Join(dir, f))...)
			}
			return out
		}
	case "postgres":
		dsn := pgtest.DSN(t, "platform_forget")
		ms, err := meta.OpenPostgres(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		ss, err := sqlstore.OpenPostgres(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close(); ms.Close() })
		cfg.Meta, cfg.Sessions = ms, ss
		dump = func() []string { return dumpPostgres(t, dsn) }
	}
	admin, err := Bootstrap(ctx, cfg.Meta, "")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e = newEnv(t, chat) // for its helpers; its server is replaced
	e.srv, e.admin = srv, admin
	e.http.Config.Handler = srv
	t.Cleanup(func() { srv.Close() })
	return e, dump
}

// dumpSQLite returns every row of every table of the SQLite database at
// path, as text, each prefixed with its table's name.
func dumpSQLite(t testing.TB, path string) []string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		tables = append(tables, n)
	}
	rows.Close()
	if len(tables) < 5 {
		t.Fatalf("%s has only the tables %q", path, tables)
	}
	var out []string
	for _, table := range tables {
		rows, err := db.Query(`SELECT * FROM "` + table + `"`)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			row := table + ":"
			for _, v := range vals {
				switch v := v.(type) {
				case []byte:
					row += " | " + string(v)
				case string:
					row += " | " + v
				}
			}
			out = append(out, row)
		}
		rows.Close()
	}
	return out
}

// dumpPostgres returns every row of every table of the DSN's schema, as
// text, each prefixed with its table's name.
func dumpPostgres(t testing.TB, dsn string) []string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tables) < 10 {
		t.Fatalf("the schema has the tables %q (%v)", tables, err)
	}
	var out []string
	for _, table := range tables {
		// A row as text shows bytea as hex: convert_from shows it as text.
		rows, err := conn.Query(ctx, `SELECT CAST(t AS text) FROM `+pgx.Identifier{table}.Sanitize()+` t`)
		if err != nil {
			t.Fatal(err)
		}
		texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range texts {
			out = append(out, table+": "+s+" "+unhex(s))
		}
	}
	return out
}

// unhex decodes the \x… bytea values of a row's text, so that JSON stored
// as bytes is searched as text too.
func unhex(row string) string {
	var b strings.Builder
	for _, part := range strings.Split(row, `\\x`)[1:] {
		end := 0
		for end < len(part) && strings.ContainsRune("0123456789abcdef", rune(part[end])) {
			end++
		}
		var raw []byte
		if _, err := fmt.Sscanf(part[:end-end%2], "%x", &raw); err == nil {
			b.Write(raw)
		}
	}
	return b.String()
}

// containing returns the rows of dump that contain any of words and not
// the tenant id except (the other tenant's rows, when not empty).
func containing(dump []string, except string, words ...string) []string {
	var out []string
	for _, v := range dump {
		if except != "" && strings.Contains(v, except) {
			continue
		}
		for _, w := range words {
			if strings.Contains(v, w) {
				out = append(out, v)
				break
			}
		}
	}
	return out
}

func (e *testEnv) chatAs(key, agent, user, session, query string, hdr ...string) api.ChatAnswer {
	e.t.Helper()
	var ans api.ChatAnswer
	resp := e.do(key, "POST", "/v1/agents/"+agent+"/chat", map[string]any{"query": query, "user": user, "session_id": session}, &ans, hdr...)
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("chat: %d %s", resp.StatusCode, body(resp))
	}
	return ans
}

// TestForgetUser forgets an end user on SQLite and on PostgreSQL: their
// sessions (and a delegate's session under one), messages, traces,
// memories and idempotent replies go, then no row of any table of either
// store holds their id or anything they said; another user's, and another
// tenant's user of the same id, stay; the audit record keeps counts and
// the user's hash.
func TestForgetUser(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			e, dump := newMemoryEnv(t, backend)
			ctx := context.Background()
			const ada, bob = "user-ada-5d1e", "user-bob-77c2"
			const adaWord, bobWord = "zebra4711", "okapi0815"
			var other struct{ Key string }
			if resp := e.do(e.admin, "POST", "/v1/api-keys", map[string]any{"name": "other", "tenant": "other"}, &other); resp.StatusCode != http.StatusCreated {
				t.Fatalf("key of another tenant: %d %s", resp.StatusCode, body(resp))
			}
			a := e.createAgent(e.admin, map[string]any{"name": "helper", "memory": map[string]any{"long_term": true, "tools": true}})
			b := e.createAgent(other.Key, map[string]any{"name": "helper"})

			s1 := e.chatAs(e.admin, a.ID, ada, "", "my word is "+adaWord)
			e.chatAs(e.admin, a.ID, ada, s1.SessionID, adaWord+" again")
			e.chatAs(e.admin, a.ID, ada, "", adaWord+" in another session", "Idempotency-Key", "idem-1")
			e.chatAs(e.admin, a.ID, bob, "", "bob says "+bobWord)
			e.chatAs(other.Key, b.ID, ada, "", "the other tenant's ada says "+bobWord)
			// A delegate's session under ada's, as delegation makes one.
			child := meta.Session{ID: "ses_child1", TenantID: e.tenant(), AgentID: a.ID, ParentID: s1.SessionID, CreatedAt: time.Now(), UpdatedAt: time.Now()}
			if err := e.srv.meta.CreateSession(ctx, child); err != nil {
				t.Fatal(err)
			}
			if _, err := e.srv.sessions.Append(ctx, sessionKey(child), memory.Record{Message: llm.UserMessage("delegated: " + adaWord)}); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct{ key, user, text string }{{e.admin, ada, "Likes " + adaWord + "."}, {e.admin, bob, "Likes " + bobWord + "."}, {other.Key, ada, "Likes " + bobWord + "."}} {
				if resp := e.do(c.key, "PUT", "/v1/users/"+c.user+"/memories/m1", map[string]any{"text": c.text}, nil); resp.StatusCode != http.StatusCreated {
					t.Fatalf("put memory: %d %s", resp.StatusCode, body(resp))
				}
			}
			// A title and feedback that quote ada go with her sessions.
			if resp := e.do(e.admin, "PUT", "/v1/sessions/"+s1.SessionID, map[string]any{"title": "About " + adaWord}, nil); resp.StatusCode != http.StatusOK {
				t.Fatalf("title: %d %s", resp.StatusCode, body(resp))
			}
			if resp := e.do(e.admin, "PUT", "/v1/sessions/"+s1.SessionID+"/messages/"+s1.MessageID+"/feedback", map[string]any{"rating": -1, "comment": adaWord + " was wrong"}, nil); resp.StatusCode != http.StatusOK {
				t.Fatalf("feedback: %d %s", resp.StatusCode, body(resp))
			}
			e.srv.ledger.flush(ctx)
			ot, err := e.srv.meta.TenantByName(ctx, "other")
			if err != nil {
				t.Fatal(err)
			}
			if got := containing(dump(), ot.ID, ada, adaWord); len(got) < 8 {
				t.Fatalf("before forgetting, %d values hold ada's id or word: %q", len(got), got)
			}

			var ans api.ForgetUserAnswer
			if resp := e.do(e.admin, "DELETE", "/v1/users/"+ada, nil, &ans); resp.StatusCode != http.StatusOK {
				t.Fatalf("forget: %d %s", resp.StatusCode, body(resp))
			}
			want := map[string]int{"sessions": 3, "messages": 7, "memories": 1, "traces": 3, "a2a_tasks": 0, "idempotent_replies": 1, "feedback": 1, "titles": 1}
			for k, n := range want {
				if ans.Deleted[k] != n {
					t.Errorf("deleted %s = %d, want %d (answer %+v)", k, ans.Deleted[k], n, ans.Deleted)
				}
			}
			if left := containing(dump(), ot.ID, ada, adaWord); len(left) > 0 {
				t.Fatalf("after forgetting, values still hold ada's id or word:\n%s", strings.Join(left, "\n"))
			}
			if got := containing(dump(), "", bobWord); len(got) < 4 {
				t.Fatalf("bob's and the other tenant's rows went too: %q", got)
			}
			e.wantError(e.do(e.admin, "GET", "/v1/sessions/"+s1.SessionID, nil, nil), http.StatusNotFound, CodeNotFound)
			var mems []api.Memory
			e.do(other.Key, "GET", "/v1/users/"+ada+"/memories", nil, &mems)
			if len(mems) != 1 || mems[0].Text != "Likes "+bobWord+"." {
				t.Fatalf("the other tenant's ada has %+v", mems)
			}
			var sessions []api.Session
			e.do(other.Key, "GET", "/v1/sessions", nil, &sessions)
			if len(sessions) != 1 || sessions[0].User != ada {
				t.Fatalf("the other tenant's sessions: %+v", sessions)
			}
			// The audit log keeps the change to her session, without its content.
			if ans.Deleted["audit_redacted"] < 1 {
				t.Errorf("audit records redacted = %d, want the title's change at least", ans.Deleted["audit_redacted"])
			}
			if resp := e.do(e.admin, "GET", "/v1/audit?resource_id="+s1.SessionID, nil, nil); resp.StatusCode != http.StatusOK || !strings.Contains(body(resp), s1.SessionID) {
				t.Fatalf("the audit log after forgetting: %d", resp.StatusCode)
			}
			forgets, err := e.srv.meta.(*meta.SQL).UserForgets(ctx, e.tenant())
			if err != nil || len(forgets) != 1 || forgets[0].UserHash != meta.UserHash(e.tenant(), ada) || forgets[0].Counts["messages"] != 7 || ans.AuditID != forgets[0].ID {
				t.Fatalf("audit records = %+v, %v", forgets, err)
			}
			// Again: nothing left to delete, and a second record.
			if resp := e.do(e.admin, "DELETE", "/v1/users/"+ada, nil, &ans); resp.StatusCode != http.StatusOK || ans.Deleted["sessions"] != 0 || ans.Deleted["memories"] != 0 {
				t.Fatalf("forgetting again: %d %+v", resp.StatusCode, ans)
			}
		})
	}
}

// TestMemoriesAPI lists, writes and deletes a user's memories, on SQLite
// and PostgreSQL; another tenant, and another user, see none of them.
func TestMemoriesAPI(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			e, _ := newMemoryEnv(t, backend)
			var other struct{ Key string }
			e.do(e.admin, "POST", "/v1/api-keys", map[string]any{"name": "other", "tenant": "other"}, &other)
			var m api.Memory
			if resp := e.do(e.admin, "PUT", "/v1/users/ada/memories/home", map[string]any{"text": " Lives in Paris. "}, &m); resp.StatusCode != http.StatusCreated || m.Text != "Lives in Paris." || m.Source.Kind != "api" {
				t.Fatalf("create: %d %+v", resp.StatusCode, m)
			}
			created := m.CreatedAt
			if resp := e.do(e.admin, "PUT", "/v1/users/ada/memories/home", map[string]any{"text": "Lives in Berlin."}, &m); resp.StatusCode != http.StatusOK || m.Text != "Lives in Berlin." || !m.CreatedAt.Equal(created) {
				t.Fatalf("update: %d %+v", resp.StatusCode, m)
			}
			var list []api.Memory
			if e.do(e.admin, "GET", "/v1/users/ada/memories", nil, &list); len(list) != 1 || list[0].ID != "home" || list[0].Text != "Lives in Berlin." {
				t.Fatalf("list = %+v", list)
			}
			// Recalled by the library over the same store, for ada only.
			fs, err := e.srv.factStore(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			hits, err := fs.Search(context.Background(), facts.Scope{Tenant: e.tenant(), User: "ada"}, scripted.Vector("Lives in Berlin.", 0), 3)
			if err != nil || len(hits) != 1 || hits[0].Score < 0.99 {
				t.Fatalf("search = %+v, %v", hits, err)
			}
			for _, c := range []struct{ key, user string }{{other.Key, "ada"}, {e.admin, "bob"}} {
				if e.do(c.key, "GET", "/v1/users/"+c.user+"/memories", nil, &list); len(list) != 0 {
					t.Fatalf("%s of another tenant or user lists %+v", c.user, list)
				}
				e.wantError(e.do(c.key, "DELETE", "/v1/users/"+c.user+"/memories/home", nil, nil), http.StatusNotFound, CodeNotFound)
			}
			for _, c := range []struct{ path, body, want string }{
				{"/v1/users/ada/memories/bad%20id", `{"text": "x"}`, "memory id"},
				{"/v1/users/ada/memories/x", `{"text": "  "}`, `"text"`},
				{"/v1/users/ada/memories/x", `{"text": "` + strings.Repeat("x", facts.MaxFactBytes+1) + `"}`, `"text"`},
				{"/v1/users/ada/memories/x", `{"text": "x", "agent_id": "agt_none"}`, "agt_none"},
				{"/v1/users/" + strings.Repeat("u", maxUserBytes+1) + "/memories/x", `{"text": "x"}`, `"user"`},
			} {
				var eb errorBody
				resp := e.do(e.admin, "PUT", c.path, c.body, &eb)
				if resp.StatusCode/100 != 4 || !strings.Contains(eb.Error.Message, c.want) {
					t.Errorf("PUT %s: %d %q, want a 4xx naming %s", c.path, resp.StatusCode, eb.Error.Message, c.want)
				}
			}
			if resp := e.do(e.admin, "DELETE", "/v1/users/ada/memories/home", nil, nil); resp.StatusCode != http.StatusNoContent {
				t.Fatalf("delete: %d %s", resp.StatusCode, body(resp))
			}
			e.wantError(e.do(e.admin, "DELETE", "/v1/users/ada/memories/home", nil, nil), http.StatusNotFound, CodeNotFound)
		})
	}
}

// TestAgentMemorySetting: an agent's memory setting is kept and checked
// on create and update, naming the bad field and an unknown model.
func TestAgentMemorySetting(t *testing.T) {
	e := newEnv(t, nil)
	setting := map[string]any{"summary": map[string]any{"model": "scripted/small", "threshold_tokens": 256, "prompt": "Fold it.", "max_tokens": 128},
		"long_term": true, "tools": true, "embedding_model": "scripted/embed", "recall_tokens": 300}
	a := e.createAgent(e.admin, map[string]any{"name": "rememberer", "memory": setting})
	want := meta.Memory{Summary: &meta.SummarySetting{Model: "scripted/small", ThresholdTokens: 256, Prompt: "Fold it.", MaxTokens: 128},
		LongTerm: true, Tools: true, EmbeddingModel: "scripted/embed", RecallTokens: 300}
	var got meta.Agent
	e.do(e.admin, "GET", "/v1/agents/"+a.ID, nil, &got)
	if got.Memory == nil || *got.Memory.Summary != *want.Summary || got.Memory.LongTerm != want.LongTerm || got.Memory.Tools != want.Tools ||
		got.Memory.EmbeddingModel != want.EmbeddingModel || got.Memory.RecallTokens != want.RecallTokens {
		t.Fatalf("stored memory = %+v", got.Memory)
	}
	plain := e.createAgent(e.admin, map[string]any{"name": "plain"})
	for _, c := range []struct{ memory, want string }{
		{`{"summary": {"model": "nosuch/model"}}`, `"memory.summary.model": unknown provider "nosuch"`},
		{`{"summary": {"model": "nomodel"}}`, `"memory.summary.model"`},
		{`{"summary": {"threshold_tokens": 10}}`, `"memory.summary.threshold_tokens"`},
		{`{"summary": {"max_tokens": -1}}`, `"memory.summary.max_tokens"`},
		{`{"summary": {"prompt": "` + strings.Repeat("p", maxSummaryPrompt+1) + `"}}`, `"memory.summary.prompt"`},
		{`{"tools": true}`, `"memory.tools"`},
		{`{"long_term": true, "model": "nosuch/x", "embedding_model": "scripted/e"}`, `"memory.model": unknown provider "nosuch"`},
		{`{"long_term": true, "embedding_model": "nosuch/e"}`, `"memory.embedding_model": unknown provider "nosuch"`},
		{`{"long_term": true}`, `"memory.embedding_model": long-term memory needs an embedding model`},
		{`{"recall_tokens": 100000}`, `"memory.recall_tokens"`},
		{`{"summary": "yes"}`, `memory.summary`},
	} {
		for _, r := range []struct{ method, path string }{{"POST", "/v1/agents"}, {"PUT", "/v1/agents/" + plain.ID}} {
			eb := e.wantError(e.do(e.admin, r.method, r.path, `{"name": "m", "memory": `+c.memory+`}`, nil), http.StatusBadRequest, CodeInvalidRequest)
			if !strings.Contains(eb.Error.Message, c.want) {
				t.Errorf("%s memory %s: message %q does not say %s", r.method, c.memory, eb.Error.Message, c.want)
			}
		}
	}
	// Without a setting, nothing.
	if plain.Memory != nil || e.srv.summarizerFor(plain) != nil {
		t.Fatalf("an agent without memory has %+v", plain.Memory)
	}
	if m, err := e.srv.factsFor(plain); m != nil || err != nil {
		t.Fatalf("factsFor(plain) = %v, %v", m, err)
	}
}

// TestMemoryPieces: one summarizer per agent version (kept when another
// field changes, replaced when the summary setting does), long-term memory
// learned in the background for the turn's user and tenant only, and
// extractions in flight stopped before a user is forgotten.
func TestMemoryPieces(t *testing.T) {
	e, _ := newMemoryEnv(t, "sqlite")
	a := e.createAgent(e.admin, map[string]any{"name": "m", "memory": map[string]any{"summary": map[string]any{"threshold_tokens": 128}, "long_term": true, "model": "scripted/extract"}})
	a.TenantID = e.tenant()
	s1 := e.srv.summarizerFor(a)
	if s1 == nil || e.srv.summarizerFor(a) != s1 {
		t.Fatal("summarizerFor gave no summarizer, or another one for the same version")
	}
	b := a
	b.UpdatedAt, b.SystemPrompt = a.UpdatedAt.Add(time.Second), "changed"
	if e.srv.summarizerFor(b) != s1 {
		t.Fatal("a version that changed no summary setting got a new summarizer")
	}
	c := b
	c.UpdatedAt = b.UpdatedAt.Add(time.Second)
	c.Memory = &meta.Memory{Summary: &meta.SummarySetting{ThresholdTokens: 512}, LongTerm: true, Model: "scripted/extract"}
	s3 := e.srv.summarizerFor(c)
	if s3 == nil || s3 == s1 {
		t.Fatal("a new summary setting kept the old summarizer")
	}
	if e.srv.summarizerFor(a) != s3 {
		t.Fatal("an older version read from a cache replaced the newer one's summarizer")
	}

	mem, err := e.srv.factsFor(c)
	if err != nil || mem == nil {
		t.Fatalf("factsFor = %v, %v", mem, err)
	}
	msgs := []llm.Message{llm.UserMessage("I moved to Berlin."), llm.AssistantMessage("Nice!")}
	e.srv.learnAfter(mem, c, "ada", "ses_1", "msg_1", msgs)
	e.srv.learnAfter(mem, c, "", "ses_1", "msg_1", msgs) // no user: nothing
	e.srv.memories.stopLearning(facts.Scope{Tenant: c.TenantID, User: "ada"})
	e.srv.memories.learning.Wait()
	fs, _ := e.srv.factStore(context.Background())
	got, err := fs.List(context.Background(), facts.Scope{Tenant: c.TenantID, User: "ada"})
	// stopLearning may have cancelled the extraction: learn again, to the end.
	if err == nil && len(got) == 0 {
		e.srv.learnAfter(mem, c, "ada", "ses_1", "msg_1", msgs)
		e.srv.memories.learning.Wait()
		got, err = fs.List(context.Background(), facts.Scope{Tenant: c.TenantID, User: "ada"})
	}
	if err != nil || len(got) != 1 || got[0].Text != "Lives in Berlin." || got[0].Source != (facts.Source{Kind: facts.SourceExtraction, Agent: c.ID, Session: "ses_1", Message: "msg_1"}) {
		t.Fatalf("learned %+v, %v", got, err)
	}
	for _, sc := range []facts.Scope{{Tenant: "other", User: "ada"}, {Tenant: c.TenantID, User: ""}, {Tenant: c.TenantID, User: "bob"}} {
		if other, _ := fs.List(context.Background(), sc); len(other) != 0 {
			t.Fatalf("scope %+v got %+v", sc, other)
		}
	}
	e.srv.Close()
	if e.srv.summarizerFor(c) != nil {
		t.Fatal("a closed server made a summarizer")
	}
	e.srv.learnAfter(mem, c, "ada", "ses_1", "msg_2", msgs) // closed: nothing, no goroutine left behind
	e.srv.memories.learning.Wait()
}

// TestMemoryInTurns runs turns of an agent that remembers, on SQLite and
// PostgreSQL: a fact learned after a turn in one session is recalled, as
// a source, in another session of the same user, not for another user
// nor for the same user of another tenant; the agent has the memory
// tools; what slides out of the window is folded into the session's
// summary, which later turns send and which the trace and the session
// show.
func TestMemoryInTurns(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			e, _ := newMemoryEnv(t, backend)
			var other struct{ Key string }
			e.do(e.admin, "POST", "/v1/api-keys", map[string]any{"name": "other", "tenant": "other"}, &other)
			setting := map[string]any{"long_term": true, "tools": true, "model": "scripted/extract",
				"summary": map[string]any{"model": "scripted/summarize", "threshold_tokens": 64}}
			a := e.createAgent(e.admin, map[string]any{"name": "rememberer", "context_window_tokens": 800, "reserve_tokens": 32, "memory": setting})
			b := e.createAgent(other.Key, map[string]any{"name": "rememberer", "memory": setting})

			first := e.chatAs(e.admin, a.ID, "ada", "", "I moved to Berlin last year.")
			e.srv.memories.learning.Wait()
			var recallAnswer api.ChatAnswer
			recalled := func(key, agent, user string) []api.RagFragment {
				t.Helper()
				ans := e.chatAs(key, agent, user, "", "Lives in Berlin?")
				if user == "ada" && key == e.admin {
					recallAnswer = ans
				}
				var out []api.RagFragment
				for _, f := range ans.RagFragments {
					if f.KnowledgeBaseID == "memory" {
						out = append(out, f)
					}
				}
				e.srv.memories.learning.Wait()
				return out
			}
			if got := recalled(e.admin, a.ID, "ada"); len(got) != 1 || got[0].Content != "Lives in Berlin." {
				t.Fatalf("ada's new session recalled %+v", got)
			}
			if got := recalled(e.admin, a.ID, "bob"); len(got) != 0 {
				t.Fatalf("bob recalled ada's facts: %+v", got)
			}
			if got := recalled(other.Key, b.ID, "ada"); len(got) != 0 {
				t.Fatalf("the other tenant's ada recalled %+v", got)
			}
			// The memory tools are the agent's.
			eng, err := e.srv.engineFor(context.Background(), withTenant(a, e.tenant()), mustModel(t, e.srv), turnInput{agent: withTenant(a, e.tenant())})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, sp := range eng.specs {
				names = append(names, sp.Name)
			}
			if strings.Join(names, ",") != "remember,recall,forget" {
				t.Fatalf("the agent's tools are %q", names)
			}

			// A long conversation: what slides out is folded.
			session := first.SessionID
			for i := range 8 {
				e.chatAs(e.admin, a.ID, "ada", session, fmt.Sprintf("Turn %d: my word is zebra, and here are some more words to fill the window up quickly. %s", i, strings.Repeat("More filler words follow here. ", 8)))
				e.srv.summarizerFor(withTenant(a, e.tenant())).Wait()
			}
			last := e.chatAs(e.admin, a.ID, "ada", session, "What is my word?")
			var sess api.Session
			e.do(e.admin, "GET", "/v1/sessions/"+session, nil, &sess)
			if sess.Summary == nil || sess.Summary.Text != "The user told their word, zebra." || sess.Summary.ThroughMessageID == "" {
				t.Fatalf("the session's summary = %+v", sess.Summary)
			}
			var tr turnTrace
			e.srv.ledger.flush(context.Background())
			if resp := e.do(e.admin, "GET", "/v1/sessions/"+session+"/messages/"+last.MessageID+"/trace", nil, &tr); resp.StatusCode != http.StatusOK || tr.Summary != sess.Summary.Text {
				t.Fatalf("the trace's summary = %q (%d)", tr.Summary, resp.StatusCode)
			}
			e.do(e.admin, "GET", "/v1/sessions/"+recallAnswer.SessionID+"/messages/"+recallAnswer.MessageID+"/trace", nil, &tr)
			var sawMemory bool
			for _, st := range tr.Steps {
				for _, h := range st.Hits {
					sawMemory = sawMemory || h.KnowledgeBaseID == "memory"
				}
			}
			if !sawMemory {
				t.Fatalf("the trace shows no recall of memory: %+v", tr.Steps)
			}
		})
	}
}

func withTenant(a meta.Agent, tenant string) meta.Agent {
	a.TenantID = tenant
	return a
}

func mustModel(t *testing.T, s *Server) *llm.Model {
	t.Helper()
	m, err := s.model("")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRetention: a tenant's retention is set and read through the API,
// checked, and the sweep deletes that tenant's sessions not updated
// within it (messages and registry, traces with them) and its older
// traces, on SQLite and PostgreSQL; another tenant's stay.
func TestRetention(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			e, dump := newMemoryEnv(t, backend)
			ctx := context.Background()
			var other struct{ Key string }
			e.do(e.admin, "POST", "/v1/api-keys", map[string]any{"name": "other", "tenant": "other"}, &other)
			var r meta.Retention
			if e.do(e.admin, "GET", "/v1/retention", nil, &r); r.SessionsDays != 0 || r.TracesDays != 0 {
				t.Fatalf("a new tenant's retention = %+v", r)
			}
			if resp := e.do(e.admin, "PUT", "/v1/retention", map[string]any{"sessions_days": 30, "traces_days": 2}, &r); resp.StatusCode != http.StatusOK || r.SessionsDays != 30 || r.TracesDays != 2 {
				t.Fatalf("set retention: %d %+v", resp.StatusCode, r)
			}
			for _, c := range []struct{ body, field string }{
				{`{"sessions_days": -1}`, `"sessions_days"`},
				{`{"traces_days": 4000}`, `"traces_days"`},
				{`{"traces_days": 30}`, `"traces_days": this server keeps traces at most`},
			} {
				eb := e.wantError(e.do(e.admin, "PUT", "/v1/retention", c.body, nil), http.StatusBadRequest, CodeInvalidRequest)
				if !strings.Contains(eb.Error.Message, c.field) {
					t.Errorf("PUT %s: %q does not name %s", c.body, eb.Error.Message, c.field)
				}
			}
			a := e.createAgent(e.admin, map[string]any{"name": "a"})
			b := e.createAgent(other.Key, map[string]any{"name": "a"})
			old := e.chatAs(e.admin, a.ID, "u", "", "old words quagga1")
			fresh := e.chatAs(e.admin, a.ID, "u", "", "fresh words")
			theirs := e.chatAs(other.Key, b.ID, "u", "", "their words quagga1")
			e.srv.ledger.flush(ctx)
			e.srv.touches.flush(ctx)

			// 31 days later for old, 3 for fresh: old goes, fresh's trace goes.
			now := time.Now()
			ms := e.srv.meta.(*meta.SQL)
			if err := e.srv.sweepRetention(ctx, now.Add(31*24*time.Hour)); err != nil {
				t.Fatal(err)
			}
			e.wantError(e.do(e.admin, "GET", "/v1/sessions/"+old.SessionID, nil, nil), http.StatusNotFound, CodeNotFound)
			e.wantError(e.do(e.admin, "GET", "/v1/sessions/"+fresh.SessionID, nil, nil), http.StatusNotFound, CodeNotFound)
			if resp := e.do(other.Key, "GET", "/v1/sessions/"+theirs.SessionID, nil, nil); resp.StatusCode != http.StatusOK {
				t.Fatalf("the other tenant's session: %d", resp.StatusCode)
			}
			if got := containing(dump(), "", "quagga1"); len(got) == 0 || len(containing(got, "", "old words")) > 0 {
				t.Fatalf("after the sweep, rows with quagga1: %q", got)
			}
			// Traces alone: a session kept, its trace past the retention.
			kept := e.chatAs(e.admin, a.ID, "u", "", "kept words")
			e.srv.ledger.flush(ctx)
			if err := e.srv.sweepRetention(ctx, now.Add(3*24*time.Hour)); err != nil {
				t.Fatal(err)
			}
			if resp := e.do(e.admin, "GET", "/v1/sessions/"+kept.SessionID, nil, nil); resp.StatusCode != http.StatusOK {
				t.Fatalf("a session within its retention: %d", resp.StatusCode)
			}
			e.wantError(e.do(e.admin, "GET", "/v1/sessions/"+kept.SessionID+"/messages/"+kept.MessageID+"/trace", nil, nil), http.StatusNotFound, CodeNotFound)
			if resp := e.do(other.Key, "GET", "/v1/sessions/"+theirs.SessionID+"/messages/"+theirs.MessageID+"/trace", nil, nil); resp.StatusCode != http.StatusOK {
				t.Fatalf("the other tenant's trace: %d", resp.StatusCode)
			}
			// Zeros remove the setting.
			if e.do(e.admin, "PUT", "/v1/retention", map[string]any{}, &r); r.SessionsDays != 0 {
				t.Fatalf("reset: %+v", r)
			}
			if list, _ := ms.Retentions(ctx, e.tenant()); len(list) != 0 {
				t.Fatalf("after a reset the tenant has %+v", list)
			}
		})
	}
}
