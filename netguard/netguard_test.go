package netguard_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/weftlabs/weft/netguard"
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

func okServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	t.Cleanup(srv.Close)
	return srv
}

func client(t *testing.T, opts ...netguard.Option) *http.Client {
	t.Helper()
	c, err := netguard.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func get(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
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

func TestGuard(t *testing.T) {
	t.Parallel()
	srv := okServer(t)
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
	c := client(t, netguard.WithAllow(), resolver)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wantBlocked(t, get(context.Background(), c, tc.url))
		})
	}
	t.Run("allowed by CIDR", func(t *testing.T) {
		t.Parallel()
		if err := get(context.Background(), client(t, netguard.WithAllow("127.0.0.0/8"), resolver), "http://rebind.example"+port); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("allowed by host name", func(t *testing.T) {
		t.Parallel()
		if err := get(context.Background(), client(t, netguard.WithAllow("rebind.example"), resolver), "http://REBIND.example"+port); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := netguard.New(netguard.WithAllow("not a host")); err == nil {
		t.Error("New accepted a bad allow list")
	}
}

func TestRedirects(t *testing.T) {
	t.Parallel()
	internal := okServer(t)
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
	c := client(t, netguard.WithAllow("public.example"), netguard.WithResolver(fakeResolver{"public.example": "127.0.0.1"}))
	base := "http://public.example" + port
	if err := get(context.Background(), c, base+"/once"); err != nil {
		t.Fatalf("same-host redirect: %v", err)
	}
	wantBlocked(t, get(context.Background(), c, base+"/to-internal"))
	wantBlocked(t, get(context.Background(), c, base+"/to-metadata"))
	for _, p := range []string{"/to-file", "/loop"} {
		if err := get(context.Background(), c, base+p); err == nil {
			t.Errorf("%s: no error", p)
		}
	}
}

func TestBlockedAddresses(t *testing.T) {
	t.Parallel()
	srv := okServer(t)
	port := srv.URL[strings.LastIndexByte(srv.URL, ':'):]
	blocked := []string{"127.0.0.1", "10.1.1.1", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.1.1",
		"100.64.0.1", "100.127.255.255", "0.0.0.0", "224.0.0.1", "255.255.255.255", "::1", "::", "fc00::1",
		"fd12::1", "fe80::1", "ff02::1", "::ffff:127.0.0.1", "64:ff9b::a00:1", "2002:7f00:1::1"}
	public := []string{"8.8.8.8", "100.63.255.255", "172.32.0.1", "2001:4860:4860::8888"}
	for _, ip := range append(blocked, public...) {
		// Each name resolves to ip; blocked addresses are refused before
		// any connection. Public ones must fail otherwise (the context is
		// cancelled so that nothing is dialled): never as BlockedErrors.
		c := client(t, netguard.WithAllow(), netguard.WithResolver(fakeResolver{"h.example": ip}))
		ctx, cancel := context.WithCancel(context.Background())
		isBlocked := slices.Contains(blocked, ip)
		if !isBlocked {
			cancel()
		}
		err := get(ctx, c, "http://h.example"+port)
		cancel()
		var be *netguard.BlockedError
		if got := errors.As(err, &be); got != isBlocked {
			t.Errorf("%s: blocked = %v (%v)", ip, got, err)
		}
	}
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	g, err := netguard.New(netguard.WithAllow("10.1.0.0/16", "metadata"))
	if err != nil {
		t.Fatal(err)
	}
	for _, ok := range []string{"https://api.example.com/x", "http://10.1.2.3:8080/", "http://metadata/", "http://rebind.example/"} {
		if err := g.CheckURL(ok); err != nil {
			t.Errorf("CheckURL(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"http://127.0.0.1:8080/v1", "http://[::1]/", "http://169.254.169.254/", "http://metadata.google.internal/", "http://10.2.0.1/"} {
		var be *netguard.BlockedError
		if err := g.CheckURL(bad); !errors.As(err, &be) {
			t.Errorf("CheckURL(%q) = %v, want a BlockedError", bad, err)
		}
	}
	for _, bad := range []string{"file:///etc/passwd", "ftp://x/", "http:///nohost", "::"} {
		if err := g.CheckURL(bad); err == nil {
			t.Errorf("CheckURL(%q) accepted", bad)
		}
	}
}
