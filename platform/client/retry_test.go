package client_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/weftlabs/weft/platform/client"
)

// TestRetryAfter checks that 429 answers are waited out and retried, with
// the whole upload body each time, and that retries are bounded.
func TestRetryAfter(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	var limited int32 = 2
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		if n <= atomic.LoadInt32(&limited) {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"code":"rate_limited","message":"slow down"}}`)
			return
		}
		if r.Method == http.MethodPost {
			f, _, err := r.FormFile("file")
			if err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			b, _ := io.ReadAll(f)
			if string(b) != "the whole body" || r.FormValue("name") != "fmt/doc.go" {
				http.Error(w, "got "+string(b)+" named "+r.FormValue("name"), 400)
				return
			}
			w.WriteHeader(http.StatusAccepted)
			io.WriteString(w, `{"id":"doc1","name":"fmt/doc.go","status":"queued"}`)
			return
		}
		io.WriteString(w, `{"data":[]}`)
	}))
	defer srv.Close()

	c := client.New(srv.URL, "key")
	d, err := c.UploadDocument(t.Context(), "kb1", "fmt/doc.go", strings.NewReader("the whole body"))
	if err != nil || d.Name != "fmt/doc.go" || calls.Load() != 3 {
		t.Fatalf("upload after two 429s: %+v, %v, %d calls", d, err, calls.Load())
	}

	// A reader that cannot seek back is not retried.
	calls.Store(0)
	_, err = c.UploadDocument(t.Context(), "kb1", "fmt/doc.go", io.MultiReader(strings.NewReader("the whole body")))
	var ce *client.Error
	if !asError(err, &ce) || ce.Status != http.StatusTooManyRequests || ce.RetryAfter.Seconds() != 1 || calls.Load() != 1 {
		t.Fatalf("unseekable upload: %v, %d calls", err, calls.Load())
	}

	// Retries are bounded.
	calls.Store(0)
	atomic.StoreInt32(&limited, 100)
	_, err = client.New(srv.URL, "key", client.WithRetries(1)).ListKnowledgeBases(t.Context())
	if !asError(err, &ce) || ce.Code != client.CodeRateLimited || calls.Load() != 2 {
		t.Fatalf("bounded retries: %v, %d calls", err, calls.Load())
	}
}

func asError(err error, target **client.Error) bool {
	e, ok := err.(*client.Error)
	if ok {
		*target = e
	}
	return ok
}
