// Package httpapi is catalogd's HTTP API (chi): it answers questions about
// the catalogs (channel heads, upgrade edges, GVK providers,
// version-filtered bundles, what a ClusterExtension would install) and serves catalogd's /api/v1 endpoints for
// existing clients. Handlers only translate HTTP to calls of the typed
// read API of package query and back; they run no SQL. Answers use the
// wire types generated from openapi.yaml (package catalogapi), which the
// client decodes into too, so the server and the spec agree by
// construction; convert.go turns query's values into them, in one
// place. Each request reads one index
// snapshot from start to end, so a rebuild never blocks or mixes an
// answer. Every request is logged at V(1) and counted in Prometheus
// metrics by route pattern.
package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/go-logr/logr"
	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/validation"

	catalogd "github.com/catalogd/catalogd"
	"github.com/catalogd/catalogd/api/catalogapi"
	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/graphqlapi"
	"github.com/catalogd/catalogd/internal/store"
)

// Catalogs is what the API needs to know of the catalogs besides their
// indexes; *catalogs.Table provides it.
type Catalogs interface {
	List() []catalogs.Catalog
	Get(name string) (catalogs.Catalog, bool)
	// Loaded is false while the server may not know every catalog yet (a
	// restart before it has read its catalog list).
	Loaded() bool
}

// Indexes gives read access to the live index of a catalog; *store.Store
// provides it.
type Indexes interface {
	Acquire(catalog string) (*store.Snapshot, error)
}

// Server is the REST API.
type Server struct {
	cats   Catalogs
	idx    Indexes
	log    logr.Logger
	router chi.Router
	gzip   gzipPool
	// bundleRelease is whether a resolution that does not say reads
	// releases with BundleReleaseSupport on.
	bundleRelease bool
	// graphql answers catalogd's GraphQL endpoint.
	graphql *graphqlapi.Service
}

// Options configure the REST API.
type Options struct {
	// Log receives failures, and an access log line per request at V(1).
	Log logr.Logger
	// Metrics, if set, receives the per-route request metrics (see
	// metrics); the manager passes controller-runtime's registry. New
	// panics if they are registered there already.
	Metrics prometheus.Registerer
	// BundleReleaseSupport is how a resolution that does not say reads
	// releases: as the operator-controller the server stands in for, with
	// its BundleReleaseSupport gate on or off (its default).
	BundleReleaseSupport bool
	// GraphQLLimits bound each GraphQL query; zero means
	// graphqlapi.DefaultLimits.
	GraphQLLimits graphqlapi.Limits
}

