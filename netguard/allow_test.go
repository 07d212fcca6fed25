package netguard_test

import (
	"strings"
	"testing"

	"github.com/weftlabs/weft/netguard"
)

func TestParseAllowList(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"", " , ", "api.internal", "10.0.0.0/8, 127.0.0.1 ,::1", "[fd00::1]", "Host.Example."} {
		if _, err := netguard.ParseAllowList(ok); err != nil {
			t.Errorf("ParseAllowList(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "http://api", "api:8080", "a b", "1.2.3.4/x"} {
		if _, err := netguard.ParseAllowList(bad); err == nil || !strings.Contains(err.Error(), "allow list entry") {
			t.Errorf("ParseAllowList(%q) = %v, want an error naming the entry", bad, err)
		}
	}
}

func FuzzParseAllowList(f *testing.F) {
	for _, s := range []string{"", "a,b", "10.0.0.0/8", "::1", "[::1]", "x/y", "1.2.3.4/32,host"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// Never panics; an accepted list makes a usable client.
		if _, err := netguard.ParseAllowList(s); err != nil {
			return
		}
		if _, err := netguard.NewClient(netguard.WithAllow(s)); err != nil {
			t.Fatalf("ParseAllowList accepted %q but NewClient refused it: %v", s, err)
		}
	})
}
