package secretref_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/weftlabs/weft/tool/secretref"
)

func TestParse(t *testing.T) {
	t.Parallel()
	got := secretref.Parse("Bearer ${secret:api-key} ${HOME}${secret:x}$ {A} ${1A} ${secret:} ${a b} ${secret:a.b}")
	want := []secretref.Ref{{Name: "api-key"}, {Name: "HOME", Env: true}, {Name: "x"}}
	if !slices.Equal(got, want) {
		t.Fatalf("Parse = %+v, want %+v", got, want)
	}
	for _, r := range want {
		if p := secretref.Parse(r.String()); len(p) != 1 || p[0] != r {
			t.Errorf("Parse(%q) = %+v", r.String(), p)
		}
	}
}

func TestExpandAndRedact(t *testing.T) {
	t.Parallel()
	var looked []string
	lookup := func(_ context.Context, r secretref.Ref) (string, error) {
		looked = append(looked, r.String())
		switch {
		case r.Env && r.Name == "USER_ID":
			return "u-1", nil // too short to redact
		case !r.Env && r.Name == "tok":
			return `s3cr"et-value`, nil
		}
		return "", fmt.Errorf("%s is not set", r)
	}
	var red secretref.Redactor
	out, err := secretref.Expand(context.Background(), "Bearer ${secret:tok} as ${USER_ID} (${secret:tok})", lookup, &red)
	if err != nil || out != `Bearer s3cr"et-value as u-1 (s3cr"et-value)` {
		t.Fatalf("Expand = %q, %v", out, err)
	}
	if len(looked) != 2 {
		t.Errorf("looked up %v, want each reference once", looked)
	}
	echo := `{"auth":"Bearer s3cr\"et-value","raw":"s3cr"et-value","user":"u-1"}`
	if got, want := red.Redact(echo), `{"auth":"Bearer [redacted]","raw":"[redacted]","user":"u-1"}`; got != want {
		t.Errorf("Redact = %q, want %q", got, want)
	}
	if _, err := secretref.Expand(context.Background(), "${secret:nope}", lookup, nil); err == nil || !strings.Contains(err.Error(), "${secret:nope}") {
		t.Errorf("missing reference: %v", err)
	}
	base := errors.New(`upstream said: s3cr"et-value`)
	rerr := red.RedactError(base)
	if strings.Contains(rerr.Error(), "s3cr") || !errors.Is(rerr, base) {
		t.Errorf("RedactError = %v", rerr)
	}
	if out, err := secretref.Expand(context.Background(), "plain $ {x}", nil, nil); err != nil || out != "plain $ {x}" {
		t.Errorf("literal text: %q %v", out, err)
	}
}

func TestEnv(t *testing.T) {
	t.Setenv("WEFT_SECRETREF_TEST", "value-1")
	if v, err := secretref.Env(context.Background(), secretref.Ref{Name: "WEFT_SECRETREF_TEST", Env: true}); err != nil || v != "value-1" {
		t.Errorf("Env = %q, %v", v, err)
	}
	if _, err := secretref.Env(context.Background(), secretref.Ref{Name: "WEFT_SECRETREF_UNSET", Env: true}); err == nil {
		t.Error("unset variable: no error")
	}
	if _, err := secretref.Env(context.Background(), secretref.Ref{Name: "x"}); !errors.Is(err, secretref.ErrNoStore) {
		t.Errorf("secret reference: %v", err)
	}
}

func FuzzExpand(f *testing.F) {
	for _, s := range []string{"", "${A}", "${secret:b}", "x${secret:b}y${A}z", "${", "${secret:}", "$${A}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lookup := func(_ context.Context, r secretref.Ref) (string, error) { return "VALUE-" + r.Name, nil }
		var red secretref.Redactor
		out, err := secretref.Expand(context.Background(), s, lookup, &red)
		if err != nil {
			t.Fatal(err)
		}
		refs := secretref.Parse(s)
		if len(refs) == 0 && out != s {
			t.Fatalf("no references in %q but expanded to %q", s, out)
		}
		for _, r := range refs {
			if !strings.Contains(out, "VALUE-"+r.Name) {
				t.Fatalf("%q: %s not expanded in %q", s, r, out)
			}
			if strings.Contains(red.Redact(out), "VALUE-"+r.Name) {
				t.Fatalf("%q: value of %s survives redaction", s, r)
			}
		}
	})
}
