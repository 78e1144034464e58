package store

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/go-logr/logr/testr"

	"github.com/catalogd/catalogd/internal/index"
)

// Update hands index.Build the live index as Content.Previous when
// incremental builds are on (the default), with the live index's files in
// place while the build runs, and removes them once the new index is
// live; with them off, or with no live index, Previous is empty, whatever
// the caller set.
func TestUpdateGivesTheLiveIndexToTheBuild(t *testing.T) {
	for _, tc := range []struct {
		name        string
		opts        []Option
		incremental bool
	}{
		{name: "default", incremental: true},
		{name: "on", opts: []Option{WithIncremental(true)}, incremental: true},
		{name: "off", opts: []Option{WithIncremental(false)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			open := func() *Store {
				s, err := New(dir, testr.New(t), tc.opts...)
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			s := open()
			var previous []string
			seen := func(s *Store) {
				s.build = func(ctx context.Context, path string, src index.Content, builtAt time.Time) (index.Stats, error) {
					previous = append(previous, src.Previous)
					for _, f := range index.Files(src.Previous) {
						if _, err := os.Stat(f); src.Previous != "" && err != nil {
							t.Errorf("during the build: %v", err)
						}
					}
					return index.Build(ctx, path, src, builtAt)
				}
			}
			seen(s)
			var want []string
			// The caller's Previous is never taken: the store knows which
			// index is live.
			src := index.Content{FS: tinyCatalog("a", 1), Ref: "test", Digest: "sha256:1", Previous: "/elsewhere.db"}
			first := mustUpdate(t, s, "c", src)
			want = append(want, "")
			src.FS, src.Digest = tinyCatalog("a", 2), "sha256:2"
			second := mustUpdate(t, s, "c", src)
			want = append(want, first.Path)
			for _, f := range index.Files(first.Path) {
				if _, err := os.Stat(f); !os.IsNotExist(err) {
					t.Errorf("after the swap, %s: %v; want it removed", f, err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}

			// A restart builds from the index it reopened.
			s = open()
			defer s.Close()
			seen(s)
			src.FS, src.Digest = tinyCatalog("a", 3), "sha256:3"
			mustUpdate(t, s, "c", src)
			want = append(want, second.Path)
			if !tc.incremental {
				want = []string{"", "", ""}
			}
			if len(previous) != len(want) {
				t.Fatalf("%d builds; want %d", len(previous), len(want))
			}
			for i := range want {
				if previous[i] != want[i] {
					t.Errorf("build %d: Previous %q; want %q", i+1, previous[i], want[i])
				}
			}
		})
	}
}

// The "index swapped in" line says how the index was built, as its stats
// say.
func TestSwapLogSaysHowItWasBuilt(t *testing.T) {
	var lines []map[string]any
	log := funcr.NewJSON(func(obj string) {
		var m map[string]any
		if err := json.Unmarshal([]byte(obj), &m); err != nil {
			t.Errorf("log line %s: %v", obj, err)
		}
		lines = append(lines, m)
	}, funcr.Options{})
	s, err := New(t.TempDir(), log)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 1; i <= 2; i++ {
		_, stats, _, err := s.Update(context.Background(), "c", index.Content{FS: tinyCatalog("a", i), Ref: "test", Digest: fmt.Sprintf("sha256:%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		var swapped map[string]any
		for _, l := range lines {
			if l["msg"] == "index swapped in" {
				swapped = l
			}
		}
		lines = nil
		want := map[string]any{"mode": stats.Build.Mode, "packagesRebuilt": float64(stats.Build.PackagesRebuilt), "reason": stats.Build.Reason}
		for k, v := range want {
			if swapped[k] != v {
				t.Errorf("build %d: %q of the swap's log line %v; want %v", i, k, swapped[k], v)
			}
		}
	}
}
