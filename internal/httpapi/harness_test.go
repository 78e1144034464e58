package httpapi

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/go-logr/logr/testr"
	"github.com/jmoiron/sqlx"
	"github.com/prometheus/client_golang/prometheus"
	"modernc.org/sqlite"

	"github.com/catalogd/catalogd/client"
	"github.com/catalogd/catalogd/internal/catalogdb"
	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/store"
	"github.com/catalogd/catalogd/test/apivalidate"
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
	store, err := store.New(t.TempDir(), testr.New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return newHarnessWith(t, store, store)
}

func newHarnessWith(t *testing.T, store *store.Store, idx Indexes) *harness {
	t.Helper()
	h := &harness{t: t, store: store, reg: catalogs.NewTable()}
	h.reg.MarkLoaded()
	h.metrics = prometheus.NewRegistry()
	api, err := New(h.reg, idx, Options{Log: testr.NewWithOptions(t, testr.Options{Verbosity: 0}), Metrics: h.metrics})
	if err != nil {
		t.Fatal(err)
	}
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
	if _, _, _, err := h.store.Update(context.Background(), name, index.Source{FS: os.DirFS(dir), Ref: dir, Digest: "sha256:" + name + filepath.Base(dir)}); err != nil {
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

// tracingIndexes serves snapshots whose connections record every SQL
// statement they prepare, so a test can check each one's query plan.
type tracingIndexes struct {
	store    *store.Store
	mu       sync.Mutex
	catalogs map[string]*catalogdb.Catalog
	dbs      []*sqlx.DB
	seen     *sync.Map
}

func (ti *tracingIndexes) Acquire(catalog string) (*store.Snapshot, error) {
	snap, err := ti.store.Acquire(catalog)
	if err != nil {
		return nil, err
	}
	ti.mu.Lock()
	defer ti.mu.Unlock()
	c, ok := ti.catalogs[snap.Info.Path]
	if !ok {
		db := sqlx.NewDb(sql.OpenDB(traceConnector{inner: &sqlite.Driver{}, dsn: index.FileURI(snap.Info.Path, url.Values{"mode": {"ro"}, "immutable": {"1"}}), seen: ti.seen}), "sqlite")
		ti.dbs = append(ti.dbs, db)
		c = catalogdb.New(db)
		ti.catalogs[snap.Info.Path] = c
	}
	snap.Release() // the traced connection reads the same immutable file
	return &store.Snapshot{Info: snap.Info, Catalog: c}, nil
}

type traceConnector struct {
	inner driver.Driver
	dsn   string
	seen  *sync.Map
}

func (c traceConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.inner.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return traceConn{Conn: conn, seen: c.seen}, nil
}

func (c traceConnector) Driver() driver.Driver { return c.inner }

// traceConn exposes only Prepare, so database/sql prepares every statement
// through it and the text can be recorded.
type traceConn struct {
	driver.Conn
	seen *sync.Map
}

func (c traceConn) Prepare(query string) (driver.Stmt, error) {
	c.seen.Store(query, true)
	return c.Conn.Prepare(query)
}
