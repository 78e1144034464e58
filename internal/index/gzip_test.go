package index

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/catalogd/catalogd/test/fbcgen"
)

// TestCRC32Combine: the combined CRC of two parts is the CRC the standard
// library computes over their concatenation, for lengths from none to
// past the bits of a byte's power.
func TestCRC32Combine(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 3, 7, 64, 255, 1000, 4096, 65537} {
		for _, m := range []int{0, 1, 5, 100, 70000} {
			a, b := make([]byte, n), make([]byte, m)
			for i := range a {
				a[i] = byte(rng.Uint32())
			}
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			got := crc32Combine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), int64(m))
			if want := crc32.ChecksumIEEE(append(a, b...)); got != want {
				t.Errorf("combine of %d and %d bytes = %08x, want %08x", n, m, got, want)
			}
		}
	}
}

// fileRow is a row of the files table.
type fileRow struct {
	Path          string `db:"path"`
	Sum           []byte `db:"sha256"`
	ContentOffset int64  `db:"content_offset"`
	ContentLength int64  `db:"content_length"`
	GzipOffset    int64  `db:"gzip_offset"`
	GzipLength    int64  `db:"gzip_length"`
	GzipCRC       int64  `db:"gzip_crc"`
	FirstBlob     int64  `db:"first_blob"`
	Blobs         int64  `db:"blobs"`
}

func fileRows(t *testing.T, db *sqlx.DB) []fileRow {
	t.Helper()
	var rows []fileRow
	if err := db.Select(&rows, `SELECT path, sha256, content_offset, content_length, gzip_offset, gzip_length, gzip_crc, first_blob, blobs FROM files ORDER BY id`); err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestGzipSegments: the gzip copy is one member that the standard library
// decompresses to the content file, and each file's segment, framed alone
// with a header, the final block and a trailer of its own CRC and size, is
// a gzip member of its own that decompresses to the file's range of the
// content file: no segment refers to another.
func TestGzipSegments(t *testing.T) {
	dir := t.TempDir()
	if _, err := fbcgen.Write(context.Background(), dir, fbcgen.Options{Packages: 6, Bundles: 40, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	db, _ := buildDir(t, dir)
	path := dbPath(t, db)
	content := contentFile(t, db)
	if got := gunzipFile(t, path); !bytes.Equal(got, content) {
		t.Fatalf("gzip copy decompresses to %d bytes, not the %d of the content file", len(got), len(content))
	}
	gz := streamBytes(t, path, true)
	rows := fileRows(t, db)
	if len(rows) < 2 {
		t.Fatalf("%d files recorded, want several", len(rows))
	}
	var blobs int64
	for i, r := range rows {
		if r.ContentOffset+r.ContentLength > int64(len(content)) || r.GzipOffset+r.GzipLength > int64(len(gz)) {
			t.Fatalf("file %s: ranges past the files: %+v", r.Path, r)
		}
		if i > 0 && (r.ContentOffset != rows[i-1].ContentOffset+rows[i-1].ContentLength || r.GzipOffset != rows[i-1].GzipOffset+rows[i-1].GzipLength) {
			t.Errorf("file %s does not follow %s", r.Path, rows[i-1].Path)
		}
		blobs += r.Blobs
		want := content[r.ContentOffset : r.ContentOffset+r.ContentLength]
		if uint32(r.GzipCRC) != crc32.ChecksumIEEE(want) {
			t.Errorf("file %s: crc %08x, want %08x", r.Path, r.GzipCRC, crc32.ChecksumIEEE(want))
		}
		member := append([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}, gz[r.GzipOffset:r.GzipOffset+r.GzipLength]...)
		member = append(member, 0x03, 0x00)
		member = binary.LittleEndian.AppendUint32(member, crc32.ChecksumIEEE(want))
		member = binary.LittleEndian.AppendUint32(member, uint32(len(want)))
		zr, err := gzip.NewReader(bytes.NewReader(member))
		if err != nil {
			t.Fatalf("file %s: %v", r.Path, err)
		}
		got, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("file %s: segment alone: %v", r.Path, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("file %s: segment alone decompresses to %d bytes, want its %d", r.Path, len(got), len(want))
		}
	}
	if n := count(t, db, `SELECT count(*) FROM blobs`); blobs != int64(n) {
		t.Errorf("files hold %d blobs, the index %d", blobs, n)
	}
}

// TestFileHashes: the files table records each file's SHA-256, as the
// source gave it (Content.FileHash) or, where it gives none, computed from
// the file's bytes.
func TestFileHashes(t *testing.T) {
	fsys := fbcgen.ReplacesChain("a", 3, false)
	for k, v := range fbcgen.ReplacesChain("b", 2, false) {
		fsys["b/"+k] = v
	}
	given := sha256.Sum256([]byte("given"))
	tests := []struct {
		name     string
		fileHash func(string) ([sha256.Size]byte, bool)
		want     func(path string) [sha256.Size]byte
	}{
		{"computed", nil, func(path string) [sha256.Size]byte { return sha256.Sum256(fsys[path].Data) }},
		// A source's hash is of the file as it was when the source read
		// it; the file may have been edited since. A build records the hash
		// of the bytes it indexed, or reverting the edit would look like no
		// change to the next incremental build.
		{"given but stale", func(name string) ([sha256.Size]byte, bool) { return given, strings.HasPrefix(name, "b/") },
			func(path string) [sha256.Size]byte { return sha256.Sum256(fsys[path].Data) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "index.db")
			if _, err := Build(context.Background(), path, Content{FS: fsys, Digest: "sha256:x", FileHash: tc.fileHash}, time.Now()); err != nil {
				t.Fatal(err)
			}
			db := sqlx.MustOpen("sqlite", FileURI(path, url.Values{"mode": {"ro"}}))
			defer db.Close()
			rows := fileRows(t, db)
			if len(rows) != len(fsys) {
				t.Fatalf("%d files recorded, want %d", len(rows), len(fsys))
			}
			for _, r := range rows {
				if want := tc.want(r.Path); !bytes.Equal(r.Sum, want[:]) {
					t.Errorf("%s: sha256 %x, want %x", r.Path, r.Sum, want)
				}
			}
		})
	}
}