// New returns the REST API as an http.Handler. /healthz and /readyz are
// not its business: internal/server answers them beside it, knowing
// whether the catalogs are indexed.
func New(cats Catalogs, idx Indexes, opts Options) *Server {
	limits := opts.GraphQLLimits
	if limits == (graphqlapi.Limits{}) {
		limits = graphqlapi.DefaultLimits
	}
	s := &Server{cats: cats, idx: idx, log: opts.Log, bundleRelease: opts.BundleReleaseSupport,
		graphql: graphqlapi.New(opts.Log.WithName("graphql"), limits)}
	var m *metrics
	if opts.Metrics != nil {
		m = newMetrics(opts.Metrics)
	}
	r := chi.NewRouter()
	r.Use(observe(opts.Log, m))
	r.Use(s.recoverer)
	// HEAD is answered like GET without a body, as catalogd does; clients
	// use it to learn an answer's size and validators.
	r.Use(middleware.GetHead)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		s.writeProblem(w, r, &problem{status: http.StatusNotFound, typ: "not-found", detail: fmt.Sprintf("no endpoint at %s", r.URL.Path)})
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		detail := fmt.Sprintf("%s is not allowed here; the API is read-only (GET)", r.Method)
		if strings.HasSuffix(r.URL.Path, graphqlPath) {
			detail = fmt.Sprintf("%s is not allowed here; GraphQL queries are POSTed", r.Method)
		}
		s.writeProblem(w, r, &problem{status: http.StatusMethodNotAllowed, typ: "method-not-allowed", detail: detail})
	})
	r.Get("/", s.getIndex)
	r.Get("/openapi.yaml", s.serveSpec)
	r.Get("/catalogs", s.listCatalogs)
	r.Get("/providers", s.listAllProviders)
	r.Get("/resolve", s.resolveAll)
	r.Route("/catalogs/{catalog}", func(r chi.Router) {
		r.Get("/", s.getCatalog)
		r.Get("/packages", s.catalogJSON(s.listPackages, "name", "q", "limit", "continue"))
		r.Get("/packages/{package}", s.packageJSON(s.getPackage))
		r.Get("/packages/{package}/icon", s.catalogHandler(s.getIcon))
		r.Get("/packages/{package}/channels", s.packageJSON(s.listChannels))
		r.Get("/packages/{package}/channels/{channel}", s.packageJSON(s.getChannel))
		r.Get("/packages/{package}/bundles", s.packageJSON(s.listBundles, "version", "channel", "limit", "continue"))
		r.Get("/packages/{package}/bundles/{bundle}", s.packageJSON(s.getBundle))
		r.Get("/packages/{package}/upgrades", s.packageJSON(s.listUpgrades, "from", "channel"))
		r.Get("/providers", s.catalogJSON(s.listProviders, "group", "version", "kind", "latest"))
		r.Get("/changes", s.catalogJSON(s.getChanges, "since"))
		r.Get("/resolve", s.resolveOne)
		r.Get("/api/v1/all", s.catalogHandler(s.serveAll))
		r.Get("/api/v1/metas", s.catalogHandler(s.serveMetas, "schema", "package", "name"))
		r.Post(graphqlPath, s.catalogHandler(s.serveGraphQL))
	})
	s.router = r
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.router.ServeHTTP(w, r) }

// apiIndex is what GET / answers: where to go from the server's address.
var apiIndex = catalogapi.APIIndex{Title: "catalogd catalog API", Catalogs: "catalogs", Openapi: "openapi.yaml"}

func (s *Server) getIndex(w http.ResponseWriter, r *http.Request) {
	if err := checkParams(r.URL.Query(), nil); err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.writeComputed(w, r, apiIndex)
}

func (s *Server) serveSpec(w http.ResponseWriter, r *http.Request) {
	sum := sha256.Sum256(catalogd.OpenAPISpec)
	w.Header().Set("Content-Type", "application/yaml")
	w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:8])+`"`)
	spec := bytes.NewReader(catalogd.OpenAPISpec)
	if err := serveRanged(w, r, time.Time{}, spec, spec.Size()); err != nil {
		s.writeProblem(w, r, err)
	}
}

// pathParam is the path parameter key as the client meant it. chi matches
// on the path as sent whenever the client escaped a character net/http
// would have left alone (a ';', ',' or '/' inside a name), and then hands
// back the segment still escaped: a name is found only once unescaped.
func pathParam(r *http.Request, key string) string {
	v := chi.URLParam(r, key)
	if r.URL.RawPath == "" {
		return v
	}
	if unescaped, err := url.PathUnescape(v); err == nil {
		return unescaped
	}
	return v
}

// problem is an error answered as an RFC 9457 problem document.
type problem struct {
	status     int
	typ        string
	detail     string
	param      string
	candidates []string
	retryAfter string
	// members, if set, is an object whose fields the document carries
	// beside its own (a failed resolution carries the resolution,
	// version-gone the oldest version still known).
	members any
}

func (p *problem) Error() string { return p.detail }

var problemTitles = map[string]string{
	"invalid-parameter":      "Invalid parameter",
	"unknown-parameter":      "Unknown parameter",
	"not-found":              "Not found",
	"method-not-allowed":     "Method not allowed",
	"catalog-not-ready":      "Catalog not indexed yet",
	"catalog-failed":         "Catalog failed to index",
	"catalog-unavailable":    "Catalog unavailable",
	"range-not-satisfiable":  "Range not satisfiable",
	"precondition-failed":    "Precondition failed",
	"internal":               "Internal error",
	"channel-head-ambiguous": "Channel head is ambiguous",
	"version-gone":           "Catalog version unknown or expired",
	"no-bundle":              "No bundle found",
	"ambiguous-resolution":   "Resolution is ambiguous",
	"unsupported-dependency": "Bundle declares a dependency",
}

