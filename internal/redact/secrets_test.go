package redact

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"
)

const testKey = `sk-live+Key/with"odd<chars>0123456789`

func TestSecretsText(t *testing.T) {
	var s Secrets
	s.Add(testKey, "short", "  ")
	esc := `sk-live+Key/with\"odd\u003cchars\u003e0123456789`
	tests := []struct{ in, want string }{
		{"nothing here", "nothing here"},
		{"key " + testKey + " twice " + testKey, "key [redacted] twice [redacted]"},
		{`{"echo":"` + esc + `"}`, `{"echo":"[redacted]"}`},
		{`{"echo":"sk-live+Key/with\"odd<chars>0123456789"}`, `{"echo":"[redacted]"}`},
		{"https://h/x?k=" + url.QueryEscape(testKey), "https://h/x?k=[redacted]"},
		{"https://h/" + url.PathEscape(testKey), "https://h/[redacted]"},
		{"short stays short", "short stays short"},
		// Credentials whatever their value.
		{"Authorization: Bearer abc.def-ghi", "Authorization: [redacted]"},
		{`{"authorization":"Basic dXNlcjpwYXNz"}`, `{"authorization":"[redacted]"}`},
		{`{\"Authorization\":\"Bearer tok-12345678\"}`, `{\"Authorization\":\"[redacted]\"}`},
		{"x-api-key: sk-ant-0123456789", "x-api-key: [redacted]"},
		{"api_key=abcd1234&x=1", "api_key=[redacted]&x=1"},
		{"map[Authorization:[Bearer tok-12345678]]", "map[Authorization:[Bearer [redacted]]]"},
		{"use a bearer token-0123456789 here", "use a bearer [redacted] here"},
		{"the bearer token is missing", "the bearer token is missing"},
		{"redis://:s3cret@cache:6379", "redis://:xxxxx@cache:6379"},
	}
	for _, tt := range tests {
		if got := s.Text(tt.in); got != tt.want {
			t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	var none *Secrets
	if got := none.Text("Authorization: Bearer abcdefgh " + testKey); got != "Authorization: [redacted] "+testKey {
		t.Errorf("nil Secrets: %q", got)
	}
}

// TestSecretsOverlap: a value that contains another goes whole.
func TestSecretsOverlap(t *testing.T) {
	var s Secrets
	s.Add("abcdefgh", "abcdefgh-ijklmnop")
	if got := s.Text("x abcdefgh-ijklmnop y abcdefgh"); got != "x [redacted] y [redacted]" {
		t.Fatal(got)
	}
}

func TestSecretsError(t *testing.T) {
	var s Secrets
	s.Add(testKey)
	base := errors.New("upstream said " + testKey)
	err := s.Error(fmt.Errorf("call: %w", base))
	if strings.Contains(err.Error(), testKey) || !strings.Contains(err.Error(), Placeholder) || !errors.Is(err, base) {
		t.Fatalf("%v", err)
	}
	clean := errors.New("clean")
	if s.Error(clean) != clean || s.Error(nil) != nil {
		t.Fatal("Error changed an error with nothing to redact")
	}
}

type leaky struct{ Key string }

func TestSecretsHandler(t *testing.T) {
	var s Secrets
	s.Add(testKey)
	var buf bytes.Buffer
	log := slog.New(s.Handler(slog.NewJSONHandler(&buf, nil)))
	if s.Handler(log.Handler()) != log.Handler() {
		t.Fatal("Handler wrapped its own handler again")
	}
	log = log.With("ctx", "k="+testKey).WithGroup("g")
	log.Info("upstream answered "+testKey, "err", errors.New("echo "+testKey), "s", testKey,
		slog.Group("in", "v", testKey), "any", leaky{testKey}, "n", 3, "auth", "Authorization: Bearer tok-12345678")
	out := buf.String()
	if strings.Contains(out, testKey) || strings.Contains(out, "sk-live") || strings.Contains(out, "tok-12345678") {
		t.Fatalf("a secret was logged: %s", out)
	}
	if strings.Count(out, Placeholder) != 7 || !strings.Contains(out, `"n":3`) {
		t.Fatalf("log line %s", out)
	}
}

func FuzzSecretsText(f *testing.F) {
	f.Add("key sk-live-0123456789 Authorization: Bearer abc.def api_key=x https://u:p@h")
	f.Add(`{"error":{"message":"Bearer sk-live-0123456789"}}`)
	var s Secrets
	s.Add("sk-live-0123456789", `pa"ss\word<1>`)
	f.Fuzz(func(t *testing.T, in string) {
		got := s.Text(in)
		if strings.Contains(got, "sk-live-0123456789") || strings.Contains(got, `pa"ss\word<1>`) {
			t.Fatalf("Text(%q) = %q keeps a secret", in, got)
		}
		if again := s.Text(got); again != got {
			t.Fatalf("not idempotent: %q → %q → %q", in, got, again)
		}
	})
}
