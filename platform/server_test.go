package platform

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/platform/meta"
	"github.com/weftlabs/weft/provider/scripted"
)

// testEnv is a running server over embedded stores and a scripted model.
type testEnv struct {
	t        testing.TB
	srv      *Server
	http     *httptest.Server
	admin    string
	model    *scripted.Model
	sessions memory.Store
}

type envOption func(*Config)

func newEnv(t testing.TB, model *scripted.Model, opts ...envOption) *testEnv {
	t.Helper()
	ctx := context.Background()
	store, err := meta.OpenSQLite(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	admin, err := Bootstrap(ctx, store, "")
	if err != nil || admin == "" {
		t.Fatalf("Bootstrap = %q, %v", admin, err)
	}
	if model == nil {
		model = scripted.New(scripted.Echo())
	}
	sessions := memory.NewInMemory()
	cfg := Config{
		Meta:     store,
		Sessions: sessions,
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		OpenModel: func(spec string) (*llm.Model, error) {
			return llm.New(model, llm.WithName(spec), llm.WithRetries(0)), nil
		},
		RateLimit: -1,
	}
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return &testEnv{t: t, srv: srv, http: hs, admin: admin, model: model, sessions: sessions}
}

// tenant returns the admin key's tenant id.
func (e *testEnv) tenant() string {
	e.t.Helper()
	id, _, _ := parseKey(e.admin)
	k, err := e.srv.meta.KeyByID(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return k.TenantID
}

// do sends a JSON request with key and decodes the answer into out (when
// not nil). It returns the response with its body read.
func (e *testEnv) do(key, method, path string, body any, out any, hdr ...string) *http.Response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		buf, _ := json.Marshal(b)
		rd = bytes.NewReader(buf)
	}
	req, _ := http.NewRequest(method, e.http.URL+path, rd)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			e.t.Fatalf("%s %s: decode %q: %v", method, path, data, err)
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(data))
	return resp
}

func body(resp *http.Response) string {
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// wantError checks status and code of an error answer.
func (e *testEnv) wantError(resp *http.Response, status int, code string) errorBody {
	e.t.Helper()
	var eb errorBody
	raw := body(resp)
	json.Unmarshal([]byte(raw), &eb)
	if resp.StatusCode != status || eb.Error.Code != code {
		e.t.Fatalf("got %d %s, want %d %s (body %s)", resp.StatusCode, eb.Error.Code, status, code, raw)
	}
	return eb
}

func (e *testEnv) createAgent(key string, fields map[string]any) meta.Agent {
	e.t.Helper()
	var a meta.Agent
	resp := e.do(key, "POST", "/v1/agents", fields, &a)
	if resp.StatusCode != http.StatusCreated {
		e.t.Fatalf("create agent: %d %s", resp.StatusCode, body(resp))
	}
	return a
}

// sseFrame is one parsed event of a stream.
type sseFrame struct {
	Event string
	Data  map[string]any
}

// readSSE parses an event stream to its end.
func readSSE(t *testing.T, r io.Reader) (frames []sseFrame, pings int) {
	t.Helper()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var cur sseFrame
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Event != "" || cur.Data != nil {
				frames = append(frames, cur)
			}
			cur = sseFrame{}
		case strings.HasPrefix(line, ":"):
			pings++
		case strings.HasPrefix(line, "event: "):
			cur.Event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.Data); err != nil {
				t.Fatalf("frame data %q: %v", line, err)
			}
		}
	}
	return frames, pings
}