func badParam(param, format string, args ...any) *problem {
	return &problem{status: http.StatusBadRequest, typ: "invalid-parameter", param: param, detail: fmt.Sprintf(format, args...)}
}

func notFound(param, format string, args ...any) *problem {
	return &problem{status: http.StatusNotFound, typ: "not-found", param: param, detail: fmt.Sprintf(format, args...)}
}

// writeProblem answers err; anything but a *problem is a server fault, logged
// and answered without its details.
func (s *Server) writeProblem(w http.ResponseWriter, r *http.Request, err error) {
	var p *problem
	if !errors.As(err, &p) {
		s.log.Error(err, "request failed", "method", r.Method, "path", r.URL.Path)
		p = &problem{status: http.StatusInternalServerError, typ: "internal", detail: "the server failed to answer; see its log"}
	}
	doc := map[string]any{}
	if p.members != nil {
		if data, err := json.Marshal(p.members); err == nil {
			_ = json.Unmarshal(data, &doc)
		}
	}
	for k, v := range map[string]any{
		"type":     "/problems/" + p.typ,
		"title":    problemTitles[p.typ],
		"status":   p.status,
		"detail":   p.detail,
		"instance": r.URL.RequestURI(),
	} {
		doc[k] = v
	}
	if p.param != "" {
		doc["parameter"] = p.param
	}
	if len(p.candidates) > 0 {
		doc["candidates"] = p.candidates
	}
	body, _ := json.Marshal(doc)
	h := w.Header()
	h.Del("ETag")
	h.Del("Last-Modified")
	h.Del("Content-Encoding")
	h.Set("Content-Type", "application/problem+json")
	h.Set("Cache-Control", "no-store")
	if p.retryAfter != "" {
		h.Set("Retry-After", p.retryAfter)
	}
	w.WriteHeader(p.status)
	_, _ = w.Write(body)
}

func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.writeProblem(w, r, fmt.Errorf("panic: %v", v))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// checkParams rejects query parameters the endpoint does not take, so a typo
// ("chanel=") is an error rather than a silently unfiltered answer.
func checkParams(q url.Values, allowed []string) error {
	var unknown []string
	for k := range q {
		ok := false
		for _, a := range allowed {
			ok = ok || k == a
		}
		if !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	accepted := "none"
	if len(allowed) > 0 {
		accepted = strings.Join(allowed, ", ")
	}
	return &problem{status: http.StatusBadRequest, typ: "unknown-parameter", param: unknown[0],
		detail: fmt.Sprintf("unknown query parameter %q; this endpoint accepts: %s", unknown[0], accepted)}
}

// openCatalog resolves the {catalog} of a request to a snapshot of its index.
func (s *Server) openCatalog(r *http.Request) (*store.Snapshot, error) {
	name := pathParam(r, "catalog")
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return nil, badParam("catalog", "catalog name %q is not a DNS-1123 subdomain: %s", name, strings.Join(errs, "; "))
	}
	c, err := s.lookupCatalog(name)
	if err != nil {
		return nil, err
	}
	if c.Unavailable {
		return nil, &problem{status: http.StatusServiceUnavailable, typ: "catalog-unavailable", param: "catalog",
			detail: fmt.Sprintf("catalog %q is switched off by its owner (availabilityMode Unavailable)", name)}
	}
	snap, err := s.idx.Acquire(name)
	if errors.Is(err, store.ErrNotIndexed) {
		return nil, notIndexed(c)
	}
	return snap, err
}

