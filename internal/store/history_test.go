package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/go-logr/logr/testr"

	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/query"
)

// catalogOf merges single-package catalogs into one.
func catalogOf(parts ...fstest.MapFS) fstest.MapFS {
	out := fstest.MapFS{}
	for _, p := range parts {
		for name, f := range p {
			out[name] = f
		}
	}
	return out
}

func changesSince(t *testing.T, s *Store, catalog, since string) (query.Changes, error) {
	t.Helper()
	snap, err := s.Acquire(catalog)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	return snap.Changes(context.Background(), since)
}

// changed lists the changed packages, each with whether it is detailed.
func changed(c query.Changes) []string {
	var out []string
	for _, p := range c.Changed {
		d := "undetailed"
		if p.Detailed {
			d = "detailed"
		}
		out = append(out, p.Package+":"+d)
	}
	return out
}

func openStore(t *testing.T, dir string, opts ...Option) *Store {
	t.Helper()
	s, err := New(dir, testr.New(t), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestHistory: the history survives a restart with the facts it kept;
// a version a crash left out of it is added at start, its packages only
// known to have changed; it keeps the last n versions; the facts of one
// version are bounded; Remove deletes it.
func TestHistory(t *testing.T) {
	v1 := catalogOf(tinyCatalog("a", 1), tinyCatalog("b", 1))
	v2 := catalogOf(tinyCatalog("a", 2), tinyCatalog("b", 1))
	v3 := catalogOf(tinyCatalog("a", 2), tinyCatalog("b", 2))
	update := func(s *Store, fsys fstest.MapFS, digest string) {
		t.Helper()
		mustUpdate(t, s, "demo", index.Content{FS: fsys, Digest: digest})
	}

	t.Run("restart", func(t *testing.T) {
		dir := t.TempDir()
		s := openStore(t, dir)
		update(s, v1, "sha256:v1")
		update(s, v2, "sha256:v2")
		s.Close()
		s = openStore(t, dir)
		got, err := changesSince(t, s, "demo", "sha256:v1")
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Changed) != 1 {
			t.Fatalf("changes after a restart: %+v", got)
		}
		c := got.Changed[0]
		if c.Package != "a" || !c.Detailed || !slices.Equal(c.BundlesAdded, []string{"a.v1.0.2"}) ||
			!slices.Equal(c.Heads, []query.HeadChange{{Channel: "stable", Before: "a.v1.0.1", After: "a.v1.0.2"}}) {
			t.Errorf("changes after a restart: %+v", c)
		}
	})

	t.Run("a crash between swap and history", func(t *testing.T) {
		dir := t.TempDir()
		s := openStore(t, dir)
		update(s, v1, "sha256:v1")
		saved, err := os.ReadFile(filepath.Join(dir, "demo", HistoryFile))
		if err != nil {
			t.Fatal(err)
		}
		update(s, v2, "sha256:v2")
		s.Close()
		// The history as it was before the swap: v2 is live but unknown.
		if err := os.WriteFile(filepath.Join(dir, "demo", HistoryFile), saved, 0o644); err != nil {
			t.Fatal(err)
		}
		s = openStore(t, dir)
		got, err := changesSince(t, s, "demo", "sha256:v1")
		if err != nil {
			t.Fatal(err)
		}
		if c := changed(got); !slices.Equal(c, []string{"a:undetailed"}) {
			t.Errorf("changes since the version before the crash: %v, want a known to have changed only", c)
		}
		if h := readHistory(filepath.Join(dir, "demo")); len(h.Versions) != 2 || h.Versions[1].Digest != "sha256:v2" {
			t.Errorf("history after the start: %+v", h)
		}
	})

	t.Run("length", func(t *testing.T) {
		dir := t.TempDir()
		s := openStore(t, dir, WithHistory(2))
		update(s, v1, "sha256:v1")
		update(s, v2, "sha256:v2")
		update(s, v3, "sha256:v3")
		_, err := changesSince(t, s, "demo", "sha256:v1")
		var gone *GoneError
		if !errors.As(err, &gone) || gone.Oldest != "sha256:v2" || !errors.Is(err, ErrUnknownVersion) {
			t.Errorf("changes since a version past the history: %v, want gone with oldest sha256:v2", err)
		}
		got, err := changesSince(t, s, "demo", "sha256:v2")
		if c := changed(got); err != nil || !slices.Equal(c, []string{"b:detailed"}) {
			t.Errorf("changes since v2: %v, %v", c, err)
		}
		if h := readHistory(filepath.Join(dir, "demo")); len(h.Versions) != 2 {
			t.Errorf("history file holds %d versions, want 2", len(h.Versions))
		}
		if err := s.Remove("demo"); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "demo")); !os.IsNotExist(err) {
			t.Errorf("catalog directory after Remove: %v", err)
		}
	})

	t.Run("bounded facts", func(t *testing.T) {
		// The long package's bundle names alone pass maxBeforeBytes.
		long := strings.Repeat("l", 200)
		n := maxBeforeBytes/len(long) + 10
		dir := t.TempDir()
		s := openStore(t, dir)
		update(s, catalogOf(tinyCatalog(long, n), tinyCatalog("b", 1)), "sha256:v1")
		update(s, catalogOf(tinyCatalog(long, n+1), tinyCatalog("b", 2)), "sha256:v2")
		got, err := changesSince(t, s, "demo", "sha256:v1")
		if c := changed(got); err != nil || !slices.Equal(c, []string{"b:detailed", long + ":undetailed"}) {
			t.Errorf("changes: %v, %v; want b detailed and the long package past the bound", c, err)
		}
		if fi, err := os.Stat(filepath.Join(dir, "demo", HistoryFile)); err != nil || fi.Size() > 2*maxBeforeBytes {
			t.Errorf("history file: %v, %v", fi, err)
		}
	})
}
