// Package netguard is the outbound guard of Weft: every request the server
// makes on behalf of a user — HTTP tools, MCP servers over HTTP, remote
// agents, URL ingestion, workflow HTTP nodes — goes through it, so that a
// tenant cannot point the server at itself, at the private network it runs
// in, or at a cloud metadata service (SSRF).
//
// It is a package of its own, outside tool/ and platform/, because both the
// library (package tool/httptool, tool/mcptool) and the platform use it, and
// because library users who take URLs from their own users need the same
// protection. It is public for that reason.
//
// # What is refused
//
// Loopback, private (RFC 1918, fc00::/7), link-local, carrier-grade NAT,
// unspecified, multicast, reserved, benchmarking and cloud-metadata
// destinations (169.254.169.254, fd00:ec2::254, metadata.google.internal),
// including IPv4 addresses embedded in IPv4-mapped, NAT64 and 6to4 IPv6
// addresses. The check applies to the address actually dialled: the guard
// resolves host names itself and connects to the address it checked, so a
// DNS answer that changes between check and use (DNS rebinding) cannot slip
// past it. Redirects are followed at most [MaxRedirects] times, only to http
// and https, and each new destination is checked the same way. Environment
// proxies are not used (a proxy would dial on the server's behalf, past the
// guard).
//
// Hosts, IP addresses and CIDR prefixes listed in WEFT_HTTP_TOOLS_ALLOW
// ([AllowEnv]; comma-separated), or passed with [WithAllow], are allowed
// although internal. The variable keeps its wave-1 name (docs/api.md) although it
// now covers every outbound request.
//
// # API
//
//	g, err := netguard.New()                    // allow list from WEFT_HTTP_TOOLS_ALLOW
//	g, err := netguard.New(netguard.WithAllow("10.0.0.0/8", "api.internal"))
//	c := g.Client()                             // *http.Client: guarded dials and redirects, no timeout
//	c, err := netguard.NewClient(opts...)       // New + Client in one call
//	tr := g.Transport()                         // the *http.Transport, to tune before use
//	err := g.CheckURL("http://10.0.0.1/")       // early refusal of a literal or metadata host (registration)
//
// A refused request fails with an error wrapping [*BlockedError], which
// names the destination and how to allow it.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"
)

// AllowEnv is the environment variable that lists the hosts and networks
// outbound requests may reach although they are internal: comma-separated
// host names ("api.internal"), IP addresses or CIDR prefixes ("10.0.0.0/8").
const AllowEnv = "WEFT_HTTP_TOOLS_ALLOW"

// MaxRedirects is the number of redirects a guarded client follows.
const MaxRedirects = 5

// AllowList says which otherwise refused destinations are allowed. The zero
// value allows nothing beyond public addresses.
type AllowList struct {
	hosts    map[string]bool
	prefixes []netip.Prefix
}

// ParseAllowList parses a comma-separated list of host names, IP addresses
// and CIDR prefixes, as in [AllowEnv]. Blank entries are ignored.
func ParseAllowList(s string) (AllowList, error) {
	var a AllowList
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if err := a.add(e); err != nil {
			return AllowList{}, err
		}
	}
	return a, nil
}

