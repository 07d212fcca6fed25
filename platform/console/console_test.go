package console

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
)

func notFound() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "fallback", http.StatusNotFound) })
}

func get(t *testing.T, h http.Handler, path string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

var assetRef = regexp.MustCompile(`"/assets/([0-9a-f]{16})/([a-z]+\.(?:js|css))"`)

func TestIndexAndAssets(t *testing.T) {
	h := Handler(notFound())
	rec := get(t, h, "/")
	if rec.Code != 200 || rec.Header().Get("Cache-Control") != "no-cache" {
		t.Fatalf("GET /: %d, Cache-Control %q", rec.Code, rec.Header().Get("Cache-Control"))
	}
	refs := assetRef.FindAllStringSubmatch(rec.Body.String(), -1)
	if len(refs) != 2 {
		t.Fatalf("index.html names %d versioned assets, want 2:\n%s", len(refs), rec.Body)
	}
	for _, ref := range refs {
		path := "/assets/" + ref[1] + "/" + ref[2]
		rec := get(t, h, path, "Accept-Encoding", "gzip, deflate, br")
		if rec.Code != 200 || rec.Header().Get("Content-Encoding") != "gzip" || !strings.Contains(rec.Header().Get("Cache-Control"), "immutable") {
			t.Fatalf("GET %s: %d, encoding %q, cache %q", path, rec.Code, rec.Header().Get("Content-Encoding"), rec.Header().Get("Cache-Control"))
		}
		zr, err := gzip.NewReader(rec.Body)
		if err != nil {
			t.Fatal(err)
		}
		plain, _ := io.ReadAll(zr)
		raw := get(t, h, path)
		if raw.Header().Get("Content-Encoding") != "" || !bytes.Equal(raw.Body.Bytes(), plain) {
			t.Fatalf("%s: the gzip and identity bodies differ", path)
		}
		if etag := raw.Header().Get("ETag"); get(t, h, path, "If-None-Match", etag).Code != http.StatusNotModified {
			t.Fatalf("%s: If-None-Match %s did not answer 304", path, etag)
		}
		// An old version is not served as if current.
		if rec := get(t, h, "/assets/0123456789abcdef/"+ref[2]); rec.Code != 404 || rec.Body.String() != "fallback\n" {
			t.Fatalf("stale version: %d %q", rec.Code, rec.Body)
		}
	}
}

func TestSecurityHeaders(t *testing.T) {
	h := Handler(notFound())
	rec := get(t, h, "/")
	csp := rec.Header().Get("Content-Security-Policy")
	for _, want := range []string{"script-src 'self'", "frame-ancestors 'none'", "default-src 'none'", "require-trusted-types-for 'script'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("CSP allows unsafe script: %q", csp)
	}
	for k, v := range map[string]string{"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"} {
		if got := rec.Header().Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

// TestNoInlineScriptOrHandlers checks the assets: no inline script, no
// inline event handlers, no HTML sinks (the CSP forbids the first two and
// Trusted Types would make the third throw; this finds them before a
// browser does).
func TestNoInlineScriptOrHandlers(t *testing.T) {
	inlineScript := regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`)
	handlerAttr := regexp.MustCompile(`(?i)<[^>]+\son[a-z]+\s*=`)
	sinks := regexp.MustCompile(`\.(innerHTML|outerHTML)\s*=|insertAdjacentHTML|document\.write|\beval\(|new Function\(`)
	entries, err := assets.ReadDir("assets")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, _ := assets.ReadFile("assets/" + e.Name())
		switch {
		case strings.HasSuffix(e.Name(), ".html"):
			if inlineScript.Match(b) || handlerAttr.Match(b) {
				t.Errorf("%s has inline script or an inline handler", e.Name())
			}
		case strings.HasSuffix(e.Name(), ".js"):
			if m := sinks.Find(b); m != nil {
				t.Errorf("%s uses %s", e.Name(), m)
			}
		}
	}
}

func TestFallback(t *testing.T) {
	h := Handler(notFound())
	for _, p := range []string{"/x", "/assets/", "/assets/app.js", "/v1/agents"} {
		if rec := get(t, h, p); rec.Code != 404 || rec.Body.String() != "fallback\n" {
			t.Errorf("GET %s: %d %q, want the fallback", p, rec.Code, rec.Body)
		}
	}
	req := httptest.NewRequest("POST", "/", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 404 {
		t.Errorf("POST /: %d", rec.Code)
	}
}

func TestVersionFollowsContent(t *testing.T) {
	fs1 := fstest.MapFS{"assets/index.html": {Data: []byte(`<script src="/assets/a.js">`)}, "assets/a.js": {Data: []byte("1")}}
	fs2 := fstest.MapFS{"assets/index.html": {Data: []byte(`<script src="/assets/a.js">`)}, "assets/a.js": {Data: []byte("2")}}
	h1, err1 := newHandler(fs1, notFound())
	h2, err2 := newHandler(fs2, notFound())
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if h1.version == h2.version {
		t.Fatal("changed assets kept their version")
	}
	if !strings.Contains(string(h1.index.body), "/assets/"+h1.version+"/a.js") {
		t.Fatalf("index not rewritten: %s", h1.index.body)
	}
	if _, err := newHandler(fstest.MapFS{"assets/a.js": {Data: []byte("1")}}, notFound()); err == nil {
		t.Fatal("no index.html: no error")
	}
}

func TestAcceptsGzip(t *testing.T) {
	for ae, want := range map[string]bool{"": false, "gzip": true, "br, gzip;q=0.5": true, "gzip;q=0": false, "gzip; q=0.0": false, "gzip;q=0.1": true, "deflate": false, "x-gzip": false} {
		if got := acceptsGzip(ae); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", ae, got, want)
		}
	}
}

// FuzzServe feeds the handler arbitrary paths and Accept-Encoding headers:
// it never panics, and answers only from the embedded files or the fallback.
func FuzzServe(f *testing.F) {
	f.Add("/", "gzip;q=0.5")
	f.Add("/assets/x/app.js", "gzip;q=")
	f.Add("/assets//", ";;q=0.")
	h := Handler(notFound())
	f.Fuzz(func(t *testing.T, path, ae string) {
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		req := httptest.NewRequest("GET", "/", nil)
		req.URL.Path = path
		req.Header.Set("Accept-Encoding", ae)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 && rec.Code != 404 {
			t.Fatalf("GET %q: %d", path, rec.Code)
		}
	})
}
