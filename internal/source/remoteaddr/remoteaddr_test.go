package remoteaddr_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/catalogd/catalogd/internal/source/remoteaddr"
	"github.com/catalogd/catalogd/test/loopdial"
)

// TestKind: the ranges refused are those of RFC 6890's special-purpose
// registry that mean this machine or its link, and the metadata services;
// private and public addresses are not.
func TestKind(t *testing.T) {
	for _, tc := range []struct {
		addr    string
		refused bool
	}{
		{"127.0.0.1", true},
		{"127.255.255.254", true},
		{"::1", true},
		{"::ffff:127.0.0.1", true}, // IPv4-mapped: the same machine
		{"0.0.0.0", true},
		{"0.1.2.3", true},
		{"::", true},
		{"169.254.169.254", true}, // AWS, GCP, Azure metadata
		{"169.254.0.23", true},
		{"fe80::1", true},
		{"fe80::1%eth0", true},
		{"224.0.0.251", true}, // link-local multicast
		{"ff02::1", true},
		{"ff01::1", true}, // interface-local multicast
		{"fd00:ec2::254", true},
		{"100.100.100.200", true},
		{"8.8.8.8", false},
		{"10.0.0.1", false},
		{"192.168.1.10", false},
		{"172.16.0.1", false},
		{"100.100.100.201", false},
		{"fd00:ec2::253", false},
		{"2001:db8::1", false},
		{"1.0.0.0", false},
		{"126.255.255.255", false},
		{"128.0.0.1", false},
		{"169.253.255.255", false},
		{"169.255.0.1", false},
	} {
		a := netip.MustParseAddr(tc.addr)
		if got := remoteaddr.Kind(a) != ""; got != tc.refused {
			t.Errorf("Kind(%s) = %q, refused %v, want %v", tc.addr, remoteaddr.Kind(a), got, tc.refused)
		}
		err := remoteaddr.Check(netip.AddrPortFrom(a, 443).String())
		if (err != nil) != tc.refused || (err != nil && !errors.Is(err, remoteaddr.ErrRefused)) {
			t.Errorf("Check(%s:443) = %v, refused %v", tc.addr, err, tc.refused)
		}
	}
	for _, bad := range []string{"", "example.com:443", "127.0.0.1", "[::1]"} {
		if err := remoteaddr.Check(bad); !errors.Is(err, remoteaddr.ErrRefused) {
			t.Errorf("Check(%q) = %v, want a refusal", bad, err)
		}
	}
}

// TestGuardControl: the dialer without a hook refuses a refused address
// before connecting: the listener accepts nothing from it, and accepts the
// plain dial made after it first.
func TestGuardControl(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, addr := range []string{l.Addr().String(), "localhost:" + portOf(t, l.Addr().String())} {
		conn, err := remoteaddr.Guard(nil)(context.Background(), "tcp", addr)
		if err == nil {
			conn.Close()
			t.Fatalf("Guard(nil) dialled %s", addr)
		}
		if !errors.Is(err, remoteaddr.ErrRefused) {
			t.Errorf("Guard(nil) to %s: %v, want a refusal", addr, err)
		}
	}
	plain, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	got, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	if got.RemoteAddr().String() != plain.LocalAddr().String() {
		t.Errorf("the listener's first connection came from %s, not from the plain dial (%s): a refused dial connected", got.RemoteAddr(), plain.LocalAddr())
	}
}

func portOf(t *testing.T, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// TestRouter: requests to the host name the user named go through Own,
// whatever the port; to any other name through Other, guarded, which
// reaches no server on this machine and writes nothing to it.
func TestRouter(t *testing.T) {
	var mu sync.Mutex
	var hits []string
	seen := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), hits...)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits = append(hits, r.Host)
		mu.Unlock()
	}))
	defer srv.Close()
	own := &http.Transport{DialContext: loopdial.Dial}
	other := &http.Transport{DialContext: remoteaddr.Guard(loopdial.Dial)}
	defer own.CloseIdleConnections()
	client := &http.Client{Transport: &remoteaddr.Router{Host: "git.example", Own: own, Other: other}}
	for _, tc := range []struct {
		url     string
		refused bool
	}{
		{loopdial.URL(srv.URL, "git.example"), false},
		{strings.Replace(loopdial.URL(srv.URL, "git.example"), "git.example", "GIT.example", 1), false},
		{loopdial.URL(srv.URL, "mirror.example"), true},
		{srv.URL, true},
	} {
		before := len(seen())
		resp, err := client.Get(tc.url + "/x")
		if err == nil {
			resp.Body.Close()
		}
		if tc.refused {
			host, refused, ok := remoteaddr.Refusal(err)
			if !ok || !strings.HasPrefix(tc.url, "http://"+host) || refused.Kind != "loopback" {
				t.Errorf("GET %s: %v (host %q, %v), want a refusal of the loopback address naming the host", tc.url, err, host, refused)
			}
			if got := seen()[before:]; len(got) != 0 {
				t.Errorf("GET %s: the server got %v", tc.url, got)
			}
			continue
		}
		if got := seen()[before:]; err != nil || len(got) != 1 {
			t.Errorf("GET %s: %v, the server got %v", tc.url, err, got)
		}
	}
}

// FuzzCheck: whatever the string, Check refuses it unless it is an IP
// address and port of an address Kind allows.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"127.0.0.1:80", "[::1]:443", "8.8.8.8:53", "[fe80::1%eth0]:22", "[::ffff:169.254.169.254]:80", "10.0.0.1", "host:80", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := remoteaddr.Check(s)
		ap, perr := netip.ParseAddrPort(s)
		want := perr != nil || remoteaddr.Kind(ap.Addr()) != ""
		if (err != nil) != want {
			t.Errorf("Check(%q) = %v, want refused %v", s, err, want)
		}
		if err != nil && !errors.Is(err, remoteaddr.ErrRefused) {
			t.Errorf("Check(%q) = %v, not an ErrRefused", s, err)
		}
	})
}
