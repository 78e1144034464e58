// Package store keeps the live index of each catalog: it builds a new one
// with index.Build (a database file and its content directory, the content
// and its gzip copy in segment files: index.Files), swaps it in atomically (on disk and in memory)
// only when it is complete, and counts the readers of each index so that a
// replaced one is closed and removed only after its last reader is done. A
// reader holds a Snapshot, whose queries and content all come from one
// index. A rebuild is given the live index to reuse what did not change
// (index.Content.Previous, WithIncremental), and still makes a new one
// that is swapped in whole. Beside the live index it keeps each catalog's
// history (History): the package digests of its last versions, from which
// a Snapshot says what changed since one of them (Snapshot.Changes).
package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/jmoiron/sqlx"

	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/query"
)

// ErrNotIndexed says a catalog has no live index (yet, or any more).
var ErrNotIndexed = errors.New("catalog is not indexed")

// currentLink names, inside a catalog's directory, the symlink to its live
// database file; replacing it with rename(2) is what makes a swap atomic on
// disk, so a restart finds either the old or the new index, never a mix.
const currentLink = "current"

// Prefixes of the files the store writes under a temporary name before
// renaming them into place.
const (
	buildPrefix   = ".build-"
	currentPrefix = ".current-"
	historyPrefix = ".history-"
)

// IsOwnFile reports whether name is one the store gives a file in a
// catalog's directory: index files, the current link, the history, and
// their temporary forms. internal/datadir adopts the data directory of an
// earlier catalogd only when every file there is one of these, so this is
// the one list of them.
func IsOwnFile(name string) bool {
	switch {
	case name == currentLink, name == HistoryFile:
		return true
	case strings.HasPrefix(name, buildPrefix), strings.HasPrefix(name, currentPrefix), strings.HasPrefix(name, historyPrefix):
		return true
	}
	return strings.Contains(name, ".db")
}

// IsOwnDir reports whether name is one the store gives a directory in a
// catalog's directory: an index's content directory (index.ContentDir),
// live, retired or being built.
func IsOwnDir(name string) bool {
	return strings.HasSuffix(name, ".db"+index.ContentDirSuffix)
}

// Info describes a live index.
type Info struct {
	index.Info
	// Path is the database file.
	Path string
}

// Store keeps the live index of each catalog under one directory
// (dir/<catalog>/<digest>.<n>.db and its other files, index.Files, with
// dir/<catalog>/current pointing at the database). A rebuild writes new
// files and swaps them in only when they are complete, synced and checked;
// readers that began on the old index finish on it, and its files are
// removed when the last of them is done.
type Store struct {
	dir string
	log logr.Logger
	now func() time.Time
	mem Memory
	// build is index.Build; a field so that tests can see the content it
	// is given, and what is on disk meanwhile.
	build func(ctx context.Context, path string, src index.Content, builtAt time.Time) (index.Stats, error)
	// incremental says whether builds reuse the live index (see
	// WithIncremental).
	incremental bool

	// historyLen is how many versions each catalog's history keeps.
	historyLen int

	mu       sync.Mutex
	live     map[string]*handle
	building map[string]*sync.Mutex
	// history holds each live catalog's history (see History).
	history map[string]*History
	// watchers are told the name of each catalog whose live index was
	// swapped or removed (see Watch).
	watchers []func(catalog string)
}

// handle is one open index with a count of the readers using it.
type handle struct {
	db *sqlx.DB
	// content is the content, read at offsets (ReadAt) by catalog, and gz
	// its gzip copy; both hold their segment files open.
	content, gz *index.Stream
	catalog     *query.Catalog
	info        Info
	refs        int  // guarded by Store.mu
	retired     bool // guarded by Store.mu; remove the file when refs drops to 0
	// changes keeps the changes answers computed against this index.
	changes changesCache
}

// Snapshot is a reader's hold on one index; Release it when done. Every
// query goes through Catalog, the typed read API of the index; blobs are
// copied from the content (Content). A retired index stays on
// disk until its last snapshot is released, so a snapshot must not outlive
// the answer it serves; the HTTP server cuts an answer that makes no
// progress for its write idle bound (internal/server).
type Snapshot struct {
	Info    Info
	Catalog *query.Catalog

	content, gz *index.Stream
	// history is the catalog's history as of this index (see Changes).
	history *History
	changes *changesCache
	release func()
	once    sync.Once
}

