package httptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftlabs/weft/netguard"
	"github.com/weftlabs/weft/tool"
	"github.com/weftlabs/weft/tool/httptool"
	"github.com/weftlabs/weft/tool/secretref"
)

// fakeResolver answers from a map, as a DNS server under an attacker's
// control would.
type fakeResolver map[string]string

func (r fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	ip, ok := r[strings.ToLower(host)]
	if !ok {
		return nil, fmt.Errorf("no such host %s", host)
	}
	return []netip.Addr{netip.MustParseAddr(ip)}, nil
}

func echoServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		json.NewEncoder(w).Encode(map[string]any{
			"method": r.Method,
			"path":   r.URL.EscapedPath(),
			"query":  r.URL.RawQuery,
			"body":   string(body),
			"ctype":  r.Header.Get("Content-Type"),
			"auth":   r.Header.Get("Authorization"),
		})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func mustNew(t *testing.T, cfg httptool.Config, opts ...httptool.Option) *httptool.Tool {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "t"
	}
	tl, err := httptool.New(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

func call(t *testing.T, tl tool.Tool, args string) map[string]string {
	t.Helper()
	res, err := tl.Call(context.Background(), json.RawMessage(args))
	if err != nil {
		t.Fatalf("Call(%s): %v", args, err)
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(res.Content), &m); err != nil {
		t.Fatalf("result %q: %v", res.Content, err)
	}
	return m
}

func TestRequests(t *testing.T) {
	t.Parallel()
	srv := echoServer(t)
	allow := guarded(t, netguard.WithAllow("127.0.0.1"))
	cases := []struct {
		name, method, url, args string
		want                    map[string]string
	}{
		{"get query", "GET", srv.URL + "/search", `{"q":"a b&c","n":3,"tags":["x","y"],"f":true}`,
			map[string]string{"method": "GET", "path": "/search", "query": "f=true&n=3&q=a+b%26c&tags=x&tags=y", "body": ""}},
		{"get path template", "", srv.URL + "/users/{id}/repos?sort={sort}", `{"id":"a/b?c","sort":"x&y=1","page":2}`,
			map[string]string{"method": "GET", "path": "/users/a%2Fb%3Fc/repos", "query": "sort=x%26y%3D1&page=2"}},
		{"delete", "delete", srv.URL + "/items/{id}", `{"id":42}`,
			map[string]string{"method": "DELETE", "path": "/items/42", "query": ""}},
		{"post body", "POST", srv.URL + "/items/{id}", `{"id":7,"name":"n","tags":["a"]}`,
			map[string]string{"method": "POST", "path": "/items/7", "body": `{"name":"n","tags":["a"]}`, "ctype": "application/json"}},
		{"post no args", "PUT", srv.URL + "/x", ``,
			map[string]string{"method": "PUT", "body": `{}`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tl := mustNew(t, httptool.Config{Method: c.method, URL: c.url}, allow)
			got := call(t, tl, c.args)
			for k, v := range c.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func TestArgumentErrors(t *testing.T) {
	t.Parallel()
	srv := echoServer(t)
	tl := mustNew(t, httptool.Config{URL: srv.URL + "/u/{id}", Parameters: json.RawMessage(`{"type":"object","required":["id","kind"]}`)},
		guarded(t, netguard.WithAllow("127.0.0.1")))
	cases := []struct{ args, field string }{
		{`{"kind":1}`, "id"},
		{`{"id":1}`, "kind"},
		{`{"id":{"a":1},"kind":1}`, "id"},
		{`{"id":"..","kind":1}`, "id"},
		{`{"id":1,"kind":[{}]}`, "kind"},
		{`[1]`, ""},
		{`{"id":`, ""},
	}
	for _, c := range cases {
		_, err := tl.Call(context.Background(), json.RawMessage(c.args))
		var ae *tool.ArgumentError
		if !errors.As(err, &ae) || ae.Field != c.field {
			t.Errorf("Call(%s) = %v, want ArgumentError on %q", c.args, err, c.field)
		}
	}
}

func TestNewRejects(t *testing.T) {
	t.Parallel()
	cases := []httptool.Config{
		{Name: "bad name", URL: "https://example.com"},
		{Name: "t", URL: ""},
		{Name: "t", URL: "example.com/x"},
		{Name: "t", URL: "ftp://example.com/x"},
		{Name: "t", URL: "https://{host}/x"},
		{Name: "t", URL: "https://api.example.com{port}/x"},
		{Name: "t", URL: "https://user:pw@example.com/x"},
		{Name: "t", URL: "https://example.com/{a"},
		{Name: "t", URL: "https://example.com/a}"},
		{Name: "t", URL: "https://example.com/{}"},
		{Name: "t", URL: "https://example.com/x#frag"},
		{Name: "t", URL: "https://example.com/x y"},
		{Name: "t", Method: "TRACE", URL: "https://example.com"},
		{Name: "t", URL: "https://example.com", Headers: map[string]string{"Bad Name": "x"}},
		{Name: "t", URL: "https://example.com", Headers: map[string]string{"X": "a\r\nInjected: 1"}},
		{Name: "t", URL: "https://example.com", Parameters: json.RawMessage(`{"type":"array"}`)},
		{Name: "t", URL: "https://example.com", Parameters: json.RawMessage(`[`)},
	}
	for _, c := range cases {
		if _, err := httptool.New(c, guarded(t, netguard.WithAllow())); err == nil {
			t.Errorf("New(%+v) succeeded", c)
		}
	}
}

func wantBlocked(t *testing.T, err error) {
	t.Helper()
	var be *netguard.BlockedError
	if !errors.As(err, &be) {
		t.Fatalf("error = %v, want a BlockedError", err)
	}
	if !strings.Contains(err.Error(), netguard.AllowEnv) {
		t.Errorf("error %q does not say how to allow the host", err)
	}
}

func TestSSRFGuard(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	port := srv.URL[strings.LastIndexByte(srv.URL, ':'):]
	resolver := netguard.WithResolver(fakeResolver{"localhost": "127.0.0.1", "rebind.example": "127.0.0.1", "meta.example": "169.254.169.254", "v6.example": "::ffff:10.1.2.3"})
	cases := []struct{ name, url string }{
		{"loopback literal", srv.URL},
		{"localhost name", "http://localhost" + port},
		{"name resolving to loopback", "http://rebind.example" + port},
		{"name resolving to metadata", "http://meta.example/latest"},
		{"name resolving to mapped private", "http://v6.example/"},
		{"metadata literal", "http://169.254.169.254/latest/meta-data"},
		{"metadata ipv6", "http://[fd00:ec2::254]/latest"},
		{"metadata name", "http://metadata.google.internal/computeMetadata/v1"},
		{"private", "http://10.0.0.1/"},
		{"cgnat", "http://100.64.0.1/"},
		{"unspecified", "http://0.0.0.0" + port},
		{"ipv6 loopback", "http://[::1]" + port},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tl := mustNew(t, httptool.Config{URL: c.url}, guarded(t, resolver, netguard.WithAllow()))
			_, err := tl.Call(context.Background(), nil)
			wantBlocked(t, err)
		})
	}
	t.Run("allowed by CIDR", func(t *testing.T) {
		t.Parallel()
		tl := mustNew(t, httptool.Config{URL: "http://rebind.example" + port}, guarded(t, resolver, netguard.WithAllow("127.0.0.0/8")))
		if _, err := tl.Call(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("allowed by host name", func(t *testing.T) {
		t.Parallel()
		tl := mustNew(t, httptool.Config{URL: "http://REBIND.example" + port}, guarded(t, resolver, netguard.WithAllow("rebind.example")))
		if _, err := tl.Call(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
	})
}

func TestRedirects(t *testing.T) {
	t.Parallel()
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "secret")
	}))
	t.Cleanup(internal.Close)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-internal":
			http.Redirect(w, r, internal.URL+"/", http.StatusFound)
		case "/to-metadata":
			http.Redirect(w, r, "http://metadata.google.internal/", http.StatusFound)
		case "/to-file":
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/once":
			http.Redirect(w, r, "/done", http.StatusFound)
		default:
			fmt.Fprint(w, "done")
		}
	}))
	t.Cleanup(front.Close)
	// The front server is "public": reachable by its name only.
	port := front.URL[strings.LastIndexByte(front.URL, ':'):]
	opts := []httptool.Option{guarded(t, netguard.WithAllow("public.example"), netguard.WithResolver(fakeResolver{"public.example": "127.0.0.1"}))}
	base := "http://public.example" + port

	res, err := mustNew(t, httptool.Config{URL: base + "/once"}, opts...).Call(context.Background(), nil)
	if err != nil || res.Content != "done" {
		t.Fatalf("same-host redirect: %q, %v", res.Content, err)
	}
	_, err = mustNew(t, httptool.Config{URL: base + "/to-internal"}, opts...).Call(context.Background(), nil)
	wantBlocked(t, err)
	_, err = mustNew(t, httptool.Config{URL: base + "/to-metadata"}, opts...).Call(context.Background(), nil)
	wantBlocked(t, err)
	for _, p := range []string{"/to-file", "/loop"} {
		if _, err := mustNew(t, httptool.Config{URL: base + p}, opts...).Call(context.Background(), nil); err == nil {
			t.Errorf("%s: no error", p)
		}
	}
}

