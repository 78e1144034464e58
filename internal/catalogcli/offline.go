package catalogcli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/catalogsync"
	"github.com/catalogd/catalogd/internal/httpapi"
	"github.com/catalogd/catalogd/internal/store"
	"github.com/catalogd/catalogd/internal/unpack"
)

// offlineSource is a catalog read on this machine: a directory or an image.
type offlineSource struct {
	dir, image         string
	insecureRegistries []string
	pullTimeout        time.Duration
	cacheDir           string
	// progress hears when the catalog is indexed, which takes seconds for a
	// large one: a person waiting should know why, once.
	progress io.Writer
}

// offline indexes the source into the cache, unless the cache holds an
// index of the same content digest already, and returns the API's own
// handler over it. The handler is what `catalogd serve` runs, so offline
// answers are the server's answers by construction. close releases the
// index and the cache lock.
func (o offlineSource) open(ctx context.Context) (handler http.Handler, where string, close func(), err error) {
	fetcher, where, err := o.fetcher()
	if err != nil {
		return nil, "", nil, err
	}
	// One cache directory per source, so that a source whose content
	// changes replaces its old index (the store retires it) instead of
	// piling up files. Inside, the store names each index file by the
	// content's digest and skips a rebuild for content it holds already.
	sum := sha256.Sum256([]byte(where))
	dir := filepath.Join(o.cacheDir, hex.EncodeToString(sum[:12]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", nil, fmt.Errorf("create cache directory: %w", err)
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return nil, "", nil, err
	}
	idx, err := store.New(filepath.Join(dir, "index"), logr.Discard())
	if err != nil {
		unlock()
		return nil, "", nil, fmt.Errorf("open cache %s: %w", dir, err)
	}
	closeAll := func() { _ = idx.Close(); unlock() }
	catalog := catalogName(where)
	// An index built from another source of the same name cannot be in
	// this directory (it is the source's own), so only the digest decides.
	fetched, err := fetcher.Fetch(ctx, func(digest string) bool {
		info, ok := idx.Info(catalog)
		return ok && info.Digest == digest
	})
	if err != nil {
		closeAll()
		return nil, "", nil, err
	}
	if fetched.Cleanup != nil {
		defer fetched.Cleanup()
	}
	if fetched.FS != nil {
		if info, ok := idx.Info(catalog); !ok || info.Digest != fetched.Digest {
			fmt.Fprintf(o.progress, "Indexing %s into %s (once for this content)...\n", where, dir)
		}
		if _, _, _, err := idx.Update(ctx, catalog, fetched.Content); err != nil {
			closeAll()
			return nil, "", nil, err
		}
	}
	table := catalogs.NewTable()
	table.Put(catalogs.Catalog{Name: catalog, Source: fetcher.Describe()})
	table.MarkLoaded()
	return httpapi.New(table, idx, httpapi.Options{Log: logr.Discard()}), where, closeAll, nil
}

// fetcher is the sync service's own fetcher of the source, and where it
// is, as errors and the cache key name it.
func (o offlineSource) fetcher() (catalogsync.Fetcher, string, error) {
	if o.dir != "" {
		abs, err := filepath.Abs(o.dir)
		if err != nil {
			return nil, "", fmt.Errorf("catalog directory %s: %w", o.dir, err)
		}
		return catalogsync.DirFetcher{Path: abs}, abs, nil
	}
	ref, err := name.ParseReference(o.image)
	if err != nil {
		return nil, "", fmt.Errorf("image %q: %w", o.image, err)
	}
	unpacker, err := unpack.New(unpack.Options{
		// A person's own registry credentials, as docker and podman use them.
		Keychain:           authn.DefaultKeychain,
		InsecureRegistries: o.insecureRegistries,
		UserAgent:          "kubectl-catalog",
		PullTimeout:        o.pullTimeout,
	})
	if err != nil {
		return nil, "", err
	}
	return catalogsync.ImageFetcher{Ref: ref, Unpacker: unpacker, TempDir: filepath.Join(o.cacheDir, "unpack")}, ref.String(), nil
}

var notNameChars = regexp.MustCompile(`[^a-z0-9]+`)

// catalogName names the offline catalog after the last element of its
// directory or image repository, made a DNS label as catalog names are.
func catalogName(where string) string {
	base := where
	if i := strings.IndexAny(base, "@"); i >= 0 {
		base = base[:i]
	}
	if i := strings.LastIndex(base, ":"); i > strings.LastIndex(base, "/") {
		base = base[:i]
	}
	n := strings.Trim(notNameChars.ReplaceAllString(strings.ToLower(filepath.Base(base)), "-"), "-")
	if len(n) > 63 {
		n = strings.Trim(n[:63], "-")
	}
	if n == "" {
		return "catalog"
	}
	return n
}

// lockDir holds an exclusive lock on dir until the returned function is
// called, so that two commands on one source never build or clean up one
// store at the same time.
func lockDir(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock cache: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock cache: %w", err)
	}
	return func() { _ = f.Close() }, nil
}

// handlerTransport answers requests with an http.Handler in this process,
// so the generated client talks to the offline index as to a server.
type handlerTransport struct{ handler http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.handler.ServeHTTP(rec, req)
	resp := rec.Result()
	resp.Request = req
	return resp, nil
}
