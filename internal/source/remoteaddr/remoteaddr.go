// Package remoteaddr is the one rule for where a remote catalogd was
// pointed at may send it: a server the user named (a git repository, an
// archive's URL) may redirect catalogd to another host, but not to this
// machine, its link-local network or the cloud's instance-metadata
// service, where it would act with catalogd's network position against the
// node it runs on.
//
// The rule is checked where the connection is made, on the address being
// dialled after name resolution (Control, Guard): a check of a redirect's
// host name before the request could be answered with a public address and
// the dial with 127.0.0.1 (DNS rebinding). Which requests it guards is also
// decided here (Router): those to a host name other than the one the user
// named; that host itself is trusted, as the user chose it.
package remoteaddr

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// ErrRefused is what every refused connection's error wraps.
var ErrRefused = errors.New("a redirect to another host may not reach a loopback, link-local or cloud-metadata address")

// RefusedError is a connection refused by the rule: Addr is where it would
// have gone, Kind what that address is ("loopback", "link-local", …).
type RefusedError struct {
	Addr string
	Kind string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%v: %s is %s", ErrRefused, e.Addr, e.Kind)
}

func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// metadata are the cloud instance-metadata addresses outside the ranges
// refused whole: AWS's IPv6 one and Alibaba Cloud's (169.254.169.254, the
// others', is link-local).
var metadata = []netip.Addr{
	netip.MustParseAddr("fd00:ec2::254"),
	netip.MustParseAddr("100.100.100.200"),
}

// thisNetwork is 0.0.0.0/8, which Linux may route to the machine itself;
// IsUnspecified covers 0.0.0.0 alone.
var thisNetwork = netip.MustParsePrefix("0.0.0.0/8")

// Kind says why a is refused, or "" when a remote may send catalogd there.
// Private ranges (10/8, fc00::/7, …) are allowed: in-cluster git servers
// and mirrors live there.
func Kind(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case a.IsLoopback():
		return "loopback"
	case a.IsUnspecified(), thisNetwork.Contains(a):
		return "this machine (unspecified)"
	case a.IsLinkLocalUnicast():
		return "link-local"
	case a.IsLinkLocalMulticast():
		return "link-local multicast"
	case a.IsInterfaceLocalMulticast():
		return "interface-local multicast"
	}
	for _, m := range metadata {
		if a.WithZone("") == m {
			return "a cloud-metadata address"
		}
	}
	return ""
}

// Check refuses address, host:port with host an IP, when the rule does;
// an address it cannot read is refused too.
func Check(address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &RefusedError{Addr: address, Kind: "not an IP address and port"}
	}
	if kind := Kind(ap.Addr()); kind != "" {
		return &RefusedError{Addr: ap.Addr().String(), Kind: kind}
	}
	return nil
}

// Control is a net.Dialer's Control: it sees each address dialled, after
// name resolution and before a packet is sent.
func Control(_, address string, _ syscall.RawConn) error { return Check(address) }

// DialFunc opens a connection, as net.Dialer.DialContext does.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Guard returns a dial refusing what the rule refuses. With dial nil it is
// a net.Dialer (http.DefaultTransport's timeouts) whose Control checks
// each address it tries. With dial set (a test's hook reaching made-up
// names on 127.0.0.1) it checks the remote address of the connection dial
// returns, and closes it before anything is written to it.
func Guard(dial DialFunc) DialFunc {
	if dial == nil {
		d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: Control}
		return d.DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if err := Check(conn.RemoteAddr().String()); err != nil {
			conn.Close()
			return nil, &net.OpError{Op: "dial", Net: network, Addr: conn.RemoteAddr(), Err: err}
		}
		return conn, nil
	}
}

// Router sends the requests to the host name the user named through Own,
// and any other (where a redirect led) through Other, whose dial is
// guarded. They must be separate transports, so that no pooled connection
// dialled for one is reused for the other.
type Router struct {
	// Host is the host name the user named (a URL's Hostname()).
	Host       string
	Own, Other http.RoundTripper
}

func (r *Router) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.EqualFold(req.URL.Hostname(), r.Host) {
		return r.Own.RoundTrip(req)
	}
	return r.Other.RoundTrip(req)
}

// Refusal finds a refused connection in err, an http.Client's error: the
// host the request was for (where a redirect led, without the rest of its
// URL) and the refusal, for a message of one line.
func Refusal(err error) (host string, refused *RefusedError, ok bool) {
	if !errors.As(err, &refused) {
		return "", nil, false
	}
	host = "another host"
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil && u.Host != "" {
			host = u.Host
		}
	}
	return host, refused, true
}
