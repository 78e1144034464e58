package httpapi

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/go-logr/logr/testr"

	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/store"
	"github.com/catalogd/catalogd/test/fbcfacts"
	"github.com/catalogd/catalogd/test/fbcgen"
)

// pieceWriter stands for net/http's ResponseWriter below the API: it
// notes each piece handed to its ReadFrom and whether the piece is one
// io.LimitedReader directly over an *os.File, the only form net/http sends
// with sendfile.
type pieceWriter struct {
	http.ResponseWriter
	mu           sync.Mutex
	files, other int
}

// Flush and Hijack complete the methods of net/http's writer, without
// which the API's middleware hides ReadFrom.
func (p *pieceWriter) Flush() { p.ResponseWriter.(http.Flusher).Flush() }

func (p *pieceWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return p.ResponseWriter.(http.Hijacker).Hijack()
}

func (p *pieceWriter) ReadFrom(r io.Reader) (int64, error) {
	p.mu.Lock()
	if lr, ok := r.(*io.LimitedReader); ok {
		if _, ok := lr.R.(*os.File); ok {
			p.files++
		} else {
			p.other++
		}
	} else {
		p.other++
	}
	p.mu.Unlock()
	return p.ResponseWriter.(io.ReaderFrom).ReadFrom(r)
}

// TestAllServedSegmentBySegment serves /api/v1/all of an index whose
// content is cut into several segment files: whole, as a Range across a
// segment boundary, and gzip-encoded, the bytes are the catalog's
// /api/v1/all as computed from its files apart from catalogd, and
// every segment's bytes reach the writer below as pieces over the
// segment's file, which net/http sends with sendfile on a plain
// connection.
func TestAllServedSegmentBySegment(t *testing.T) {
	catalog := t.TempDir()
	// Three package files of about 9 MB each: a segment each.
	if _, err := fbcgen.Write(context.Background(), catalog, fbcgen.Options{Packages: 3, Bundles: 6, BundleObjectBytes: 2000, CRDObjectBytes: 4_500_000, Seed: 2}); err != nil {
		t.Fatal(err)
	}
	indexes, err := store.New(t.TempDir(), testr.New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { indexes.Close() })
	info, _, _, err := indexes.Update(context.Background(), "big", index.Content{FS: os.DirFS(catalog), Ref: catalog, Digest: "sha256:big"})
	if err != nil {
		t.Fatal(err)
	}
	// The content, computed from the catalog's files apart from catalogd;
	// the segment files give only where each segment ends.
	want := fbcfacts.Load(t, catalog).JSONLines()
	entries, err := os.ReadDir(index.ContentDir(info.Path))
	if err != nil {
		t.Fatal(err)
	}
	var segmentEnds []int
	end := 0
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".all" {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		end += int(fi.Size())
		segmentEnds = append(segmentEnds, end)
	}
	if end != len(want) {
		t.Fatalf("the segment files hold %d bytes, the catalog's /api/v1/all %d", end, len(want))
	}
	if len(segmentEnds) < 3 {
		t.Fatalf("%d content segments; the test needs several", len(segmentEnds))
	}
	reg := catalogs.NewTable()
	reg.Put(catalogs.Catalog{Name: "big", Source: catalog})
	api := New(reg, indexes, Options{Log: testr.New(t)})
	// Each request's writer, handed over once its handler has returned:
	// the client may have read the whole answer before that.
	served := make(chan *pieceWriter, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pw := &pieceWriter{ResponseWriter: w}
		api.ServeHTTP(pw, r)
		served <- pw
	}))
	t.Cleanup(srv.Close)
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	boundary := segmentEnds[0]
	for _, tc := range []struct {
		name, header, value string
		want                []byte
		gzip                bool
		// wantFiles is the least number of pieces over files.
		wantFiles int
	}{
		{name: "whole", want: want, wantFiles: len(segmentEnds)},
		{name: "range across a boundary", header: "Range", value: "bytes=" + strconv.Itoa(boundary-100) + "-" + strconv.Itoa(boundary+99),
			want: want[boundary-100 : boundary+100], wantFiles: 2},
		{name: "gzip", header: "Accept-Encoding", value: "gzip", want: want, gzip: true, wantFiles: len(segmentEnds)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, srv.URL+"/catalogs/big/api/v1/all", nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.header != "" {
				req.Header.Set(tc.header, tc.value)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			last := <-served
			if tc.gzip {
				if resp.Header.Get("Content-Encoding") != "gzip" {
					t.Fatalf("Content-Encoding %q, want gzip", resp.Header.Get("Content-Encoding"))
				}
				zr, err := gzip.NewReader(bytes.NewReader(got))
				if err != nil {
					t.Fatal(err)
				}
				if got, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("%s: %d bytes that differ from the %d of the catalog's /api/v1/all", resp.Status, len(got), len(tc.want))
			}
			if last.files < tc.wantFiles {
				t.Errorf("%d pieces over segment files (and %d others) reached the writer below, want at least %d", last.files, last.other, tc.wantFiles)
			}
			// Only the gzip header and trailer are no file's.
			if wantOther := map[bool]int{false: 0, true: 2}[tc.gzip]; last.other > wantOther {
				t.Errorf("%d pieces not over a file reached the writer below, want at most %d", last.other, wantOther)
			}
		})
	}
}
