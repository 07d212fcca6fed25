package httpapi

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// TestDefaultClientKeepsConnections: calls made many at a time to one
// HTTP/1.1 server reuse their connections in the next wave instead of
// dialling anew (http.DefaultClient keeps 2 idle per host, so most of a
// wave of 16 would dial again).
func TestDefaultClientKeepsConnections(t *testing.T) {
	const wave = 16
	var dialled atomic.Int32
	var inFlight sync.WaitGroup
	var release atomic.Pointer[chan struct{}]
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wait := *release.Load()
		inFlight.Done()
		<-wait // the whole wave is in flight at once
		io.WriteString(w, `{}`)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dialled.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c := &Client{Provider: "test"}
	for range 2 {
		inFlight.Add(wave)
		ch := make(chan struct{})
		release.Store(&ch)
		var done sync.WaitGroup
		for range wave {
			done.Go(func() {
				resp, err := c.Post(context.Background(), srv.URL, []byte(`{}`), "application/json")
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			})
		}
		inFlight.Wait()
		close(ch)
		done.Wait()
	}
	if n := dialled.Load(); n != wave {
		t.Fatalf("%d connections dialled for two waves of %d calls, want %d", n, wave, wave)
	}
}
