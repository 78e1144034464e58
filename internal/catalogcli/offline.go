package catalogcli

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/catalogsync"
	"github.com/catalogd/catalogd/internal/datadir"
	"github.com/catalogd/catalogd/internal/httpapi"
	"github.com/catalogd/catalogd/internal/prebuilt"
	"github.com/catalogd/catalogd/internal/source"
	"github.com/catalogd/catalogd/internal/source/gitsource"
	"github.com/catalogd/catalogd/internal/source/httpsource"
	"github.com/catalogd/catalogd/internal/source/kinds"
	"github.com/catalogd/catalogd/internal/store"
	"github.com/catalogd/catalogd/internal/unpack"
)

// offlineSource is a catalog read on this machine: a directory, an image,
// or any source source.Parse reads.
type offlineSource struct {
	dir, image, source string
	insecureRegistries []string
	pullTimeout        time.Duration
	// prebuiltIndex takes the index published beside an image (package
	// prebuilt) rather than build one.
	prebuiltIndex bool
	cacheDir      string
	// cacheMaxBytes bounds the cache: older entries are evicted after this
	// run's index is ready.
	cacheMaxBytes int64
	// progress hears when the catalog is indexed, which takes seconds for a
	// large one: a person waiting should know why, once.
	progress io.Writer
}

// offline indexes the source into the cache, unless the cache holds an
// index of the same content digest already, and returns the API's own
// handler over it. The handler is what `catalogd serve` runs, so offline
// answers are the server's answers by construction. close releases the
// index and the cache entry's lock.
func (o offlineSource) open(ctx context.Context) (handler http.Handler, where string, close func(), err error) {
	where, spec, err := o.where()
	if err != nil {
		return nil, "", nil, err
	}
	cache, err := openCache(o.cacheDir, o.cacheMaxBytes)
	if err != nil {
		return nil, "", nil, err
	}
	// One cache entry per source, so that a source whose content changes
	// replaces its old index (the store retires it) instead of piling up
	// files. Inside, the store names each index file by the content's
	// digest and skips a rebuild for content it holds already.
	sum := sha256.Sum256([]byte(where))
	name := hex.EncodeToString(sum[:12])
	entry, err := cache.entry(name)
	if err != nil {
		return nil, "", nil, err
	}
	fetcher, err := o.fetcher(spec, filepath.Join(entry.dir, datadir.UnpackDir))
	if err != nil {
		entry.unlock()
		return nil, "", nil, err
	}
	idx, err := store.New(filepath.Join(entry.dir, datadir.IndexDir), logr.Discard())
	if err != nil {
		entry.unlock()
		return nil, "", nil, fmt.Errorf("open cache %s: %w", entry.dir, err)
	}
	closeAll := func() { _ = idx.Close(); entry.unlock() }
	catalog := catalogName(spec, where)
	// An index built from another source of the same name cannot be in
	// this directory (it is the source's own), so only the digest decides.
	live := func(digest string) bool {
		info, ok := idx.Info(catalog)
		return ok && info.Digest == digest
	}
	_, _, adopted, err := catalogsync.AdoptPrebuilt(ctx, idx, catalog, fetcher, live)
	if err != nil && prebuilt.Reason(err) != "absent" {
		fmt.Fprintf(o.progress, "Not using the prebuilt index of %s: %v\n", where, err)
	}
	fetched, err := fetcher.Fetch(ctx, func(digest string) bool { return adopted || live(digest) })
	if err != nil {
		closeAll()
		return nil, "", nil, err
	}
	if fetched.Cleanup != nil {
		defer fetched.Cleanup()
	}
	if fetched.FS != nil {
		if info, ok := idx.Info(catalog); !ok || info.Digest != fetched.Digest {
			fmt.Fprintf(o.progress, "Indexing %s into %s (once for this content)...\n", where, entry.dir)
		}
		if _, _, _, err := idx.Update(ctx, catalog, fetched.Content); err != nil {
			closeAll()
			return nil, "", nil, err
		}
	}
	// The entry of this run is complete now and counts toward the bound;
	// the answer does not depend on the trim, so a failure only warns.
	if _, err := cache.trim(name); err != nil {
		fmt.Fprintf(o.progress, "warning: cannot bring the cache under %s: %v\n", humanBytes(o.cacheMaxBytes), err)
	}
	table := catalogs.NewTable()
	table.Put(catalogs.Catalog{Name: catalog, Source: fetcher.Describe()})
	table.MarkLoaded()
	return httpapi.New(table, idx, httpapi.Options{Log: logr.Discard()}), where, closeAll, nil
}

