package store

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/catalogd/catalogd/internal/index"
)

// TestAdopt: an index built elsewhere is swapped in as a build is, and
// recorded as prebuilt; one that fails to arrive or fails a check leaves
// the live index serving and nothing behind; and the next build starts
// incrementally from an adopted index as from any live one.
func TestAdopt(t *testing.T) {
	ctx := context.Background()
	const repo = "registry.example/catalogs/tiny"
	digest := func(n int) string { return fmt.Sprintf("sha256:%064d", n) }
	// tiny's catalog: package tiny of n bundles beside four that never
	// change, so that a change to tiny is one an incremental build takes.
	catalog := func(n int) fstest.MapFS {
		fsys := tinyCatalog("tiny", n)
		for _, p := range []string{"p1", "p2", "p3", "p4"} {
			maps.Copy(fsys, tinyCatalog(p, 3))
		}
		return fsys
	}
	// elsewhere builds tiny's content of n bundles into path as the
	// content of digest, as a publisher would, and returns the CRC-32s of
	// its content files, as a download takes them, each changed by edit
	// when it is given.
	elsewhere := func(n int, d string, edit func(index.ContentSums)) func(context.Context, string) (index.ContentSums, error) {
		return func(ctx context.Context, path string) (index.ContentSums, error) {
			if _, err := index.Build(ctx, path, index.Content{FS: catalog(n), Ref: repo + "@" + d, Digest: d}, time.Unix(0, 0)); err != nil {
				return nil, err
			}
			sums, err := contentSums(path)
			if err == nil && edit != nil {
				edit(sums)
			}
			return sums, err
		}
	}
	// wrongCRC changes the CRC-32 of a content segment.
	wrongCRC := func(sums index.ContentSums) {
		for name := range sums {
			if strings.HasSuffix(name, ".all") {
				sums[name]++
				return
			}
		}
	}
	s, dir := newTestStore(t)
	mustUpdate(t, s, "tiny", index.Content{FS: catalog(1), Ref: repo + "@" + digest(1), Digest: digest(1)})
	before := dirEntries(t, dir, "tiny")

	for _, tc := range []struct {
		name string
		fill func(context.Context, string) (index.ContentSums, error)
		want error
	}{
		{name: "download fails", fill: func(context.Context, string) (index.ContentSums, error) { return nil, errors.New("registry gone") }},
		{name: "index of other content", fill: elsewhere(2, digest(3), nil), want: index.ErrRefused},
		{name: "content not as its list records", fill: elsewhere(2, digest(2), wrongCRC), want: index.ErrRefused},
		{name: "content without its CRC-32s", fill: elsewhere(2, digest(2), func(sums index.ContentSums) { clear(sums) }), want: index.ErrRefused},
	} {
		_, adopted, err := s.Adopt(ctx, "tiny", repo+"@"+digest(2), tc.fill)
		if err == nil || adopted || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: adopted %v, %v; want an error (%v)", tc.name, adopted, err, tc.want)
		}
		if info, _ := s.Info("tiny"); info.Digest != digest(1) {
			t.Errorf("%s: live index is %s; want %s still", tc.name, info.Digest, digest(1))
		}
		if got := dirEntries(t, dir, "tiny"); fmt.Sprint(got) != fmt.Sprint(before) {
			t.Errorf("%s: left %v; want %v", tc.name, got, before)
		}
	}

	info, adopted, err := s.Adopt(ctx, "tiny", repo+"@"+digest(2), elsewhere(2, digest(2), nil))
	if err != nil || !adopted {
		t.Fatalf("adopt: %v, %v", adopted, err)
	}
	if info.Build.Mode != index.ModePrebuilt || info.Digest != digest(2) {
		t.Errorf("adopted %+v; want prebuilt of %s", info, digest(2))
	}
	snap, err := s.Acquire("tiny")
	if err != nil {
		t.Fatal(err)
	}
	if n := countBundles(t, snap); n != 2+4*3 {
		t.Errorf("serving %d bundles; want the adopted index's %d", n, 2+4*3)
	}
	snap.Release()
	if _, adopted, err := s.Adopt(ctx, "tiny", repo+"@"+digest(2), elsewhere(2, digest(2), nil)); err != nil || adopted {
		t.Errorf("adopting the live digest again: %v, %v; want nothing done", adopted, err)
	}

	_, stats, _, err := s.Update(ctx, "tiny", index.Content{FS: catalog(3), Ref: repo + "@" + digest(3), Digest: digest(3)})
	if err != nil {
		t.Fatal(err)
	}
	if stats.Build.Mode != index.ModeIncremental {
		t.Errorf("the build after an adopted index: %+v; want incremental from it", stats.Build)
	}
}

// contentSums are the CRC-32s of the content files of the index at path,
// read back.
func contentSums(path string) (index.ContentSums, error) {
	names, err := index.ContentFiles(path)
	if err != nil {
		return nil, err
	}
	sums := index.ContentSums{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(index.ContentDir(path), n))
		if err != nil {
			return nil, err
		}
		sums[n] = crc32.ChecksumIEEE(b)
	}
	return sums, nil
}