// notIndexed answers a request to catalog c, which has no index. A Failed
// catalog's content cannot index however often it is tried, so it gets no
// Retry-After: a client that waited as told would only be told the same
// again, while the catalog serves only once someone changes its source.
func notIndexed(c catalogs.Catalog) *problem {
	if c.State(false) == catalogs.Failed {
		return &problem{status: http.StatusServiceUnavailable, typ: "catalog-failed", param: "catalog",
			detail: fmt.Sprintf("catalog %q failed to index and serves nothing until its source holds other content: %s", c.Name, c.LastError)}
	}
	detail := fmt.Sprintf("catalog %q is not indexed yet", c.Name)
	if c.LastError != "" {
		detail += "; last attempt failed: " + c.LastError
	}
	return &problem{status: http.StatusServiceUnavailable, typ: "catalog-not-ready", param: "catalog", detail: detail, retryAfter: "5"}
}

// lookupCatalog finds a catalog by name. A name the server does not know is
// 404 once the catalog list is loaded, and 503 before: right after a
// restart the name may be one of the catalogs about to be listed.
func (s *Server) lookupCatalog(name string) (catalogs.Catalog, error) {
	c, ok := s.cats.Get(name)
	switch {
	case ok:
		return c, nil
	case !s.cats.Loaded():
		return c, &problem{status: http.StatusServiceUnavailable, typ: "catalog-not-ready", param: "catalog", retryAfter: "1",
			detail: fmt.Sprintf("catalog %q is not known yet: the server is still reading its catalog list", name)}
	default:
		return c, notFound("catalog", "no catalog named %q", name)
	}
}

// catalogHandler wraps an endpoint of one catalog: it checks the query
// parameters, holds a snapshot for the whole request and answers errors as
// problem documents. Endpoints stop at their first failed write and when
// the request's context ends, and the snapshot is released however they
// end, an aborted answer included: that is how the server's write
// deadline frees the index file of a client that stopped reading.
func (s *Server) catalogHandler(fn func(http.ResponseWriter, *http.Request, *store.Snapshot) error, params ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := checkParams(r.URL.Query(), params); err != nil {
			s.writeProblem(w, r, err)
			return
		}
		snap, err := s.openCatalog(r)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		defer snap.Release()
		if err := fn(w, r, snap); err != nil {
			s.writeProblem(w, r, err)
		}
	}
}

// catalogJSON is catalogHandler for JSON answers. Because the answer depends
// only on the index content and the request, its ETag is derived from the
// content digest and the request, and a matching If-None-Match is answered
// before any query runs.
func (s *Server) catalogJSON(fn func(*http.Request, *store.Snapshot) (any, error), params ...string) http.HandlerFunc {
	return s.catalogHandler(func(w http.ResponseWriter, r *http.Request, snap *store.Snapshot) error {
		etag := requestETag(snap.Info.Digest, r)
		if notModified(w, r, etag, snap.Info.BuiltAt) {
			return nil
		}
		v, err := fn(r, snap)
		if err != nil {
			return err
		}
		return s.writeJSON(w, r, v, etag, snap.Info.BuiltAt)
	}, params...)
}

// requestETag names one representation: the content digest, the request's
// path and its query parameters in canonical order.
func requestETag(digest string, r *http.Request) string {
	h := sha256.New()
	h.Write([]byte(digest))
	h.Write([]byte{0})
	h.Write([]byte(r.URL.EscapedPath()))
	h.Write([]byte{0})
	h.Write([]byte(r.URL.Query().Encode()))
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// acceptsGzip reports whether the client takes gzip (RFC 9110 §12.5.3):
// listed, or covered by "*", with a weight above zero. "gzip;q=0" refuses
// it, and so does "*;q=0" when gzip is not listed on its own.
func acceptsGzip(r *http.Request) bool {
	gzipQ, starQ := -1.0, -1.0
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, params, _ := strings.Cut(part, ";")
		q := 1.0
		for _, p := range strings.Split(params, ";") {
			if name, v, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.EqualFold(strings.TrimSpace(name), "q") {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil || f < 0 || f > 1 {
					f = 0 // a weight that does not parse accepts nothing
				}
				q = f
			}
		}
		switch enc = strings.TrimSpace(enc); {
		case strings.EqualFold(enc, "gzip"), strings.EqualFold(enc, "x-gzip"):
			gzipQ = max(gzipQ, q)
		case enc == "*":
			starQ = max(starQ, q)
		}
	}
	if gzipQ >= 0 {
		return gzipQ > 0
	}
	return starQ > 0
}

