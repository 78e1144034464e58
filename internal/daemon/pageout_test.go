package daemon

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	"github.com/catalogd/catalogd/test/await"
	"github.com/catalogd/catalogd/test/syncbuf"
)

// TestServePagesOutStartup checks that serve gives back the executable's
// start-up pages once every catalog was synced, unless
// --page-out-startup=false.
func TestServePagesOutStartup(t *testing.T) {
	const gave = "gave back the executable's start-up pages"
	tests := []struct {
		flag string
		want bool
	}{
		{"--page-out-startup=true", true},
		{"--page-out-startup=false", false},
	}
	for _, tc := range tests {
		t.Run(tc.flag, func(t *testing.T) {
			cfg, err := parseServe([]string{"--data-dir", t.TempDir(), "--catalog", "demo=" + demoDir, tc.flag})
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Listener, err = netListen(t); err != nil {
				t.Fatal(err)
			}
			logs := &syncbuf.Buffer{}
			log := funcr.New(func(prefix, args string) { logs.Write([]byte(prefix + args + "\n")) }, funcr.Options{Verbosity: 1})
			ctx, cancel := context.WithCancel(context.Background())
			out := &syncbuf.Buffer{}
			done := make(chan error, 1)
			go func() { done <- Serve(ctx, cfg, out, log) }()
			await.True(t, "serve printed its summary", 30*time.Second, func() bool { return strings.Contains(out.String(), "Try:") })
			// Serve decides right after the summary, before it waits for
			// its end: once it returned, the log holds what it did.
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve returned %v", err)
			}
			if got := strings.Contains(logs.String(), gave); got != tc.want {
				t.Errorf("start-up pages given back: %v, want %v; log:\n%s", got, tc.want, logs)
			}
		})
	}
}