// where is the source as errors and the cache key name it (a directory's
// absolute path, an image reference parsed, any other source in Parse's
// form), and the source itself.
func (o offlineSource) where() (string, source.Spec, error) {
	switch {
	case o.dir != "":
		abs, err := filepath.Abs(o.dir)
		if err != nil {
			return "", source.Spec{}, fmt.Errorf("catalog directory %s: %w", o.dir, err)
		}
		return abs, source.Spec{Dir: abs}, nil
	case o.image != "":
		ref, err := name.ParseReference(o.image)
		if err != nil {
			return "", source.Spec{}, fmt.Errorf("image %q: %w", o.image, err)
		}
		return ref.String(), source.Spec{Image: ref.String()}, nil
	}
	spec, err := source.Parse(o.source)
	if err != nil {
		return "", source.Spec{}, fmt.Errorf("--source: %w", err)
	}
	return spec.String(), spec, nil
}

// fetcher is the sync service's own fetcher of the source, chosen where
// every command chooses one (internal/source/kinds); what it fetches is
// unpacked under unpackDir.
func (o offlineSource) fetcher(spec source.Spec, unpackDir string) (catalogsync.Fetcher, error) {
	unpacker, err := unpack.New(unpack.Options{
		// A person's own registry credentials, as docker and podman use them.
		Keychain:           authn.DefaultKeychain,
		InsecureRegistries: o.insecureRegistries,
		UserAgent:          "kubectl-catalog",
		PullTimeout:        o.pullTimeout,
	})
	if err != nil {
		return nil, err
	}
	git := gitsource.New(gitsource.Options{Extractor: unpacker, PullTimeout: o.pullTimeout, AllowLocal: true})
	web, err := httpsource.New(httpsource.Options{Extractor: unpacker, PullTimeout: o.pullTimeout})
	if err != nil {
		return nil, err
	}
	k := kinds.Kinds{Images: unpacker, Git: git, HTTP: web, TempDir: unpackDir}
	if o.prebuiltIndex {
		k.Prebuilt = prebuilt.New(unpacker, prebuilt.Options{})
	}
	return k.Fetcher(spec, source.Credentials{})
}

var notNameChars = regexp.MustCompile(`[^a-z0-9]+`)

// catalogName names the offline catalog after the last element of what
// holds it (a directory, an image repository, a git repository's catalog
// directory or the repository itself, an archive's file name), made a DNS
// label as catalog names are.
func catalogName(spec source.Spec, where string) string {
	base := where
	switch {
	case spec.Git != nil:
		base = cmp.Or(spec.Git.Directory, strings.TrimSuffix(spec.Git.URL, ".git"))
	case spec.HTTP != nil:
		base, _, _ = strings.Cut(spec.HTTP.URL, "?")
		for _, ext := range []string{".tar.gz", ".tgz", ".tar", ".json", ".yaml", ".yml"} {
			base = strings.TrimSuffix(base, ext)
		}
	case spec.Layout != nil:
		base = spec.Layout.Dir
	default:
		if i := strings.IndexAny(base, "@"); i >= 0 {
			base = base[:i]
		}
		if i := strings.LastIndex(base, ":"); i > strings.LastIndex(base, "/") {
			base = base[:i]
		}
	}
	n := strings.Trim(notNameChars.ReplaceAllString(strings.ToLower(path.Base(filepath.ToSlash(base))), "-"), "-")
	if len(n) > 63 {
		n = strings.Trim(n[:63], "-")
	}
	if n == "" {
		return "catalog"
	}
	return n
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