func (a *AllowList) add(e string) error {
	if strings.Contains(e, "/") {
		p, err := netip.ParsePrefix(e)
		if err != nil {
			return fmt.Errorf("netguard: allow list entry %q: not a CIDR prefix: %w", e, err)
		}
		a.prefixes = append(a.prefixes, p.Masked())
		return nil
	}
	if ip, err := netip.ParseAddr(strings.Trim(e, "[]")); err == nil {
		a.prefixes = append(a.prefixes, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
		return nil
	}
	if strings.ContainsAny(e, " :?#@") {
		return fmt.Errorf("netguard: allow list entry %q: want a host name, IP address or CIDR prefix (no scheme or port)", e)
	}
	if a.hosts == nil {
		a.hosts = map[string]bool{}
	}
	a.hosts[normHost(e)] = true
	return nil
}

func normHost(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

func (a AllowList) host(h string) bool { return a.hosts[normHost(h)] }

func (a AllowList) ip(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, p := range a.prefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// envAllow parses AllowEnv once per process.
var envAllow = sync.OnceValues(func() (AllowList, error) {
	a, err := ParseAllowList(os.Getenv(AllowEnv))
	if err != nil {
		return AllowList{}, fmt.Errorf("%s: %w", AllowEnv, err)
	}
	return a, nil
})

// blockedNets are the destinations refused unless allowed; each with the
// reason given in the error.
var blockedNets = []struct {
	p      netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("169.254.169.254/32"), "a cloud metadata address"},
	{netip.MustParsePrefix("fd00:ec2::254/128"), "a cloud metadata address"},
	{netip.MustParsePrefix("0.0.0.0/8"), "an unspecified (\"this network\") address"},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a carrier-grade NAT address"},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol assignment address"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
	{netip.MustParsePrefix("::/128"), "an unspecified address"},
	{netip.MustParsePrefix("::1/128"), "a loopback address"},
	{netip.MustParsePrefix("fc00::/7"), "a private (unique local) address"},
	{netip.MustParsePrefix("fe80::/10"), "a link-local address"},
	{netip.MustParsePrefix("ff00::/8"), "a multicast address"},
}

// Prefixes that embed an IPv4 address, which is checked in turn.
var (
	nat64  = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4 = netip.MustParsePrefix("2002::/16")
)

// metadataHosts are host names of cloud metadata services.
var metadataHosts = map[string]bool{
	"metadata.google.internal": true,
	"metadata.goog":            true,
	"metadata":                 true,
}

// blockedReason says why ip is refused, or "" when it is a public address.
func blockedReason(ip netip.Addr) string {
	ip = ip.Unmap()
	if !ip.IsValid() {
		return "an invalid address"
	}
	for _, b := range blockedNets {
		if b.p.Contains(ip) {
			return b.reason
		}
	}
	if ip.Is6() {
		b := ip.As16()
		var v4 netip.Addr
		switch {
		case nat64.Contains(ip):
			v4 = netip.AddrFrom4([4]byte(b[12:16]))
		case sixTo4.Contains(ip):
			v4 = netip.AddrFrom4([4]byte(b[2:6]))
		}
		if v4.IsValid() {
			if r := blockedReason(v4); r != "" {
				return r + " (embedded in " + ip.String() + ")"
			}
		}
	}
	return ""
}

// BlockedError reports a request to a destination the SSRF guard refuses.
type BlockedError struct {
	// Host is the host name of the request.
	Host string
	// IP is the refused address (invalid when the host name itself is
	// refused).
	IP netip.Addr
	// Reason says what kind of address it is.
	Reason string
}

// Error names the destination and how to allow it.
func (e *BlockedError) Error() string {
	dest := e.Host
	if e.IP.IsValid() && e.IP.String() != e.Host {
		dest += " (" + e.IP.String() + ")"
	}
	return "request to " + dest + " refused: " + e.Reason + "; the server only reaches public addresses on a user's behalf unless the host is listed in " + AllowEnv
}

// Resolver looks up the addresses of a host; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Option configures New.
type Option func(*options)

type options struct {
	allow    *AllowList
	resolver Resolver
	err      error
}

// WithAllow allows the listed hosts, IP addresses and CIDR prefixes in place
// of the list read from [AllowEnv]; WithAllow() with no entries allows
// nothing beyond public addresses. Entries that do not parse make New fail.
func WithAllow(entries ...string) Option {
	return func(o *options) {
		a, err := ParseAllowList(strings.Join(entries, ","))
		o.allow, o.err = &a, err
	}
}

// WithResolver sets the DNS resolver; the default is net.DefaultResolver.
func WithResolver(r Resolver) Option {
	return func(o *options) { o.resolver = r }
}

// Guard is the outbound guard: it dials only the addresses it has checked.
// It is safe for concurrent use; one Guard may serve any number of clients.
type Guard struct {
	allow    AllowList
	resolver Resolver
	dialer   net.Dialer
}

// New returns a Guard. Without [WithAllow] its allow list is read from
// [AllowEnv] (once per process); an unparsable list is an error.
func New(opts ...Option) (*Guard, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.err != nil {
		return nil, o.err
	}
	allow := o.allow
	if allow == nil {
		a, err := envAllow()
		if err != nil {
			return nil, fmt.Errorf("netguard: %w", err)
		}
		allow = &a
	}
	if o.resolver == nil {
		o.resolver = net.DefaultResolver
	}
	return &Guard{
		allow:    *allow,
		resolver: o.resolver,
		dialer:   net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second},
	}, nil
}

// NewClient is New followed by [Guard.Client]: the one call a new kind of
// outbound request needs.
func NewClient(opts ...Option) (*http.Client, error) {
	g, err := New(opts...)
	if err != nil {
		return nil, err
	}
	return g.Client(), nil
}

// Client returns a new HTTP client whose every connection and redirect
// passes the guard. It has no overall timeout: bound requests with their
// context or set the client's Timeout.
func (g *Guard) Client() *http.Client {
	return &http.Client{Transport: g.Transport(), CheckRedirect: g.CheckRedirect}
}

// Transport returns a new transport that dials through the guard and uses
// no proxy. Callers may tune its timeouts before use; they must keep
// DialContext and Proxy as they are. Redirects are checked by the client
// ([Guard.CheckRedirect]), not by the transport.
func (g *Guard) Transport() *http.Transport {
	return &http.Transport{
		Proxy:                 nil, // a proxy would dial on our behalf, past the guard
		DialContext:           g.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       30 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// CheckRedirect is an [http.Client] CheckRedirect function: it stops after
// [MaxRedirects], refuses schemes other than http and https, and refuses
// host names refused whatever they resolve to. The new address itself is
// checked when it is dialled.
func (g *Guard) CheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > MaxRedirects {
		return fmt.Errorf("stopped after %d redirects", MaxRedirects)
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return fmt.Errorf("redirect to %s: only http and https are followed", req.URL.Scheme)
	}
	return g.checkHost(req.URL.Hostname())
}

// CheckURL refuses, without any network access, a URL that cannot be used:
// not http or https, no host, or a host refused whatever it resolves to (an
// IP literal of a refused network, a metadata host name). A name that
// resolves to a refused address passes here and is refused when dialled;
// CheckURL is for early, clear errors at registration, not a replacement
// for the dial-time check.
func (g *Guard) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("want an http or https URL, got scheme %q", u.Scheme)
	}
	host := u.Hostname()
	if host == "" {
		return errors.New("the URL has no host")
	}
	if err := g.checkHost(host); err != nil {
		return err
	}
	if ip, err := netip.ParseAddr(host); err == nil && !g.allow.ip(ip) {
		if r := blockedReason(ip); r != "" {
			return &BlockedError{Host: host, IP: ip.Unmap(), Reason: r}
		}
	}
	return nil
}

