package httpsource_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/catalogd/catalogd/internal/catalogsync"
	"github.com/catalogd/catalogd/internal/source"
	"github.com/catalogd/catalogd/internal/source/httpsource"
	"github.com/catalogd/catalogd/internal/unpack"
	"github.com/catalogd/catalogd/test/benchenv"
	"github.com/catalogd/catalogd/test/registrytest"
)

// BenchmarkFetch fetches the bench catalog whole (download and extract),
// as a .tar.gz over HTTP and as a catalog image from a registry, both on
// loopback, reporting the peak Go heap of one fetch beside its time: the
// HTTP source should cost what an image costs.
func BenchmarkFetch(b *testing.B) {
	dir := benchenv.Catalog(b)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	if err := tw.AddFS(os.DirFS(dir)); err != nil {
		b.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		b.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		b.Fatal(err)
	}
	u, err := unpack.New(unpack.Options{})
	if err != nil {
		b.Fatal(err)
	}

	srv := newServer(b, false)
	srv.set("/catalog.tar.gz", doc{body: buf.Bytes()})
	c, err := httpsource.New(httpsource.Options{Extractor: u})
	if err != nil {
		b.Fatal(err)
	}
	httpFetcher := c.Fetcher(source.HTTP{URL: srv.URL + "/catalog.tar.gz"}, httpsource.Auth{}, b.TempDir())

	reg := registrytest.New(b)
	digestRef := registrytest.PushCatalog(b, reg.Host, "catalogs/bench:v1", dir, registrytest.PushOptions{})
	ref, err := name.ParseReference(digestRef, name.Insecure)
	if err != nil {
		b.Fatal(err)
	}
	iu, err := unpack.New(unpack.Options{InsecureRegistries: []string{reg.Host}})
	if err != nil {
		b.Fatal(err)
	}
	imageFetcher := catalogsync.ImageFetcher{Ref: ref, Unpacker: iu, TempDir: b.TempDir()}

	for _, bc := range []struct {
		name string
		f    source.Fetcher
	}{{"http", httpFetcher}, {"image", imageFetcher}} {
		b.Run(bc.name, func(b *testing.B) {
			// MB/s is of the compressed archive, the same bytes both ways.
			b.SetBytes(int64(buf.Len()))
			var peak float64
			for b.Loop() {
				peak = max(peak, benchenv.PeakHeapMiB(func() {
					got, err := bc.f.Fetch(context.Background(), func(string) bool { return false })
					if err != nil {
						b.Fatal(err)
					}
					got.Release()
				}))
			}
			b.ReportMetric(peak, "peak-heap-MiB")
		})
	}
}