func TestResponses(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/huge":
			w.Write([]byte(strings.Repeat("é", 1000))) // 2000 bytes
		case "/missing":
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":"no such user"}`+strings.Repeat(".", 2000))
		case "/hang":
			select {
			case <-r.Context().Done():
			case <-release:
			}
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	allow := guarded(t, netguard.WithAllow("127.0.0.1"))

	res, err := mustNew(t, httptool.Config{URL: srv.URL + "/huge", MaxResponseBytes: 101}, allow).Call(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat("é", 50) + "\n[response truncated: it exceeded 101 bytes]"
	if res.Content != want {
		t.Errorf("truncated content = %q, want %q", res.Content, want)
	}

	_, err = mustNew(t, httptool.Config{URL: srv.URL + "/missing"}, allow).Call(context.Background(), nil)
	var se *httptool.StatusError
	if !errors.As(err, &se) || se.StatusCode != 404 || !strings.Contains(err.Error(), "no such user") || len(se.Body) > 520 {
		t.Errorf("404: %v", err)
	}

	_, err = mustNew(t, httptool.Config{URL: srv.URL + "/hang", Timeout: 50 * time.Millisecond}, allow).Call(context.Background(), nil)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no complete response within 50ms") {
		t.Errorf("hang: %v", err)
	}

	res, err = mustNew(t, httptool.Config{URL: srv.URL + "/empty", Method: "POST"}, allow).Call(context.Background(), nil)
	if err != nil || !strings.Contains(res.Content, "204") {
		t.Errorf("empty: %q, %v", res.Content, err)
	}
}

