package unpack_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/catalogd/catalogd/internal/unpack"
	"github.com/catalogd/catalogd/test/benchenv"
	"github.com/catalogd/catalogd/test/fbcgen"
	"github.com/catalogd/catalogd/test/registrytest"
)

// gzipBombLayer is a gzip layer holding /configs/<bomb.File>, a file of the
// bomb's shape of about size bytes, streamed: the layer is kilobytes.
func gzipBombLayer(t *testing.T, bomb fbcgen.Bomb, size int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(zw)
	for _, hdr := range []*tar.Header{
		{Name: "configs/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "configs/" + bomb.File, Typeflag: tar.TypeReg, Mode: 0o644, Size: bomb.Size(size)},
	} {
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := io.Copy(tw, bomb.Reader(size)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestUnpackBombs unpacks an image whose layer is 64 MiB of each shape of
// issue 18 in a few kilobytes of gzip: unpacking is no place to refuse it
// (the index reader does, fbc), but it streams it to disk whole, in a
// heap that does not grow with the file.
func TestUnpackBombs(t *testing.T) {
	const size = 64 << 20
	reg := registrytest.New(t)
	for _, bomb := range fbcgen.Bombs() {
		t.Run(bomb.Shape, func(t *testing.T) {
			ref := pushBlobs(t, reg, "bombs/"+bomb.Shape+":v1", "/configs", gzipBombLayer(t, bomb, size))
			dst := filepath.Join(t.TempDir(), "dst")
			var res unpack.Result
			var err error
			peak := benchenv.PeakHeapMiB(func() {
				res, err = newUnpacker(t, unpack.Options{InsecureRegistries: []string{reg.Host}}).Unpack(t.Context(), ref, dst)
			})
			if err != nil {
				t.Fatalf("Unpack: %v", err)
			}
			info, err := os.Stat(filepath.Join(dst, bomb.File))
			if err != nil {
				t.Fatal(err)
			}
			if want := bomb.Size(size); info.Size() != want || res.Bytes != want || res.Files != 1 {
				t.Errorf("unpacked %d bytes (%+v); want one file of %d", info.Size(), res, want)
			}
			t.Logf("%d MiB of %s: peak heap %.1f MiB", size>>20, bomb.Shape, peak)
			if peak > 16 {
				t.Errorf("peak heap %.1f MiB unpacking %d MiB of %s; want at most 16 MiB", peak, size>>20, bomb.Shape)
			}
		})
	}
}