// Content returns a reader of the content of the snapshot's index: the
// /all stream, where query.Catalog.BlobRanges locates blobs. Each call
// returns a reader with a position of its own, so the caller may seek it
// and hand it to the connection (which sends it segment file by segment
// file, see index.StreamReader); it is valid until the snapshot is
// released.
func (s *Snapshot) Content() *index.StreamReader { return s.content.NewReader() }

// ContentGzip returns a reader of the gzip copy of the content, as
// Content does of the content.
func (s *Snapshot) ContentGzip() *index.StreamReader { return s.gz.NewReader() }

// Release lets the store close the file once it is no longer live.
func (s *Snapshot) Release() {
	if s.release != nil {
		s.once.Do(s.release)
	}
}

// Memory bounds the SQLite memory each live index keeps: SQLite's pages
// are allocated outside the Go heap (see internal/memlimit), so nothing
// else bounds them. Zero fields take the defaults.
type Memory struct {
	// Conns is the number of connections the index is read through; a
	// reader beyond them waits for one. Default 8.
	Conns int
	// CacheKiB is each connection's page cache (PRAGMA cache_size).
	// Default 512: the files are read through the kernel's page cache, so
	// a connection needs to keep little more than the upper levels of the
	// B-trees it walks.
	CacheKiB int
}

func (m Memory) withDefaults() Memory {
	if m.Conns <= 0 {
		m.Conns = 8
	}
	if m.CacheKiB <= 0 {
		m.CacheKiB = 512
	}
	return m
}

// connMaxIdle is how long a connection stays open unused: a server that
// was busy and is now idle gives back what the connections it no longer
// needs cached, and reopening one costs little next to a burst of
// requests.
const connMaxIdle = time.Minute

// Option sets up a Store.
type Option func(*Store)

// WithMemory bounds the memory each live index keeps.
func WithMemory(m Memory) Option { return func(s *Store) { s.mem = m.withDefaults() } }

// WithIncremental says whether Update hands index.Build the catalog's live
// index to reuse what did not change (index.Content.Previous): on by
// default. Off, every build reads and validates the whole catalog, which
// costs time in proportion to the catalog rather than to the change.
func WithIncremental(on bool) Option { return func(s *Store) { s.incremental = on } }

// New opens the store in dir, reopening the live index of every catalog
// found there and removing files a crash or an earlier swap left behind.
func New(dir string, log logr.Logger, opts ...Option) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create index directory: %w", err)
	}
	s := &Store{dir: dir, log: log, now: time.Now, build: index.Build, incremental: true,
		historyLen: DefaultHistory, mem: Memory{}.withDefaults(),
		live: map[string]*handle{}, building: map[string]*sync.Mutex{}, history: map[string]*History{}}
	for _, o := range opts {
		o(s)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read index directory: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		catalog := e.Name()
		if err := s.reopen(catalog); err != nil {
			log.Info("dropping an index that cannot be reused", "catalog", catalog, "reason", err.Error())
			_ = os.RemoveAll(filepath.Join(dir, catalog))
		}
	}
	return s, nil
}

func (s *Store) reopen(catalog string) error {
	cdir := filepath.Join(s.dir, catalog)
	target, err := os.Readlink(filepath.Join(cdir, currentLink))
	if errors.Is(err, os.ErrNotExist) {
		return os.RemoveAll(cdir) // removed, or never finished a first build
	}
	if err != nil {
		return fmt.Errorf("read live index of %q: %w", catalog, err)
	}
	h, err := openHandle(filepath.Join(cdir, target), s.mem)
	if err != nil {
		return err
	}
	s.live[catalog] = h
	s.cleanup(catalog, target)
	// A crash between a swap and the history's write leaves the live
	// version out of it: it is added now, without the facts of the
	// packages it changed, which went with the old index.
	// The history never keeps an index from serving.
	hist, err := s.extendHistory(context.Background(), readHistory(cdir), nil, h)
	if err == nil {
		err = writeHistory(cdir, hist)
	}
	if err != nil {
		s.log.Error(err, "recording the catalog's history", "catalog", catalog)
		return nil
	}
	s.history[catalog] = hist
	return nil
}

