package catalogsync_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/catalogd/catalogd/internal/catalogsync"
	"github.com/catalogd/catalogd/test/await"
)

// TestContentErrorIsLoggedOnce: the loop keeps looking at a catalog whose
// content failed to index, to notice a fix, but the same content fails the
// same way, so its error is logged once, not on every look; the table
// keeps it as the catalog's last error.
func TestContentErrorIsLoggedOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		dir  func(t *testing.T) string
	}{
		{"a catalog with a broken file", brokenCatalog},
		{"a directory that is not a catalog", func(t *testing.T) string {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "architecture.md"), []byte("# Title\n\nSome prose: with a colon.\n- a list: too\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return dir
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log capturedLog
			e := newEnv(t, catalogsync.Options{Log: log.logger(), MinBackoff: time.Millisecond, MaxBackoff: time.Hour})
			e.svc.Set(catalogsync.Spec{Name: "x", Fetcher: catalogsync.DirFetcher{Path: tc.dir(t)}})
			e.svc.MarkLoaded()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- e.svc.Start(ctx) }()
			// Five syncs failed in a row: a backoff of 16 ms or more.
			await.True(t, "five failed syncs", syncWait, func() bool { return e.svc.Backoff("x", 0) >= 16*time.Millisecond })
			cancel()
			<-done

			log.mu.Lock()
			defer log.mu.Unlock()
			failed := 0
			for _, l := range log.lines {
				if strings.Contains(l, "sync failed") {
					failed++
				}
			}
			if failed != 1 {
				t.Errorf("%d lines say the sync failed, want 1:\n%s", failed, strings.Join(log.lines, "\n"))
			}
			if c, _ := e.table.Get("x"); c.LastError == "" || e.svc.Serving("x") {
				t.Errorf("table: %+v; want not serving, with the error", c)
			}
		})
	}
}
