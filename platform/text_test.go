package platform

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/provider/scripted"
)

// newPostgresEnv is newEnv over a PostgreSQL metadata store in a schema of
// its own; it skips without WEFT_TEST_POSTGRES_URL (CI sets it).
func newPostgresEnv(t *testing.T) *testEnv {
	t.Helper()
	ctx := context.Background()
	store := openTestPostgres(t)
	admin, err := Bootstrap(ctx, store, "")
	if err != nil {
		t.Fatal(err)
	}
	model := scripted.New(scripted.Echo())
	srv, err := New(Config{
		Meta: store, Sessions: memory.NewInMemory(), RateLimit: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OpenModel: func(spec string) (*llm.Model, error) {
			return llm.New(model, llm.WithName(spec), llm.WithRetries(0)), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, model) // for its helpers; its server is replaced
	e.srv, e.admin = srv, admin
	e.http.Config.Handler = srv
	return e
}

// Text PostgreSQL cannot store is a 400 that names the field, on every
// store (PostgreSQL answered 500 with no cause logged; SQLite stored it).
func TestUnstorableText(t *testing.T) {
	for name, open := range map[string]func(*testing.T) *testEnv{
		"sqlite":   func(t *testing.T) *testEnv { return newEnv(t, nil) },
		"postgres": newPostgresEnv,
	} {
		t.Run(name, func(t *testing.T) {
			e := open(t)
			a := e.createAgent(e.admin, map[string]any{"name": "fine"})
			var kb struct{ ID string }
			if resp := e.do(e.admin, "POST", "/v1/knowledge-bases", map[string]any{"name": "kb"}, &kb); resp.StatusCode != http.StatusCreated {
				t.Fatalf("create kb: %d %s", resp.StatusCode, body(resp))
			}
			for _, c := range []struct{ method, path, body, field string }{
				{"POST", "/v1/agents", `{"name": "a\u0000b"}`, `"name"`},
				{"POST", "/v1/agents", "{\"name\": \"ok\", \"system_prompt\": \"bad \xff\xfe\"}", `"system_prompt"`},
				{"POST", "/v1/agents", `{"name": "ok", "retrieval": {"mode": "x\u0000"}}`, `"retrieval.mode"`},
				{"POST", "/v1/agents", `{"name": "ok", "knowledge_base_ids": ["a", "\u0000"]}`, `"knowledge_base_ids[1]"`},
				{"POST", "/v1/agents", `{"name": "ok", "odd\u0000key": 1}`, `odd\x00key`},
				{"PUT", "/v1/agents/" + a.ID, `{"name": "fine", "system_prompt": "\u0000"}`, `"system_prompt"`},
				{"POST", "/v1/agents/" + a.ID + "/chat", `{"query": "hi\u0000"}`, `"query"`},
				{"POST", "/v1/knowledge-bases/" + kb.ID + "/documents", `{"name": "doc\u0000", "content": "x"}`, `"name"`},
				{"POST", "/v1/knowledge-bases/" + kb.ID + "/documents", `{"name": "doc", "content": "x\u0000y"}`, `"content"`},
				{"POST", "/v1/api-keys", `{"name": "k\u0000"}`, `"name"`},
			} {
				eb := e.wantError(e.do(e.admin, c.method, c.path, c.body, nil), http.StatusBadRequest, CodeInvalidRequest)
				if !strings.Contains(eb.Error.Message, c.field) {
					t.Errorf("%s %s %s: message %q does not name %s", c.method, c.path, c.body, eb.Error.Message, c.field)
				}
			}
			// Multipart uploads: the name field, and the file name.
			for _, c := range []struct{ filename, name string }{
				{"ok.txt", "bad\x00name"},
				{"bad\xff.txt", ""},
			} {
				var buf bytes.Buffer
				mw := multipart.NewWriter(&buf)
				fw, _ := mw.CreateFormFile("file", c.filename)
				fw.Write([]byte("hello"))
				if c.name != "" {
					mw.WriteField("name", c.name)
				}
				mw.Close()
				req, _ := http.NewRequest("POST", e.http.URL+"/v1/knowledge-bases/"+kb.ID+"/documents", &buf)
				req.Header.Set("Authorization", "Bearer "+e.admin)
				req.Header.Set("Content-Type", mw.FormDataContentType())
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				eb := e.wantError(resp, http.StatusBadRequest, CodeInvalidRequest)
				resp.Body.Close()
				if !strings.Contains(eb.Error.Message, `"name"`) {
					t.Errorf("multipart %q/%q: %q", c.filename, c.name, eb.Error.Message)
				}
			}
			// Nothing was stored.
			var agents []meta.Agent
			e.do(e.admin, "GET", "/v1/agents", nil, &agents)
			if len(agents) != 1 {
				t.Fatalf("agents = %+v", agents)
			}
		})
	}
}

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// An unexpected 500 logs its cause (it logged only the status).
func TestInternalErrorLogsCause(t *testing.T) {
	var logs syncBuffer
	e := newEnv(t, nil, func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	e.do(e.admin, "GET", "/v1/agents", nil, nil) // caches the key
	e.srv.meta.Close()
	eb := e.wantError(e.do(e.admin, "GET", "/v1/agents", nil, nil), http.StatusInternalServerError, CodeInternal)
	if strings.Contains(eb.Error.Message, "closed") {
		t.Fatalf("the cause reached the client: %q", eb.Error.Message)
	}
	if out := logs.String(); !strings.Contains(out, "status=500") || !strings.Contains(out, "database is closed") {
		t.Fatalf("log lacks the cause:\n%s", out)
	}
}

// /readyz says only ready or not, unless an admin key asks.
func TestReadyzDetailsForAdminsOnly(t *testing.T) {
	e := newEnv(t, nil)
	var member keyResponse
	e.do(e.admin, "POST", "/v1/api-keys", map[string]any{"name": "member"}, &member)
	for _, key := range []string{"", member.Key, "wk_key_nope_nope"} {
		resp := e.do(key, "GET", "/readyz", nil, nil)
		if got := strings.TrimSpace(body(resp)); resp.StatusCode != http.StatusOK || got != `{"status":"ready"}` {
			t.Fatalf("key %q: %d %s", key, resp.StatusCode, got)
		}
	}
	var got struct {
		Status string
		Checks map[string]string
	}
	e.do(e.admin, "GET", "/readyz", nil, &got)
	if got.Status != "ready" || got.Checks["meta"] != "ok" {
		t.Fatalf("admin: %+v", got)
	}
}

// FuzzCheckJSONText: whatever the body, the check does not panic, and a
// valid JSON body it lets through holds only storable text.
func FuzzCheckJSONText(f *testing.F) {
	for _, s := range []string{`{"a": "b"}`, `{"a": ["\u0000"]}`, "{\"a\": \"\xff\"}", `[{"k\u0000": 1}]`, `"\u0000"`, `{"a": {"b": [1, {"c": "d"}]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if checkJSONText(raw) != nil || !json.Valid(raw) {
			return
		}
		if !utf8.Valid(raw) {
			t.Fatalf("invalid UTF-8 let through: %q", raw)
		}
		var v any
		json.Unmarshal(raw, &v)
		var walk func(any)
		walk = func(v any) {
			switch v := v.(type) {
			case string:
				if strings.IndexByte(v, 0) >= 0 {
					t.Fatalf("NUL let through: %q", raw)
				}
			case []any:
				for _, x := range v {
					walk(x)
				}
			case map[string]any:
				for k, x := range v {
					walk(k)
					walk(x)
				}
			}
		}
		walk(v)
	})
}
