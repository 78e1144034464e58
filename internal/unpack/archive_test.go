package unpack_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/catalogd/catalogd/internal/unpack"
	"github.com/catalogd/catalogd/test/dirtree"
)

// TestExtractArchiveSpeaksOfTheArchive: a lone archive (a download, a git
// tree) has no layers, so what ExtractArchive refuses is said of "the
// archive", classified as for a layer, and leaves no destination behind.
func TestExtractArchiveSpeaksOfTheArchive(t *testing.T) {
	tarOf := func(hdr *tar.Header, body string) []byte {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		hdr.Size = int64(len(body))
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	gz := dirtree.Gzip(t, tarOf(&tar.Header{Name: "c.json", Typeflag: tar.TypeReg, Mode: 0o644}, strings.Repeat("{}\n", 4096)))
	// A gzip header whose deflate stream is cut off and followed by zeros.
	corrupt := append(gz[:30:30], make([]byte, 600)...)

	for _, tc := range []struct {
		name    string
		archive []byte
		want    string
		as      func(error) bool
	}{
		{"corrupt gzip", corrupt, "the archive is not a readable tar stream (plain, gzip or zstd): reading the archive: ",
			func(err error) bool { var c *unpack.CorruptLayerError; return errors.As(err, &c) && c.Archive }},
		{"entry leaving the root", tarOf(&tar.Header{Name: "../x.json", Typeflag: tar.TypeReg, Mode: 0o644}, "{}"), `unsafe entry "../x.json" in the archive: `,
			func(err error) bool { var u *unpack.UnsafeEntryError; return errors.As(err, &u) && u.Archive }},
		{"link leaving the root", tarOf(&tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "../../etc"}, ""), `unsafe entry "l" in the archive: symbolic link target "../../etc" leaves the root of the image or archive`,
			func(err error) bool { var u *unpack.UnsafeEntryError; return errors.As(err, &u) && u.Archive }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := unpack.New(unpack.Options{})
			if err != nil {
				t.Fatal(err)
			}
			dst := filepath.Join(t.TempDir(), "out")
			_, err = u.ExtractArchive(context.Background(), bytes.NewReader(tc.archive), dst)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !tc.as(err) || !unpack.IsTerminal(err) {
				t.Fatalf("err = %v; want a terminal error of the archive saying %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "layer") {
				t.Errorf("an archive's error speaks of layers: %v", err)
			}
			if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the destination is left behind: %v", err)
			}
		})
	}
}