// representationETag quotes an ETag, marking gzip-encoded representations:
// a strong ETag must differ between encodings.
func representationETag(etag string, gz bool) string {
	if gz {
		return `"` + etag + `-gzip"`
	}
	return `"` + etag + `"`
}

// maxETags is the most entity tags of an If-None-Match the server
// compares; a longer list is ignored (the answer is sent in full), so a
// request cannot make the server compare without end.
const maxETags = 64

// notModified answers 304 when the client's copy is current. If-None-Match
// uses the weak comparison (RFC 9110 §13.1.2): W/"x" matches "x".
func notModified(w http.ResponseWriter, r *http.Request, etag string, modified time.Time) bool {
	tag := representationETag(etag, acceptsGzip(r))
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		candidates := strings.Split(inm, ",")
		if len(candidates) > maxETags {
			return false
		}
		for _, candidate := range candidates {
			c := strings.TrimSpace(candidate)
			if strings.TrimPrefix(c, "W/") == tag || c == "*" {
				setValidators(w, tag, modified)
				w.WriteHeader(http.StatusNotModified)
				return true
			}
		}
		return false
	}
	if ims, err := http.ParseTime(r.Header.Get("If-Modified-Since")); err == nil && !modified.IsZero() && !modified.Truncate(time.Second).After(ims) {
		setValidators(w, tag, modified)
		w.WriteHeader(http.StatusNotModified)
		return true
	}
	return false
}

func setValidators(w http.ResponseWriter, tag string, modified time.Time) {
	h := w.Header()
	h.Set("ETag", tag)
	h.Set("Vary", "Accept-Encoding")
	if !modified.IsZero() {
		h.Set("Last-Modified", modified.UTC().Format(http.TimeFormat))
	}
}

// gzipMin is the size below which compressing costs more than it saves.
const gzipMin = 1024

// gzipPool reuses compressors: each holds about a megabyte of state, and
// allocating one per answer was the main cause of GC pauses under load.
// They are klauspost/compress's, whose fastest level compresses answers of
// a few hundred KiB (a wide package's resolution) in about half the time
// of the standard library's, and smaller.
type gzipPool struct{ pool sync.Pool }

// get returns a compressor writing to w; put it back after Close.
func (p *gzipPool) get(w io.Writer) *gzip.Writer {
	if zw, ok := p.pool.Get().(*gzip.Writer); ok {
		zw.Reset(w)
		return zw
	}
	zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
	return zw
}

func (p *gzipPool) put(zw *gzip.Writer) { p.pool.Put(zw) }

// writeJSON answers v as JSON, gzip-encoded when the client takes it.
func (s *Server) writeJSON(w http.ResponseWriter, r *http.Request, v any, etag string, modified time.Time) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode answer: %w", err)
	}
	return s.writeBody(w, r, body, etag, modified)
}

// writeBody answers body, JSON already encoded, as writeJSON does.
func (s *Server) writeBody(w http.ResponseWriter, r *http.Request, body []byte, etag string, modified time.Time) error {
	gz := acceptsGzip(r)
	setValidators(w, representationETag(etag, gz), modified)
	w.Header().Set("Content-Type", "application/json")
	if gz && len(body) >= gzipMin {
		var buf bytes.Buffer
		zw := s.gzip.get(&buf)
		_, _ = zw.Write(body)
		_ = zw.Close()
		s.gzip.put(zw)
		w.Header().Set("Content-Encoding", "gzip")
		body = buf.Bytes()
	}
	_, err := w.Write(body)
	return err
}

// bodyETag derives an ETag from the encoded answer itself, for answers that
// depend on more than one catalog's content (the catalog list, its states).
func bodyETag(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:12])
}
