package platform

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/weftlabs/weft/platform/config"
)

// The configuration file of weft serve --config declares objects by name
// (package platform/config); the server applies them to tenant "default"
// at start, as its admin, through its own API — the same validation and
// the same code path as weft apply — without a key: the requests never
// leave the process.

// inProcessKey marks a request made by the server itself, with the
// principal it acts as. Only code in this package can set it.
type inProcessKey struct{}

// inProcess is an http.RoundTripper that serves requests with the Server's
// handler, as principal p.
type inProcess struct {
	s *Server
	p principal
}

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := &recorder{header: http.Header{}}
	t.s.ServeHTTP(rec, req.WithContext(context.WithValue(req.Context(), inProcessKey{}, t.p)))
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return &http.Response{
		StatusCode: rec.status, Status: http.StatusText(rec.status), Header: rec.header,
		Body: io.NopCloser(&rec.body), ContentLength: int64(rec.body.Len()), Request: req,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
	}, nil
}

// recorder is the http.ResponseWriter of an in-process request.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}

// applyConfig applies f's objects to tenant "default" as its admin.
func (s *Server) applyConfig(ctx context.Context, f *config.File, env config.Env) (config.Report, error) {
	t, err := s.meta.EnsureTenant(ctx, "default")
	if err != nil {
		return nil, err
	}
	keys, err := s.meta.ListKeys(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if k.Admin {
			hc := &http.Client{Transport: inProcess{s: s, p: principal{Key: k, Tenant: t.ID}}}
			return config.Apply(ctx, config.Target{BaseURL: "http://weft.in-process", HTTP: hc}, f, env)
		}
	}
	return nil, fmt.Errorf("tenant %q has no admin key", t.Name)
}
