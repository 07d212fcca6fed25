package httptool

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
)

// AllowEnv is the environment variable that lists the hosts and networks
// HTTP tools may reach although they are internal: comma-separated host
// names ("api.internal"), IP addresses or CIDR prefixes ("10.0.0.0/8").
const AllowEnv = "WEFT_HTTP_TOOLS_ALLOW"

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
			return fmt.Errorf("httptool: allow list entry %q: not a CIDR prefix: %w", e, err)
		}
		a.prefixes = append(a.prefixes, p.Masked())
		return nil
	}
	if ip, err := netip.ParseAddr(strings.Trim(e, "[]")); err == nil {
		a.prefixes = append(a.prefixes, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
		return nil
	}
	if strings.ContainsAny(e, " :?#@") {
		return fmt.Errorf("httptool: allow list entry %q: want a host name, IP address or CIDR prefix (no scheme or port)", e)
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
	return "request to " + dest + " refused: " + e.Reason + "; HTTP tools may only reach public addresses unless the host is listed in " + AllowEnv
}

// Resolver looks up the addresses of a host; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// guard is the SSRF check: it resolves host names itself and dials only
// the addresses it has checked, so that a DNS answer that changes between
// check and use (DNS rebinding) cannot reach a refused address.
type guard struct {
	allow    AllowList
	resolver Resolver
	dialer   net.Dialer
}

// checkHost refuses host names that are refused whatever they resolve to.
func (g *guard) checkHost(host string) error {
	if g.allow.host(host) {
		return nil
	}
	if metadataHosts[normHost(host)] {
		return &BlockedError{Host: host, Reason: "a cloud metadata host"}
	}
	return nil
}

func (g *guard) dial(ctx context.Context, network, addr string) (net.Conn, error) {
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