// cleanup removes every file of a catalog but the live index's.
func (s *Store) cleanup(catalog, keep string) {
	cdir := filepath.Join(s.dir, catalog)
	entries, err := os.ReadDir(cdir)
	if err != nil {
		return
	}
	kept := []string{currentLink, HistoryFile}
	for _, f := range index.Files(keep) {
		kept = append(kept, filepath.Base(f))
	}
	for _, e := range entries {
		if !slices.Contains(kept, e.Name()) {
			// Only the store's own names are here (see New), content
			// directories among them.
			_ = os.RemoveAll(filepath.Join(cdir, e.Name()))
		}
	}
}

func openHandle(path string, mem Memory) (*handle, error) {
	// The file never changes once it is live (a rebuild writes a new file),
	// so SQLite may skip all locking: immutable=1.
	db, err := sqlx.Open("sqlite", index.FileURI(path, url.Values{"mode": {"ro"}, "immutable": {"1"},
		"_pragma": {"query_only(1)", fmt.Sprintf("cache_size(-%d)", mem.CacheKiB)}}))
	if err != nil {
		return nil, fmt.Errorf("open index %s: %w", path, err)
	}
	db.SetMaxOpenConns(mem.Conns)
	db.SetMaxIdleConns(mem.Conns)
	db.SetConnMaxIdleTime(connMaxIdle)
	info, err := index.ReadInfo(context.Background(), db)
	if err != nil {
		db.Close()
		if errors.Is(err, index.ErrOtherSchema) {
			return nil, fmt.Errorf("index %s: %w; it will be rebuilt", path, err)
		}
		return nil, fmt.Errorf("read index %s: %w", path, err)
	}
	content, gz, err := openContent(path, info.AllBytes)
	if err != nil {
		db.Close()
		return nil, err
	}
	h := &handle{db: db, content: content, gz: gz, catalog: query.New(db, content)}
	h.info.Info = info
	h.info.Path = path
	return h, nil
}

// openContent opens the content and the gzip copy of the index at path,
// whose segments must all be there with the sizes their list gives, and
// hold the size bytes the index recorded: a version cut short or damaged
// by a crash or by hand is rebuilt, not served.
func openContent(path string, size int64) (content, gz *index.Stream, err error) {
	content, gz, err = index.OpenStreams(path)
	if err != nil {
		return nil, nil, fmt.Errorf("content of index %s: %w", path, err)
	}
	if content.Size() != size {
		content.Close()
		gz.Close()
		return nil, nil, fmt.Errorf("content of index %s: %d bytes, the index recorded %d", path, content.Size(), size)
	}
	return content, gz, nil
}

// close closes the files of h.
func (h *handle) close() error {
	h.catalog.Close()
	return errors.Join(h.db.Close(), h.content.Close(), h.gz.Close())
}

// Watch registers fn to be told, after the fact, the name of each catalog
// whose live index was swapped in or removed, so that a surface which keeps
// something derived from the indexes (the PackageManifest API's watch) can
// follow them without the store knowing it. fn runs on the goroutine that
// made the change, after it is visible to Acquire: it must return quickly
// (signal a channel, say) and must not call back into the store's writers.
func (s *Store) Watch(fn func(catalog string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watchers = append(s.watchers, fn)
}

// changed tells the watchers that catalog's live index changed.
func (s *Store) changed(catalog string) {
	s.mu.Lock()
	watchers := slices.Clone(s.watchers)
	s.mu.Unlock()
	for _, fn := range watchers {
		fn(catalog)
	}
}

// Info returns the live index of catalog, if there is one.
func (s *Store) Info(catalog string) (Info, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.live[catalog]
	if !ok {
		return Info{}, false
	}
	return h.info, true
}

// Acquire returns the live index of catalog for reading. The snapshot stays
// valid, and unchanged, until released, whatever rebuilds happen meanwhile.
func (s *Store) Acquire(catalog string) (*Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.live[catalog]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotIndexed, catalog)
	}
	h.refs++
	return &Snapshot{Info: h.info, Catalog: h.catalog, content: h.content, gz: h.gz, history: s.history[catalog], changes: &h.changes,
		release: func() { s.release(h) }}, nil
}

