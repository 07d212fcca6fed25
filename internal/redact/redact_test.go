package redact

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

func TestURLs(t *testing.T) {
	tests := []struct{ in, want string }{
		{"nothing here", "nothing here"},
		{"redis://cache:6379/0", "redis://cache:6379/0"},
		{"redis://:s3cret@cache:6379/0", "redis://:xxxxx@cache:6379/0"},
		{`--redis: parse "redis://u:s3cret@host:port/0": invalid port ":port" after host`, `--redis: parse "redis://u:xxxxx@host:port/0": invalid port ":port" after host`},
		{"postgres://weft:p@ss/w@rd@db/weft?sslmode=disable", "postgres://weft:xxxxx@db/weft?sslmode=disable"},
		{"postgres://weft@db/weft", "postgres://weft@db/weft"},
		{"host=db user=weft password=s3cret dbname=weft", "host=db user=weft password=xxxxx dbname=weft"},
		{"host=db password='s3 c\\'ret' dbname=weft", "host=db password='xxxxx' dbname=weft"},
		{"postgres://db/weft?user=weft&PASSWORD=s3cret&sslmode=disable", "postgres://db/weft?user=weft&PASSWORD=xxxxx&sslmode=disable"},
		{"a http://x:y@h and b https://p:q@h", "a http://x:xxxxx@h and b https://p:xxxxx@h"},
		{"password=", "password="},
		{"::// trailing ://", "::// trailing ://"},
	}
	for _, tt := range tests {
		if got := URLs(tt.in); got != tt.want {
			t.Errorf("URLs(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestError(t *testing.T) {
	base := errors.New("dial")
	_, perr := url.Parse(strings.Repeat("redis://:s3cret@h:bad/0", 1)) // a bad URL on purpose
	err := Error(errors.Join(base, perr))
	if strings.Contains(err.Error(), "s3cret") || !errors.Is(err, base) {
		t.Fatalf("%v", err)
	}
	if Error(nil) != nil {
		t.Fatal("Error(nil) != nil")
	}
}

func FuzzURLs(f *testing.F) {
	f.Add("redis://:s3cret@cache:6379/0 password=x")
	f.Fuzz(func(t *testing.T, s string) {
		got := URLs(s)
		// Masking never grows a secret-free text and is idempotent.
		if !strings.Contains(s, "://") && !strings.Contains(strings.ToLower(s), "password=") && got != s {
			t.Fatalf("changed %q to %q", s, got)
		}
		if again := URLs(got); again != got {
			t.Fatalf("not idempotent: %q → %q → %q", s, got, again)
		}
	})
}
