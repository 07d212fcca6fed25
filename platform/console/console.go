// Package console is the web console of weft serve: a single-page
// application served at "/" on the API's own origin, embedded in the binary
// so that it works offline and needs no Node to build or run.
//
// The console is static assets only. It holds no server-side session and
// bypasses nothing: every piece of data comes from the /v1 API, called by
// the browser with the user's API key in the Authorization header (the key
// lives in sessionStorage, never in a URL or a cookie).
//
// The front end is plain JavaScript modules, with no build step and no
// third-party code. Model output is Markdown rendered by a small renderer
// (assets/markdown.js) that builds DOM nodes and sets text with textContent
// only — it never parses HTML, so no sanitizer is needed and a
// prompt-injected answer cannot run script; links are kept only for http,
// https and mailto. A vendored Markdown library plus an HTML sanitizer
// (marked + DOMPurify) would render more of CommonMark, but would add ~60 KB,
// an npm pinning check in CI, and an innerHTML sink whose safety rests on the
// sanitizer's configuration; the subset chat answers use (paragraphs,
// headings, lists, code, quotes, emphasis, links) is small enough to build
// directly. Defence in depth: responses carry a Content-Security-Policy with
// no inline script, frame-ancestors 'none', and Trusted Types required, so an
// HTML string reaching a DOM sink would throw rather than run.
//
// Assets are served under /assets/<version>/, where the version is a hash
// of all asset bytes: they are cached as immutable, and index.html (never
// cached) names the current version. Each asset is gzip-compressed once, at
// start, and served compressed to clients that accept it.
package console

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"sort"
	"strconv"
	"strings"
)

//go:embed assets
var assets embed.FS

// contentSecurityPolicy is the policy of every console response: scripts,
// styles and connections from the console's own origin only, no inline
// script or style, no framing, and Trusted Types required for DOM sinks
// that parse HTML (the console uses none).
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; " +
	"frame-ancestors 'none'; require-trusted-types-for 'script'; trusted-types 'none'"

// file is one asset, ready to serve.
type file struct {
	body, gz    []byte
	contentType string
	etag        string
}

// handler serves the console.
type handler struct {
	version  string
	index    file
	files    map[string]file
	fallback http.Handler
}

// Handler returns the console's handler. It answers GET and HEAD for "/"
// (the application) and "/assets/<version>/<name>"; every other request goes
// to fallback (the API's not-found answer).
func Handler(fallback http.Handler) http.Handler {
	h, err := newHandler(assets, fallback)
	if err != nil {
		// The assets are embedded at build time: failing here is a build
		// defect, not a runtime condition.
		panic("console: " + err.Error())
	}
	return h
}

func newHandler(fsys fs.FS, fallback http.Handler) (*handler, error) {
	sub, err := fs.Sub(fsys, "assets")
	if err != nil {
		return nil, err
	}
	var names []string
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, p)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	sum := sha256.New()
	raw := map[string][]byte{}
	for _, n := range names {
		b, err := fs.ReadFile(sub, n)
		if err != nil {
			return nil, err
		}
		raw[n] = b
		sum.Write([]byte(n + "\x00"))
		sum.Write(b)
		sum.Write([]byte{0})
	}
	h := &handler{version: hex.EncodeToString(sum.Sum(nil))[:16], files: map[string]file{}, fallback: fallback}
	for n, b := range raw {
		if n == "index.html" {
			b = bytes.ReplaceAll(b, []byte(`"/assets/`), []byte(`"/assets/`+h.version+`/`))
			h.index = newFile(n, b)
			continue
		}
		h.files[n] = newFile(n, b)
	}
	if h.index.body == nil {
		return nil, fs.ErrNotExist
	}
	return h, nil
}

func newFile(name string, b []byte) file {
	ct := mime.TypeByExtension(path.Ext(name))
	switch path.Ext(name) {
	case ".js":
		ct = "text/javascript; charset=utf-8"
	case ".css":
		ct = "text/css; charset=utf-8"
	case ".html":
		ct = "text/html; charset=utf-8"
	case ".svg":
		ct = "image/svg+xml"
	}
	if ct == "" {
		ct = "application/octet-stream"
	}
	var gz bytes.Buffer
	w, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	w.Write(b)
	w.Close()
	s := sha256.Sum256(b)
	f := file{body: b, contentType: ct, etag: `"` + hex.EncodeToString(s[:8]) + `"`}
	if gz.Len() < len(b) {
		f.gz = gz.Bytes()
	}
	return f
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.fallback.ServeHTTP(w, r)
		return
	}
	switch p := r.URL.Path; {
	case p == "/":
		h.serve(w, r, h.index, "no-cache")
	case strings.HasPrefix(p, "/assets/"):
		rest := strings.TrimPrefix(p, "/assets/")
		ver, name, ok := strings.Cut(rest, "/")
		f, found := h.files[name]
		if !ok || ver != h.version || !found {
			h.fallback.ServeHTTP(w, r)
			return
		}
		h.serve(w, r, f, "public, max-age=31536000, immutable")
	default:
		h.fallback.ServeHTTP(w, r)
	}
}

// setSecurityHeaders sets the headers every console response carries.
func setSecurityHeaders(hdr http.Header) {
	hdr.Set("Content-Security-Policy", contentSecurityPolicy)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("X-Frame-Options", "DENY")
	hdr.Set("Referrer-Policy", "no-referrer")
	hdr.Set("Cross-Origin-Opener-Policy", "same-origin")
	hdr.Set("Cross-Origin-Resource-Policy", "same-origin")
	hdr.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
}

func (h *handler) serve(w http.ResponseWriter, r *http.Request, f file, cache string) {
	hdr := w.Header()
	setSecurityHeaders(hdr)
	hdr.Set("Content-Type", f.contentType)
	hdr.Set("Cache-Control", cache)
	hdr.Set("ETag", f.etag)
	hdr.Add("Vary", "Accept-Encoding")
	if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, f.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := f.body
	if f.gz != nil && acceptsGzip(r.Header.Get("Accept-Encoding")) {
		body = f.gz
		hdr.Set("Content-Encoding", "gzip")
	}
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// acceptsGzip reports whether an Accept-Encoding header allows gzip (and
// does not refuse it with q=0).
func acceptsGzip(ae string) bool {
	for part := range strings.SplitSeq(ae, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.TrimSpace(name) != "gzip" {
			continue
		}
		params = strings.ReplaceAll(params, " ", "")
		return !strings.HasPrefix(params, "q=0") || strings.HasPrefix(params, "q=0.") && strings.Trim(params[4:], "0") != ""
	}
	return false
}