// hold counts one more reader of the live index of catalog and returns
// it, or nil when there is none; release gives it back.
func (s *Store) hold(catalog string) *handle {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.live[catalog]
	if h != nil {
		h.refs++
	}
	return h
}

func (s *Store) release(h *handle) {
	s.mu.Lock()
	h.refs--
	drop := h.retired && h.refs == 0
	s.mu.Unlock()
	if drop {
		s.drop(h)
	}
}

// drop closes and removes a file no reader holds any more.
func (s *Store) drop(h *handle) {
	if err := h.close(); err != nil {
		s.log.Error(err, "closing retired index", "path", h.info.Path)
	}
	index.RemoveFiles(h.info.Path)
	s.log.V(1).Info("removed retired index", "path", h.info.Path)
}

// retire takes h out of service; it is dropped now or by its last reader.
func (s *Store) retire(h *handle) {
	s.mu.Lock()
	h.retired = true
	drop := h.refs == 0
	s.mu.Unlock()
	if drop {
		s.drop(h)
	}
}

// lock serialises builds of one catalog; different catalogs build in parallel.
func (s *Store) lock(catalog string) func() {
	s.mu.Lock()
	m, ok := s.building[catalog]
	if !ok {
		m = &sync.Mutex{}
		s.building[catalog] = m
	}
	s.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// Update makes src the live index of catalog. When the live index already
// has src's digest it does nothing and reports rebuilt=false. Otherwise it
// builds a new file beside the live one and swaps it in only on success: on
// any error (bad content, full disk, cancelled context) the live index keeps
// answering and the new file is removed. The new index is named after, and
// records, the digest of what the build read (see index.Content.ReadDigest),
// which is src.Digest unless the content changed since src.Digest was
// computed.
//
// With incremental builds on (WithIncremental), the build is given the live
// index as src.Previous, and the live index's files are held, as a reader
// holds them, until the build is done. When the build fails, stats says
// only the mode it was tried in: incremental when it was given the live
// index (the build may have fallen back to a full one before failing).
func (s *Store) Update(ctx context.Context, catalog string, src index.Content) (info Info, stats index.Stats, rebuilt bool, err error) {
	if src.Digest == "" {
		return Info{}, index.Stats{}, false, fmt.Errorf("index catalog %q: source has no digest", catalog)
	}
	unlock := s.lock(catalog)
	defer unlock()

	if cur, ok := s.Info(catalog); ok && cur.Digest == src.Digest {
		return cur, index.Stats{}, false, nil
	}

	cdir := filepath.Join(s.dir, catalog)
	if err := os.MkdirAll(cdir, 0o755); err != nil {
		return Info{}, index.Stats{}, false, fmt.Errorf("index catalog %q: %w", catalog, err)
	}
	tmp := filepath.Join(cdir, buildPrefix+randomSuffix()+".db")
	start := s.now()
	src.Previous = ""
	if s.incremental {
		if prev := s.hold(catalog); prev != nil {
			defer s.release(prev)
			src.Previous = prev.info.Path
		}
	}
	stats, err = s.build(ctx, tmp, src, start)
	if err != nil {
		// The mode tried, for the build metrics.
		tried := index.BuildMode{Mode: index.ModeFull}
		if src.Previous != "" {
			tried.Mode = index.ModeIncremental
		}
		return Info{}, index.Stats{Build: tried}, false, fmt.Errorf("index catalog %q: %w", catalog, err)
	}
	if stats.Digest != src.Digest {
		s.log.V(1).Info("catalog content changed while being indexed; recording the digest of what was read",
			"catalog", catalog, "digestBefore", src.Digest, "digestRead", stats.Digest)
	}
	info, err = s.swapIn(ctx, catalog, tmp, stats.Digest)
	if err != nil {
		return Info{}, index.Stats{}, false, err
	}
	s.log.Info("index swapped in", "catalog", catalog, "digest", stats.Digest,
		"bundles", stats.Bundles, "problems", stats.Problems, "duration", s.now().Sub(start).String(),
		"mode", stats.Build.Mode, "packagesRebuilt", stats.Build.PackagesRebuilt, "reason", stats.Build.Reason)
	return info, stats, true, nil
}

// Adopt makes an index catalog's live one that this process did not
// build: fill writes one into the path it is given (the database, and its
// content directory, index.Files), as a prebuilt index is downloaded,
// returning the CRC-32s of the content files it took as it wrote them,
// and index.Adopt checks it against ref (repository@digest) before it is
// swapped in as Update swaps in a build. When the live index already has
// ref's digest it does nothing and reports adopted=false. On any error,
// fill's or a check's, the live index keeps answering and the files are
// removed; the error says why (index.ErrRefused for a failed check).
func (s *Store) Adopt(ctx context.Context, catalog, ref string, fill func(ctx context.Context, path string) (index.ContentSums, error)) (info Info, adopted bool, err error) {
	_, digest, _ := strings.Cut(ref, "@")
	if digest == "" {
		return Info{}, false, fmt.Errorf("adopt index of catalog %q: reference %q has no digest", catalog, ref)
	}
	unlock := s.lock(catalog)
	defer unlock()
	if cur, ok := s.Info(catalog); ok && cur.Digest == digest {
		return cur, false, nil
	}
	cdir := filepath.Join(s.dir, catalog)
	if err := os.MkdirAll(cdir, 0o755); err != nil {
		return Info{}, false, fmt.Errorf("adopt index of catalog %q: %w", catalog, err)
	}
	tmp := filepath.Join(cdir, buildPrefix+randomSuffix()+".db")
	start := s.now()
	sums, err := fill(ctx, tmp)
	if err != nil {
		index.RemoveFiles(tmp)
		return Info{}, false, fmt.Errorf("adopt index of catalog %q: %w", catalog, err)
	}
	if _, err := index.Adopt(ctx, tmp, ref, start, sums); err != nil {
		index.RemoveFiles(tmp)
		return Info{}, false, fmt.Errorf("adopt index of catalog %q: %w", catalog, err)
	}
	if info, err = s.swapIn(ctx, catalog, tmp, digest); err != nil {
		return Info{}, false, err
	}
	s.log.Info("index swapped in", "catalog", catalog, "digest", digest, "duration", s.now().Sub(start).String(),
		"mode", index.ModePrebuilt)
	return info, true, nil
}

// swapIn makes the complete index at tmp, of content digest, the live
// index of catalog: its files synced and renamed into place, the current
// link moved, the history extended, the old index retired. On failure
// tmp's files are removed and the live index is unchanged.
func (s *Store) swapIn(ctx context.Context, catalog, tmp, digest string) (Info, error) {
	cdir := filepath.Join(s.dir, catalog)
	final, err := s.publish(cdir, tmp, digest)
	if err != nil {
		index.RemoveFiles(tmp)
		return Info{}, fmt.Errorf("index catalog %q: %w", catalog, err)
	}
	h, err := openHandle(filepath.Join(cdir, final), s.mem)
	if err != nil {
		return Info{}, fmt.Errorf("index catalog %q: %w", catalog, err)
	}

	s.mu.Lock()
	old, hist := s.live[catalog], s.history[catalog]
	s.mu.Unlock()
	if hist == nil {
		hist = &History{}
	}
	// Builds of one catalog are serialised (lock), so nobody else
	// changes its history or retires old meanwhile.
	hist, err = s.extendHistory(ctx, hist, old, h)
	if err == nil {
		err = writeHistory(cdir, hist)
	}
	if err != nil {
		// The new index is live on disk: the next start serves it and
		// adds it to the history.
		s.log.Error(err, "recording the catalog's history", "catalog", catalog)
	}

	s.mu.Lock()
	old = s.live[catalog]
	s.live[catalog] = h
	if err == nil {
		s.history[catalog] = hist
	}
	s.mu.Unlock()
	if old != nil {
		s.retire(old)
	}
	s.changed(catalog)
	// A build leaves tens of MB of garbage on the Go heap (the parsed
	// catalog, validation's graphs), which the runtime gives back to the
	// kernel only gradually, keeping a serving process's resident set near
	// the build's peak for a while after it; builds are rare, so collecting
	// and returning it at once costs little.
	debug.FreeOSMemory()
	return h.info, nil
}

// publish syncs the built files (the database, and the content directory:
// each segment file, written or linked, then the directory itself),
// renames them to their final names and points the catalog's current link
// at the database, each step atomic and durable: the renames are synced
// before the link names them, so a crash leaves the old index live or the
// new one complete, never a link to a database whose content is missing.
func (s *Store) publish(cdir, tmp, digest string) (string, error) {
	for _, p := range index.Files(tmp) {
		if err := syncTree(p); err != nil {
			return "", fmt.Errorf("sync index: %w", err)
		}
	}
	// The suffix keeps a rebuild of a digest that is still being read (A, B,
	// back to A) from replacing a file its old readers hold.
	final := strings.NewReplacer(":", "-", "/", "-").Replace(digest) + "." + randomSuffix() + ".db"
	finalFiles := index.Files(filepath.Join(cdir, final))
	for i, p := range index.Files(tmp) {
		if err := os.Rename(p, finalFiles[i]); err != nil {
			index.RemoveFiles(filepath.Join(cdir, final))
			return "", fmt.Errorf("move index into place: %w", err)
		}
	}
	if err := syncPath(cdir); err != nil {
		index.RemoveFiles(filepath.Join(cdir, final))
		return "", fmt.Errorf("sync index directory: %w", err)
	}
	link := filepath.Join(cdir, currentPrefix+randomSuffix())
	if err := os.Symlink(final, link); err != nil {
		index.RemoveFiles(filepath.Join(cdir, final))
		return "", fmt.Errorf("link live index: %w", err)
	}
	if err := os.Rename(link, filepath.Join(cdir, currentLink)); err != nil {
		_ = os.Remove(link)
		index.RemoveFiles(filepath.Join(cdir, final))
		return "", fmt.Errorf("link live index: %w", err)
	}
	if err := syncPath(cdir); err != nil {
		return "", fmt.Errorf("sync index directory: %w", err)
	}
	return final, nil
}

// Remove deletes the index of catalog. Readers holding it finish first.
func (s *Store) Remove(catalog string) error {
	unlock := s.lock(catalog)
	defer unlock()
	s.mu.Lock()
	h := s.live[catalog]
	delete(s.live, catalog)
	delete(s.history, catalog)
	s.mu.Unlock()
	if h != nil {
		s.retire(h)
		s.changed(catalog)
	}
	cdir := filepath.Join(s.dir, catalog)
	if err := os.Remove(filepath.Join(cdir, HistoryFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove history of %q: %w", catalog, err)
	}
	if err := os.Remove(filepath.Join(cdir, currentLink)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove index of %q: %w", catalog, err)
	}
	// The directory goes now if no reader holds the old file; otherwise the
	// last reader removes the file and the next start removes the directory.
	if err := os.Remove(cdir); err != nil && !errors.Is(err, os.ErrNotExist) && !isNotEmpty(err) {
		return fmt.Errorf("remove index of %q: %w", catalog, err)
	}
	return nil
}

func isNotEmpty(err error) bool {
	return errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST)
}

// Catalogs lists the catalogs that have a live index.
func (s *Store) Catalogs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.live))
	for name := range s.live {
		names = append(names, name)
	}
	return names
}

// Close closes every live index file (they stay on disk for the next start).
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, h := range s.live {
		errs = append(errs, h.close())
	}
	s.live = map[string]*handle{}
	return errors.Join(errs...)
}

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// syncPath flushes a file, or a directory's entries, to stable storage:
// the built files before they are renamed into place, and the catalog's
// directory after, so a crash never leaves a live name pointing at partial
// data.
func syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// syncTree flushes a built file, or a built directory's files and then
// its entries: an index's content directory, whose linked segments, synced
// with the version that wrote them, cost a system call each and no write.
func syncTree(path string) error {
	entries, err := os.ReadDir(path)
	if err != nil && !errors.Is(err, syscall.ENOTDIR) {
		return err
	}
	for _, e := range entries {
		if e.Type().IsRegular() {
			if err := syncPath(filepath.Join(path, e.Name())); err != nil {
				return err
			}
		}
	}
	return syncPath(path)
}
