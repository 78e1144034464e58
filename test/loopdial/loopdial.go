// Package loopdial reaches made-up host names on this machine, for tests of
// the sources' rule that a redirect to another host may not connect to
// this machine (package remoteaddr): a test server on 127.0.0.1 is then
// also "git.example" and "mirror.example", other hosts by name that resolve
// to a refused address, as a rebinding name would. Dial is the sources'
// Options.DialContext hook.
package loopdial

import (
	"context"
	"net"
	"net/url"
	"strings"
)

// Dial connects to a host name ending in ".example" at 127.0.0.1, at the
// port asked, and to any other address as it is.
func Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if strings.HasSuffix(host, ".example") {
		addr = net.JoinHostPort("127.0.0.1", port)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// URL is base (a test server's URL) with its host named name, which must
// end in ".example" for Dial to reach it; the scheme and port stay.
func URL(base, name string) string {
	u, err := url.Parse(base)
	if err != nil {
		panic("loopdial: " + err.Error())
	}
	u.Host = net.JoinHostPort(name, u.Port())
	return u.String()
}