func TestSecretHeaders(t *testing.T) {
	t.Parallel()
	var sent atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent.Store(r.Header.Get("Authorization"))
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusForbidden)
		}
		// Echo the request's headers, as a debugging endpoint would.
		json.NewEncoder(w).Encode(map[string]any{"auth": r.Header.Get("Authorization"), "user": r.Header.Get("X-User")})
	}))
	t.Cleanup(srv.Close)
	values := map[secretref.Ref]string{{Name: "tok"}: "s3cret-token", {Name: "USER_NAME", Env: true}: "ann"}
	lookup := httptool.WithLookup(func(_ context.Context, r secretref.Ref) (string, error) {
		if v, ok := values[r]; ok {
			return v, nil
		}
		return "", fmt.Errorf("%s is not set", r)
	})
	cfg := httptool.Config{URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer ${secret:tok}", "X-User": "${USER_NAME}"}}
	tl := mustNew(t, cfg, guarded(t, netguard.WithAllow("127.0.0.1")), lookup)
	res, err := tl.Call(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := sent.Load(); got != "Bearer s3cret-token" {
		t.Errorf("Authorization sent = %v", got)
	}
	// The echoed secret is redacted from the result; a short value is not.
	if strings.Contains(res.Content, "s3cret") || !strings.Contains(res.Content, `"auth":"Bearer [redacted]"`) || !strings.Contains(res.Content, `"user":"ann"`) {
		t.Errorf("result = %s", res.Content)
	}
	if got := tl.Config().Headers["Authorization"]; got != "Bearer ${secret:tok}" {
		t.Errorf("stored header = %q: the config must keep the reference", got)
	}
	cfg.URL = srv.URL + "/fail"
	_, err = mustNew(t, cfg, guarded(t, netguard.WithAllow("127.0.0.1")), lookup).Call(context.Background(), nil)
	var se *httptool.StatusError
	if !errors.As(err, &se) || strings.Contains(err.Error(), "s3cret") || strings.Contains(se.Body, "s3cret") {
		t.Errorf("failed call's error = %v", err)
	}
	cfg.Headers = map[string]string{"X-Key": "${secret:missing}"}
	_, err = mustNew(t, cfg, guarded(t, netguard.WithAllow("127.0.0.1")), lookup).Call(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "${secret:missing} is not set") {
		t.Errorf("missing secret: %v", err)
	}
	// The default lookup reads the environment and has no secret store.
	cfg.Headers = map[string]string{"X-Key": "${WEFT_HTTPTOOL_TEST_UNSET}"}
	_, err = mustNew(t, cfg, guarded(t, netguard.WithAllow("127.0.0.1"))).Call(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "WEFT_HTTPTOOL_TEST_UNSET is not set") {
		t.Errorf("missing variable: %v", err)
	}
	cfg.Headers = map[string]string{"X-Key": "${secret:tok}"}
	_, err = mustNew(t, cfg, guarded(t, netguard.WithAllow("127.0.0.1"))).Call(context.Background(), nil)
	if !errors.Is(err, secretref.ErrNoStore) {
		t.Errorf("secret without a store: %v", err)
	}
}

func TestConcurrentCalls(t *testing.T) {
	t.Parallel()
	srv := echoServer(t)
	tl := mustNew(t, httptool.Config{URL: srv.URL + "/n/{i}"}, guarded(t, netguard.WithAllow("127.0.0.1")))
	errs := make(chan error, 16)
	for i := range 16 {
		go func() {
			res, err := tl.Call(context.Background(), json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)))
			if err == nil && !strings.Contains(res.Content, fmt.Sprintf(`"/n/%d"`, i)) {
				err = fmt.Errorf("call %d got %s", i, res.Content)
			}
			errs <- err
		}()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func FuzzTemplate(f *testing.F) {
	f.Add("/u/{id}/x?q={q}", "a/b", "c&d")
	f.Add("/{a}{b}", "..", ".")
	f.Add("/x?{a}={b}", "k", "%zz")
	f.Add("/{a", "", "")
	f.Fuzz(func(t *testing.T, path, a, b string) {
		tl, err := httptool.New(httptool.Config{Name: "f", URL: "http://example.com/" + path}, guarded(t, netguard.WithAllow()))
		if err != nil {
			return
		}
		args, _ := json.Marshal(map[string]string{"a": a, "b": b, "q": a, "id": b})
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // never send: only the URL building is under test
		_, err = tl.Call(ctx, args)
		if err == nil {
			t.Fatal("a cancelled call succeeded")
		}
		var ae *tool.ArgumentError
		if errors.As(err, &ae) {
			return
		}
		// The request was built: its URL must keep the configured host.
		var ue *url.Error
		if errors.As(err, &ue) {
			u, perr := url.Parse(ue.URL)
			if perr != nil || u.Host != "example.com" {
				t.Fatalf("filled URL %q escaped the host (%v)", ue.URL, perr)
			}
		}
	})
}

// guarded is the option of a tool behind a guard built from opts.
func guarded(t testing.TB, opts ...netguard.Option) httptool.Option {
	t.Helper()
	g, err := netguard.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return httptool.WithGuard(g)
}