// checkHost refuses host names that are refused whatever they resolve to.
func (g *Guard) checkHost(host string) error {
	if g.allow.host(host) {
		return nil
	}
	if metadataHosts[normHost(host)] {
		return &BlockedError{Host: host, Reason: "a cloud metadata host"}
	}
	return nil
}

// DialContext connects to addr ("host:port") after checking every address
// the host resolves to, and dials only a checked address. Its signature is
// that of [net.Dialer.DialContext], for [http.Transport].
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if err := g.checkHost(host); err != nil {
		return nil, err
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		ips = []netip.Addr{ip}
	} else {
		ipNet := "ip"
		switch network {
		case "tcp4":
			ipNet = "ip4"
		case "tcp6":
			ipNet = "ip6"
		}
		ips, err = g.resolver.LookupNetIP(ctx, ipNet, host)
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", host, err)
		}
		if len(ips) == 0 {
			return nil, fmt.Errorf("resolve %s: no addresses", host)
		}
	}
	hostAllowed := g.allow.host(host)
	var errs []error
	for _, ip := range ips {
		ip = ip.Unmap()
		if !hostAllowed && !g.allow.ip(ip) {
			if r := blockedReason(ip); r != "" {
				errs = append(errs, &BlockedError{Host: host, IP: ip, Reason: r})
				continue
			}
		}
		// Dial the checked address itself, never the name again.
		c, err := g.dialer.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}
