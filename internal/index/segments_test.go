package index

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/catalogd/catalogd/internal/fbc"
	"github.com/catalogd/catalogd/test/fbcchange"
	"github.com/catalogd/catalogd/test/fbcgen"
)

// streamBytes reads the content (gz false) or the gzip copy of the index at
// path, through OpenStreams.
func streamBytes(t testing.TB, path string, gz bool) []byte {
	t.Helper()
	content, gzip, err := OpenStreams(path)
	if err != nil {
		t.Fatal(err)
	}
	defer content.Close()
	defer gzip.Close()
	s := content
	if gz {
		s = gzip
	}
	data, err := io.ReadAll(io.NewSectionReader(s, 0, s.Size()))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// segmentPath returns the first segment file with the extension ext of
// the index at path.
func segmentPath(t testing.TB, path, ext string) string {
	t.Helper()
	m, err := readManifest(ContentDir(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Segments) == 0 {
		t.Fatalf("index %s has no segments", path)
	}
	name := m.Segments[0].Content
	if ext == gzipExt {
		name = m.Segments[0].Gzip
	}
	return filepath.Join(ContentDir(path), name)
}

// withSegmentSize cuts segments after size bytes for the rest of the test.
func withSegmentSize(t testing.TB, size int64) {
	old := segmentSize
	segmentSize = size
	t.Cleanup(func() { segmentSize = old })
}

// generated writes a generated catalog of a file per package into a new
// directory.
func generated(t testing.TB, opts fbcgen.Options) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := fbcgen.Write(context.Background(), dir, opts); err != nil {
		t.Fatal(err)
	}
	// As the model writes files, so that a file a test leaves alone keeps
	// its bytes.
	fbcchange.ReadModel(t, dir).Write(t, dir)
	return dir
}

// TestStreamAcrossSegments reads an index cut into many segments through
// OpenStreams: ReadAt, CopyRange and a StreamReader copied with io.CopyN
// (as http.ServeContent copies) give the bytes of the content at every
// range, crossing segment boundaries, CopyRange hands over each piece of a
// segment as an io.LimitedReader directly over a file (what sendfile
// needs), and the gzip stream decompresses to the content.
func TestStreamAcrossSegments(t *testing.T) {
	withSegmentSize(t, 10<<10)
	dir := generated(t, fbcgen.Options{Packages: 8, Bundles: 60, BundleObjectBytes: 300, Seed: 3})
	path, stats := buildAt(t, t.TempDir(), "index", dir, "")
	m, err := readManifest(ContentDir(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Segments) < 4 {
		t.Fatalf("%d segments; the test needs several", len(m.Segments))
	}
	var want []byte
	for _, s := range m.Segments {
		data, err := os.ReadFile(filepath.Join(ContentDir(path), s.Content))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, data...)
	}
	if int64(len(want)) != stats.AllBytes {
		t.Fatalf("segments hold %d bytes, the build wrote %d", len(want), stats.AllBytes)
	}
	content, gz, err := OpenStreams(path)
	if err != nil {
		t.Fatal(err)
	}
	defer content.Close()
	defer gz.Close()
	if unzipped := gunzipFile(t, path); !bytes.Equal(unzipped, want) {
		t.Errorf("the gzip stream decompresses to %d bytes, not the %d of the content", len(unzipped), len(want))
	}
	// Ranges on both sides of every boundary, and random ones.
	type span struct{ off, n int64 }
	var spans []span
	var at int64
	for _, s := range m.Segments {
		at += s.Size
		spans = append(spans, span{max(0, at-7), min(14, int64(len(want))-max(0, at-7))})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		off := rng.Int64N(int64(len(want)))
		spans = append(spans, span{off, rng.Int64N(int64(len(want)) - off + 1)})
	}
	spans = append(spans, span{0, int64(len(want))}, span{int64(len(want)), 0})
	for _, sp := range spans {
		wantRange := want[sp.off : sp.off+sp.n]
		got := make([]byte, sp.n)
		if n, err := content.ReadAt(got, sp.off); err != nil || !bytes.Equal(got[:n], wantRange) {
			t.Errorf("ReadAt(%d bytes at %d): %d bytes, %v; differ from the content", sp.n, sp.off, n, err)
		}
		var copied bytes.Buffer
		n, err := content.CopyRange(sp.off, sp.n, func(piece *io.LimitedReader) (int64, error) {
			if _, ok := piece.R.(*os.File); !ok {
				t.Errorf("a piece of %d bytes at %d reads a %T, not a file", piece.N, sp.off, piece.R)
			}
			return copied.ReadFrom(piece)
		})
		if err != nil || n != sp.n || !bytes.Equal(copied.Bytes(), wantRange) {
			t.Errorf("CopyRange(%d bytes at %d): %d bytes, %v; differ from the content", sp.n, sp.off, n, err)
		}
		r := content.NewReader()
		if _, err := r.Seek(sp.off, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		copied.Reset()
		if n, err := io.CopyN(&copied, r, sp.n); err != nil || n != sp.n || !bytes.Equal(copied.Bytes(), wantRange) {
			t.Errorf("CopyN(%d bytes at %d): %d bytes, %v; differ from the content", sp.n, sp.off, n, err)
		}
	}
	if _, err := content.ReadAt(make([]byte, 1), int64(len(want))); err != io.EOF {
		t.Errorf("ReadAt past the end: %v, want io.EOF", err)
	}
	if _, err := content.CopyRange(int64(len(want))-1, 2, func(piece *io.LimitedReader) (int64, error) { return io.Copy(io.Discard, piece) }); err == nil {
		t.Error("CopyRange past the end succeeded")
	}
}

// sharedSegments counts the segments of the index at path whose two files
// are the files of a segment of the index at prev (hard links), and adds
// up the sizes of the others, which the build wrote.
func sharedSegments(t *testing.T, path, prev string) (shared int, written int64) {
	t.Helper()
	prevManifest, err := readManifest(ContentDir(prev))
	if err != nil {
		t.Fatal(err)
	}
	var prevFiles []os.FileInfo
	for _, s := range prevManifest.Segments {
		for _, name := range []string{s.Content, s.Gzip} {
			info, err := os.Stat(filepath.Join(ContentDir(prev), name))
			if err != nil {
				t.Fatal(err)
			}
			prevFiles = append(prevFiles, info)
		}
	}
	m, err := readManifest(ContentDir(path))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range m.Segments {
		linked := 0
		for _, name := range []string{s.Content, s.Gzip} {
			info, err := os.Stat(filepath.Join(ContentDir(path), name))
			if err != nil {
				t.Fatal(err)
			}
			if slices.ContainsFunc(prevFiles, func(p os.FileInfo) bool { return os.SameFile(p, info) }) {
				linked++
			}
		}
		switch linked {
		case 2:
			shared++
		case 0:
			written += s.Size + s.GzipSize
		default:
			t.Errorf("segment %s: one of its files is linked, the other not", s.Content)
		}
	}
	return shared, written
}

// TestIncrementalLinksUnchangedSegments: an incremental build after one
// package's file changed shares, by hard links, every segment of the
// previous index that holds only unchanged files, and writes only the
// segments around the change: with a segment per file, all but one; with
// several files per segment, the changed file's segment and what a
// segment cut short before a linked one holds. Either way its streams are
// those of a full build.
func TestIncrementalLinksUnchangedSegments(t *testing.T) {
	for _, tc := range []struct {
		name        string
		segmentSize int64
		// wantShared is the least number of segments shared.
		wantShared func(files int) int
	}{
		{"a file per segment", 1, func(files int) int { return files - 1 }},
		{"files per segment", 150 << 10, func(files int) int { return files/2 - 2 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			withSegmentSize(t, tc.segmentSize)
			dir := generated(t, fbcgen.Options{Packages: 12, Bundles: 120, BundleObjectBytes: 300, Seed: 4})
			work := t.TempDir()
			prev, _ := buildAt(t, work, "prev", dir, "")
			m := fbcchange.ReadModel(t, dir)
			paths := m.Paths()
			m.AppendBlob(paths[len(paths)/2], "test.custom", "edit")
			m.Write(t, dir)
			got, want, _ := incrementalMatchesFull(t, work, dir, prev)
			shared, written := sharedSegments(t, got, prev)
			if shared < tc.wantShared(len(paths)) {
				t.Errorf("%d segments shared with the previous index, want at least %d", shared, tc.wantShared(len(paths)))
			}
			_, all := sharedSegments(t, want, prev)
			if written >= all {
				t.Errorf("the incremental build wrote %d bytes of segments, a full build %d", written, all)
			}
			t.Logf("%d segments shared, %d bytes written of %d", shared, written, all)
		})
	}
}

// TestIncrementalLimitsLowered: a build given lower limits than the
// previous index was built with fails as a full build with those limits
// fails, although the file that breaks them did not change and would
// otherwise be carried over unread.
func TestIncrementalLimitsLowered(t *testing.T) {
	dir := generated(t, fbcgen.Options{Packages: 6, Bundles: 30, BundleObjectBytes: 2000, Seed: 5})
	for _, tc := range []struct {
		name   string
		limits fbc.Limits
	}{
		{"blob", fbc.Limits{BlobBytes: 1000}},
		{"file", fbc.Limits{FileBytes: 2000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work, catalog, prev := copyCatalog(t, dir)
			// A small file is the one change: it breaks neither limit.
			if err := os.WriteFile(filepath.Join(catalog, "zz-extra.json"), []byte(`{"schema":"test.custom","name":"x"}`+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			src := Content{FS: os.DirFS(catalog), Ref: catalog, Digest: "sha256:test", Limits: tc.limits}
			_, fullErr := Build(context.Background(), filepath.Join(work, "full.db"), src, time.Unix(0, 0))
			if !errors.Is(fullErr, ErrInvalidCatalog) {
				t.Fatalf("a full build with %+v: %v, want an invalid catalog", tc.limits, fullErr)
			}
			src.Previous = prev
			stats, err := Build(context.Background(), filepath.Join(work, "got.db"), src, time.Unix(0, 0))
			if err == nil || err.Error() != fullErr.Error() {
				t.Errorf("an incremental build with %+v: %+v, %v; want the full build's error %q", tc.limits, stats.Build, err, fullErr)
			}
		})
	}
}
