package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/catalogd/catalogd/client"
	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/query"
	"github.com/catalogd/catalogd/internal/store"
	"github.com/catalogd/catalogd/test/apivalidate"
	"github.com/catalogd/catalogd/test/sqltrace"
)

const demoDir = "../../test/testdata/demo"

// harness is a real server on loopback over real index files, with the
// generated client whose every answer is checked against openapi.yaml.
type harness struct {
	t      *testing.T
	store  *store.Store
	reg    *catalogs.Table
	srv    *httptest.Server
	client *client.ClientWithResponses
	http   *http.Client
	// metrics is the registry the server's metrics are registered on.
	metrics *prometheus.Registry
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	indexes, err := store.New(t.TempDir(), testr.New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { indexes.Close() })
	return newHarnessWith(t, indexes, indexes)
}

func newHarnessWith(t *testing.T, store *store.Store, idx Indexes) *harness {
	t.Helper()
	h := &harness{t: t, store: store, reg: catalogs.NewTable()}
	h.reg.MarkLoaded()
	h.metrics = prometheus.NewRegistry()
	api := New(h.reg, idx, Options{Log: testr.NewWithOptions(t, testr.Options{Verbosity: 0}), Metrics: h.metrics})
	h.srv = httptest.NewServer(api)
	t.Cleanup(h.srv.Close)
	h.http = &http.Client{Transport: apivalidate.New(t).Transport(t, http.DefaultTransport)}
	c, err := client.NewClientWithResponses(h.srv.URL, client.WithHTTPClient(h.http))
	if err != nil {
		t.Fatal(err)
	}
	h.client = c
	return h
}

// add indexes dir as catalog name, which then serves.
func (h *harness) add(name, dir string, priority int32) {
	h.t.Helper()
	h.reg.Put(catalogs.Catalog{Name: name, Source: dir, Priority: priority})
	if _, _, _, err := h.store.Update(context.Background(), name, index.Content{FS: os.DirFS(dir), Ref: dir, Digest: "sha256:" + name + filepath.Base(dir)}); err != nil {
		h.t.Fatal(err)
	}
}

// get fetches a path through the validating transport.
func (h *harness) get(path string, header ...string) *http.Response {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodGet, h.srv.URL+path, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := h.http.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// tracingIndexes serves the store's snapshots, each read through a
// Catalog of its own on traced connections to the same file, so a test can
// count the statements an answer runs; the store's snapshot is held and
// released as usual.
type tracingIndexes struct {
	t      *testing.T
	store  *store.Store
	mu     sync.Mutex
	traced map[string]tracedCatalog // by index file path
}

type tracedCatalog struct {
	catalog *query.Catalog
	trace   *sqltrace.Trace
}

func newTracingIndexes(t *testing.T, store *store.Store) *tracingIndexes {
	return &tracingIndexes{t: t, store: store, traced: map[string]tracedCatalog{}}
}

func (ti *tracingIndexes) Acquire(catalog string) (*store.Snapshot, error) {
	snap, err := ti.store.Acquire(catalog)
	if err != nil {
		return nil, err
	}
	snap.Catalog = ti.file(snap.Info.Path).catalog
	return snap, nil
}

// file returns the traced Catalog of an index file, opening it on first use.
func (ti *tracingIndexes) file(path string) tracedCatalog {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	tc, ok := ti.traced[path]
	if !ok {
		db, trace := sqltrace.Open(ti.t, path)
		// Opened once and kept open until the test ends, as the store keeps
		// a live index's content file; a retired index is removed
		// meanwhile, which an open file does not notice.
		content, gz, err := index.OpenStreams(path)
		if err != nil {
			ti.t.Fatal(err)
		}
		ti.t.Cleanup(func() { content.Close(); gz.Close() })
		tc = tracedCatalog{catalog: query.New(db, content), trace: trace}
		ti.t.Cleanup(tc.catalog.Close)
		ti.traced[path] = tc
	}
	return tc
}
