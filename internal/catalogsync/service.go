// Package catalogsync owns the lifecycle of every catalog one catalogd
// process serves: it fetches a catalog's content from its source, has the
// store build an index and swap it in, and records the outcome (the last
// error) in the catalog table, as the table's one writer. It registers the
// indexes found on disk before anything is fetched, so that a restart
// answers from its first request; removes indexes no catalog owns any more;
// retries failures with a backoff capped at the poll interval; polls image
// tags; and never pulls again a digest whose content failed to index.
//
// `catalogd serve` runs it with the directories and images of its command
// line. `catalogd manager` runs it on every replica with the digests the
// leader's ClusterCatalog controller publishes in status, and the leader
// also calls Sync with the tag to learn which digest to publish (who calls
// what, and who retries: the doc of internal/reconcile).
package catalogsync

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/prebuilt"
	"github.com/catalogd/catalogd/internal/query"
	"github.com/catalogd/catalogd/internal/source"
	"github.com/catalogd/catalogd/internal/store"
	"github.com/catalogd/catalogd/internal/unpack"
)

// Store keeps the live index of each catalog; *store.Store provides it.
type Store interface {
	Info(catalog string) (store.Info, bool)
	Update(ctx context.Context, catalog string, src index.Content) (store.Info, index.Stats, bool, error)
	Adopt(ctx context.Context, catalog, ref string, fill func(ctx context.Context, path string) (index.ContentSums, error)) (store.Info, bool, error)
	Acquire(catalog string) (*store.Snapshot, error)
	Remove(catalog string) error
	Catalogs() []string
}

// Defaults of Options.
const (
	DefaultMaxConcurrentBuilds = 2
	DefaultSyncTimeout         = 10 * time.Minute
	DefaultMinBackoff          = time.Second
	DefaultMaxBackoff          = 5 * time.Minute
)

// Options configures a Service.
type Options struct {
	Store Store
	Table *catalogs.Table
	Log   logr.Logger
	// MaxConcurrentBuilds bounds the index builds that run at once (each
	// holds a parse buffer and SQLite's cache); fetches are not bounded
	// here, since a slow registry must not hold up other catalogs.
	MaxConcurrentBuilds int
	// SyncTimeout bounds one sync: resolve, pull, unpack and build. A
	// registry that stalls fails the sync instead of hanging it.
	SyncTimeout time.Duration
	// MinBackoff and MaxBackoff bound the wait before retrying a failed
	// sync; a catalog's poll interval caps it further.
	MinBackoff, MaxBackoff time.Duration
	// DataDir is removed from error messages before they are shown to
	// clients: where the server keeps its files is nobody else's business.
	DataDir string
	// Metrics registers the sync metrics; nil registers none.
	Metrics prometheus.Registerer
}

// Spec says what one catalog should serve.
type Spec struct {
	Name string
	// Fetcher is nil when there is nothing to index yet (a ClusterCatalog
	// whose digest the leader has not published).
	Fetcher Fetcher
	// Display is what /catalogs shows as the catalog's source, when it is
	// not Fetcher.Describe() (a ClusterCatalog's tag, while Fetcher pulls
	// the digest the tag resolved to).
	Display  string
	Priority int32
	// Labels are the catalog's labels, for selectors to match.
	Labels map[string]string
	// Unavailable switches the catalog off: its index is removed and it
	// answers 503 until switched on again.
	Unavailable bool
	// PollInterval is how often the source is checked for new content; 0
	// means only when told (a spec change, a file watch, a retry).
	PollInterval time.Duration
	// ReportedError is why the catalog's owner last failed to update it (the
	// leader's Progressing condition), shown as LastError while this
	// replica has no error of its own: every replica then tells clients
	// the same.
	ReportedError string
	// ReportedFailed says ReportedError is a content failure (the leader's
	// Serving condition says so), so that a replica that has not tried
	// that content itself shows the catalog Failed as the leader does.
	ReportedFailed bool
}

// Result is what one successful sync did.
type Result struct {
	// Ref and Digest name the content now live.
	Ref, Digest string
	// Form is the fetcher's Fetched.Form: for an image reference, whether
	// it held an image or an artifact. Empty when the content was not
	// fetched (it was live already) or its kind has one form only.
	Form string
	// Rebuilt is false when that content was live already.
	Rebuilt  bool
	Duration time.Duration
	Stats    index.Stats
	// Problems are the validation problems of the content now live, in
	// package order: what an author must fix, though the catalog serves.
	Problems []query.Problem
	// Changes, after a rebuild that replaced an earlier version, say what
	// changed in the catalog since that version; nil otherwise.
	Changes *query.Changes
	// Remembered says the sync's error is the one the same content gave
	// before (a content error at an unchanged digest): it was neither
	// fetched nor indexed again, and the error was reported already.
	Remembered bool
}

// Service keeps every catalog's index in line with its source.
type Service struct {
	opts    Options
	builds  chan struct{}
	metrics *metrics

	mu       sync.Mutex
	catalogs map[string]*entry
	runCtx   context.Context // set while Run runs
	loops    sync.WaitGroup
}

// entry is one catalog's spec and the memory of its recent syncs.
type entry struct {
	name string
	kick chan struct{} // capacity 1: a pending "sync now"

	// syncMu makes syncs of this catalog run one at a time, each reading its
	// source after the previous one finished: a sync started by a later
	// change can then never be overtaken by one that read older content.
	syncMu sync.Mutex

	// Guarded by Service.mu.
	spec      Spec
	removed   bool
	attempted bool
	failures  int
	// badDigest is content that failed to index; it is not fetched again
	// until the source's digest changes. badErr is why it failed.
	badDigest string
	badErr    error
	// ownErr is the cleaned error of this replica's last sync, if it
	// failed; ownFailed says it was a content error (IsContentError).
	ownErr    string
	ownFailed bool
	stopLoop  context.CancelFunc
}

// lastError is what the table shows of the catalog's last failure: this
// replica's own, or else the one its owner reported (Spec.ReportedError),
// and whether it is a content failure; s.mu is held.
func (e *entry) lastError() (msg string, contentFailed bool) {
	if e.ownErr != "" {
		return e.ownErr, e.ownFailed
	}
	if e.spec.ReportedError == "" {
		return "", false
	}
	return Truncate(e.spec.ReportedError, maxErrorBytes), e.spec.ReportedFailed
}

// New returns a Service with no catalogs.
func New(opts Options) *Service {
	if opts.MaxConcurrentBuilds <= 0 {
		opts.MaxConcurrentBuilds = DefaultMaxConcurrentBuilds
	}
	if opts.SyncTimeout <= 0 {
		opts.SyncTimeout = DefaultSyncTimeout
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = DefaultMinBackoff
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	s := &Service{
		opts:     opts,
		builds:   make(chan struct{}, opts.MaxConcurrentBuilds),
		catalogs: map[string]*entry{},
	}
	s.metrics = newMetrics(s)
	if opts.Metrics != nil {
		opts.Metrics.MustRegister(s.metrics.collectors()...)
	}
	return s
}

// Load puts every catalog with a live index on disk into the table, before
// any source is read, so that after a restart they answer (as Serving, since
// they have an index) from the first request however slow their sources are.
func (s *Service) Load() {
	for _, name := range s.opts.Store.Catalogs() {
		info, ok := s.opts.Store.Info(name)
		if !ok {
			continue
		}
		if _, known := s.opts.Table.Get(name); known {
			continue
		}
		s.opts.Table.Put(catalogs.Catalog{Name: name, Source: info.SourceRef})
	}
}

// Prune removes the index and table entry of every catalog with a live index
// for which keep, given its name and the reference it was built from, is
// false: catalogs no longer configured, or an index another source left
// under a configured name.
func (s *Service) Prune(keep func(name, sourceRef string) bool) error {
	var errs []error
	for _, name := range s.opts.Store.Catalogs() {
		info, ok := s.opts.Store.Info(name)
		if !ok || keep(name, info.SourceRef) {
			continue
		}
		s.opts.Log.Info("removing an index no catalog owns", "catalog", name, "source", info.SourceRef)
		if err := s.Remove(name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// MarkLoaded says every catalog the server should serve has been Set: from
// now on a name the table lacks answers 404 instead of 503.
func (s *Service) MarkLoaded() { s.opts.Table.MarkLoaded() }

// Set adds a catalog or changes what it should serve. A new source (or
// switching the catalog on or off) makes its loop sync at once; a change of
// priority alone only updates the table.
func (s *Service) Set(spec Spec) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.catalogs[spec.Name]
	if !ok {
		e = &entry{name: spec.Name, kick: make(chan struct{}, 1)}
		s.catalogs[spec.Name] = e
	}
	changed := !ok || describe(e.spec.Fetcher) != describe(spec.Fetcher) ||
		e.spec.Unavailable != spec.Unavailable || e.spec.PollInterval != spec.PollInterval
	if changed {
		e.attempted, e.failures, e.badDigest, e.badErr, e.ownErr, e.ownFailed = false, 0, "", nil, "", false
	}
	e.spec = spec
	c, _ := s.opts.Table.Get(spec.Name)
	c.Name, c.Source, c.Priority, c.Labels = spec.Name, spec.Display, spec.Priority, maps.Clone(spec.Labels)
	if c.Source == "" {
		c.Source = describe(spec.Fetcher)
	}
	c.LastError, c.ContentFailed = e.lastError()
	// Switched off, the catalog answers nothing at once; the loop removes
	// its index.
	c.Unavailable = spec.Unavailable
	if c.Unavailable {
		c.LastError, c.ContentFailed = "", false
	}
	s.opts.Table.Put(c)
	if s.runCtx != nil && e.stopLoop == nil {
		s.startLoop(e)
	}
	if changed && (spec.Fetcher != nil || spec.Unavailable) {
		e.poke()
	}
}

func describe(fetcher Fetcher) string {
	if fetcher == nil {
		return ""
	}
	return fetcher.Describe()
}

func (e *entry) poke() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// Trigger makes a catalog's loop sync now, as when its directory changed.
func (s *Service) Trigger(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.catalogs[name]; ok {
		e.poke()
	}
}

// Remove forgets a catalog and deletes its index; a sync in progress is
// cancelled first. Readers holding the index finish on it.
func (s *Service) Remove(name string) error {
	s.mu.Lock()
	e, ok := s.catalogs[name]
	if ok && e.stopLoop != nil {
		e.stopLoop()
	}
	s.mu.Unlock()
	if ok {
		e.syncMu.Lock()
		defer e.syncMu.Unlock()
		s.mu.Lock()
		e.removed = true
		delete(s.catalogs, name)
		s.mu.Unlock()
	}
	s.opts.Table.Delete(name)
	if err := s.opts.Store.Remove(name); err != nil {
		return fmt.Errorf("remove catalog %q: %w", name, err)
	}
	return nil
}

// Ready reports whether every catalog that should serve has a live index on
// this replica: the table is loaded, and each catalog with a source that is
// not switched off answers from its own index. A catalog whose source has
// never indexed keeps the replica unready, and the error says why, unless
// it is Failed: its content cannot index, which every replica knows and
// answers alike (the ClusterCatalog's Serving condition tells the others),
// and waiting for a change of source would keep this replica out of
// service, and every other catalog with it, for one bad catalog.
func (s *Service) Ready() error {
	if !s.opts.Table.Loaded() {
		return errors.New("the catalog list has not been loaded yet")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var missing []string
	for name, e := range s.catalogs {
		if e.spec.Fetcher == nil || e.spec.Unavailable {
			continue
		}
		if _, ok := s.opts.Store.Info(name); ok {
			continue
		}
		if c, _ := s.opts.Table.Get(name); c.State(false) != catalogs.Failed {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	sort.Strings(missing)
	return fmt.Errorf("not indexed yet: %v", missing)
}

// Serving reports whether the catalog answers queries on this replica: the
// store has a live index for it and its owner has not switched it off.
func (s *Service) Serving(name string) bool {
	c, ok := s.opts.Table.Get(name)
	_, indexed := s.opts.Store.Info(name)
	return ok && c.State(indexed) == catalogs.Serving
}

// Sync brings one catalog's index in line with fetcher, or with its spec's
// fetcher when fetcher is nil, and records the outcome in the table. On failure
// the previous index, if any, keeps serving and LastError says why; the
// error is returned, not logged, so that the caller reports it once.
func (s *Service) Sync(ctx context.Context, name string, fetcher Fetcher) (Result, error) {
	s.mu.Lock()
	e, ok := s.catalogs[name]
	s.mu.Unlock()
	if !ok {
		return Result{}, fmt.Errorf("sync catalog %q: not configured", name)
	}
	e.syncMu.Lock()
	defer e.syncMu.Unlock()
	s.mu.Lock()
	spec, removed := e.spec, e.removed
	if fetcher == nil {
		fetcher = spec.Fetcher
	}
	bad, badErr := e.badDigest, e.badErr
	s.mu.Unlock()
	if removed {
		return Result{}, fmt.Errorf("sync catalog %q: removed", name)
	}
	if spec.Unavailable {
		return Result{}, s.switchOff(name)
	}
	if fetcher == nil {
		return Result{}, nil
	}
	start := time.Now()
	res, err := s.fetchAndBuild(ctx, name, fetcher, bad, badErr)
	res.Duration = time.Since(start)
	s.record(ctx, e, res, err)
	return res, err
}

// switchOff removes the index of a catalog Set made Unavailable.
func (s *Service) switchOff(name string) error {
	if err := s.opts.Store.Remove(name); err != nil {
		return fmt.Errorf("remove index of unavailable catalog %q: %w", name, err)
	}
	return nil
}

// fetchAndBuild does the work of one sync under its deadline.
func (s *Service) fetchAndBuild(ctx context.Context, name string, fetcher Fetcher, bad string, badErr error) (Result, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, s.opts.SyncTimeout,
		fmt.Errorf("sync of catalog %q timed out after %s", name, s.opts.SyncTimeout))
	defer cancel()
	// Fetchers log what they skip through the context's logger (a file
	// whose name is not UTF-8, a pipe); a reconcile brings its own, a
	// serve-mode sync gets the service's.
	if _, err := logr.FromContext(ctx); err != nil {
		ctx = logr.NewContext(ctx, s.opts.Log.WithValues("catalog", name))
	}
	live := ""
	if info, ok := s.opts.Store.Info(name); ok {
		live = info.Digest
	}
	res, adopted, err := s.adoptPrebuilt(ctx, name, fetcher, live, bad)
	if adopted {
		return res, err
	}
	fetchStart := time.Now()
	f, err := fetcher.Fetch(ctx, func(d string) bool { return d == live || d == bad })
	defer f.Release()
	res = Result{Ref: f.Ref, Digest: f.Digest, Form: f.Form}
	if err != nil {
		return res, withCause(ctx, fmt.Errorf("read catalog %q: %w", name, err))
	}
	if f.Pulled {
		s.metrics.pulled(time.Since(fetchStart), f.Bytes)
	}
	switch f.Digest {
	case live:
		return s.withProblems(ctx, name, res)
	case bad:
		// The same content failed before: say so again without pulling or
		// indexing it again.
		res.Remembered = true
		return res, badErr
	}
	select {
	case s.builds <- struct{}{}:
		defer func() { <-s.builds }()
	case <-ctx.Done():
		return res, withCause(ctx, fmt.Errorf("index catalog %q: waiting for a build slot: %w", name, ctx.Err()))
	}
	buildStart := time.Now()
	info, stats, rebuilt, err := s.opts.Store.Update(ctx, name, f.Content)
	if rebuilt || err != nil {
		s.metrics.built(time.Since(buildStart), stats.Build.Mode, err)
	}
	if err != nil {
		if f.ReadDigest != nil {
			// Only what the build read is known to be bad: a directory
			// edited meanwhile may hold good content under the digest
			// taken before the build.
			res.Digest = f.ReadDigest()
		}
		return res, withCause(ctx, fmt.Errorf("indexing %s: %w", f.Ref, err))
	}
	res.Rebuilt, res.Stats = rebuilt, stats
	res.Ref, res.Digest = info.SourceRef, info.Digest
	return s.withProblems(ctx, name, res)
}

// PrebuiltSource is a Fetcher whose content may have its index published
// beside it (a catalog image: package prebuilt), which a sync then takes
// instead of building one.
type PrebuiltSource interface {
	// PrebuiltIndex resolves the source to the digest reference of the
	// content it holds now, and returns what downloads the index
	// published for that content into a path (index.Files), for
	// store.Adopt; download is nil when the fetcher looks for none.
	PrebuiltIndex(ctx context.Context) (ref string, download func(ctx context.Context, path string) (index.ContentSums, error), err error)
}

// Adopter swaps in an index this process did not build; *store.Store
// provides it.
type Adopter interface {
	Adopt(ctx context.Context, catalog, ref string, fill func(ctx context.Context, path string) (index.ContentSums, error)) (store.Info, bool, error)
}

// AdoptPrebuilt makes the prebuilt index of fetcher's content catalog's
// live index in st, when fetcher is a PrebuiltSource looking for one, the
// content is not one skip names (live already, or failed before: the
// fetch skips it), and one is published that passes the checks. adopted
// says it was; otherwise err, when set, says why not (prebuilt.Reason
// classifies it), and the caller fetches and builds as it would have.
// ref is what the source resolved to, when it got that far.
// `kubectl catalog --image` calls it as a sync does.
func AdoptPrebuilt(ctx context.Context, st Adopter, catalog string, fetcher Fetcher, skip func(digest string) bool) (ref string, info store.Info, adopted bool, err error) {
	ps, ok := fetcher.(PrebuiltSource)
	if !ok {
		return "", store.Info{}, false, nil
	}
	ref, download, err := ps.PrebuiltIndex(ctx)
	switch {
	case download == nil:
		return ref, store.Info{}, false, nil
	case err != nil:
		return ref, store.Info{}, false, err
	case skip(digestOf(ref)):
		return ref, store.Info{}, false, nil
	}
	// Not adopted without an error: the content went live meanwhile,
	// which is as good.
	if info, _, err = st.Adopt(ctx, catalog, ref, download); err != nil {
		return ref, store.Info{}, false, err
	}
	return ref, info, true, nil
}

// adoptPrebuilt is AdoptPrebuilt for a sync: when it adopts, the sync
// is done (err is its outcome). Otherwise the build that follows is
// told why in the table (catalogs.NotPrebuilt, before the build starts,
// so that the reason is there when its index goes live), the log and the
// metric.
func (s *Service) adoptPrebuilt(ctx context.Context, name string, fetcher Fetcher, live, bad string) (res Result, adopted bool, err error) {
	start := time.Now()
	ref, info, adopted, err := AdoptPrebuilt(ctx, s.opts.Store, name, fetcher, func(d string) bool { return d == live || d == bad })
	if err != nil {
		reason := prebuilt.Reason(err)
		s.metrics.prebuiltMissed(reason)
		why := s.clean(err)
		log := logr.FromContextOrDiscard(ctx)
		if reason == "absent" {
			log.V(1).Info("no prebuilt index published; building", "reason", why)
		} else {
			log.Info("prebuilt index not used; building", "reason", why)
		}
		if ref != "" {
			s.opts.Table.Update(name, func(c *catalogs.Catalog) { c.NotPrebuilt = catalogs.NotPrebuilt{Digest: digestOf(ref), Reason: why} })
		}
		return Result{}, false, nil
	}
	if !adopted {
		return Result{}, false, nil
	}
	s.metrics.built(time.Since(start), index.ModePrebuilt, nil)
	s.metrics.prebuiltUsed()
	res = Result{Ref: info.SourceRef, Digest: info.Digest, Rebuilt: true,
		Stats: index.Stats{Digest: info.Digest, AllBytes: info.AllBytes, Build: info.Build}}
	if snap, err := s.opts.Store.Acquire(name); err == nil {
		// What the build would have counted, for the log line and its
		// warning about a catalog of no package.
		counts, err := snap.Catalog.Counts(ctx)
		snap.Release()
		if err == nil {
			res.Stats.Packages, res.Stats.Channels, res.Stats.Bundles = counts.Packages, counts.Channels, counts.Bundles
		}
	}
	res, err = s.withProblems(ctx, name, res)
	return res, true, err
}

// withProblems adds the live index's validation problems to res, so that
// every successful sync, rebuilt or not, can report them (the leader's
// condition message is rewritten on each reconcile).
func (s *Service) withProblems(ctx context.Context, name string, res Result) (Result, error) {
	snap, err := s.opts.Store.Acquire(name)
	if err != nil {
		return res, fmt.Errorf("read problems of catalog %q: %w", name, err)
	}
	defer snap.Release()
	if res.Problems, err = snap.Catalog.Problems(ctx, ""); err != nil {
		return res, fmt.Errorf("read problems of catalog %q: %w", name, err)
	}
	if prev, ok := snap.Previous(); ok && res.Rebuilt {
		changes, err := snap.Changes(ctx, prev)
		if err != nil {
			return res, fmt.Errorf("read changes of catalog %q: %w", name, err)
		}
		res.Changes = &changes
		s.metrics.changed(changes)
	}
	return res, nil
}

// withCause adds the deadline's cause to an error a timeout produced, so the
// message says the sync timed out rather than only "context deadline
// exceeded".
func withCause(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil && errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, cause) {
		return fmt.Errorf("%w: %w", cause, err)
	}
	return err
}

// IsContentError reports whether err is about a catalog's content, which
// retrying the same digest cannot fix.
func IsContentError(err error) bool {
	return errors.Is(err, index.ErrInvalidCatalog) || source.IsTerminal(err) ||
		(unpack.IsTerminal(err) && !errors.Is(err, unpack.ErrInvalidReference))
}

// record writes the outcome of a sync into the table and the entry. The
// state needs no writing: it follows from the store and from whether the
// error is a content error (Catalog.State). A content error is Failed
// only until the next attempt says otherwise: a transient error on the
// way (the registry down while the tag is resolved again) makes the
// catalog Pending, since the source may have moved to content that
// indexes.
func (s *Service) record(ctx context.Context, e *entry, res Result, err error) {
	log := s.opts.Log.WithValues("catalog", e.name)
	if err != nil && ctx.Err() != nil {
		// Cut short by shutdown or by the caller: says nothing about the
		// catalog.
		return
	}
	s.mu.Lock()
	e.attempted = true
	e.ownErr, e.ownFailed = "", false
	if err == nil {
		e.failures, e.badDigest, e.badErr = 0, "", nil
	} else {
		e.failures++
		e.ownErr, e.ownFailed = s.clean(err), IsContentError(err)
		if e.ownFailed && res.Digest != "" {
			e.badDigest, e.badErr = res.Digest, err
		}
	}
	lastError, contentFailed := e.lastError()
	s.mu.Unlock()
	s.opts.Table.Update(e.name, func(c *catalogs.Catalog) { c.LastError, c.ContentFailed = lastError, contentFailed })
	switch {
	case err != nil:
		// Sync's caller says what failed, once: the loop logs, the
		// controller writes it into status.
	case res.Rebuilt:
		log.Info("catalog indexed", "ref", res.Ref, "bundles", res.Stats.Bundles, "problems", len(res.Problems),
			"duration", res.Duration.Round(time.Millisecond).String())
		logProblems(log, res.Problems)
		if res.Stats.Packages == 0 {
			// Valid, and served, but almost always a wrong path or an
			// image whose configs label points elsewhere.
			log.Info("warning: "+NoPackageHint, "ref", res.Ref)
		}
	default:
		log.V(1).Info("catalog unchanged", "ref", res.Ref)
	}
}

// maxLoggedProblems bounds the problems logged per build: enough for an
// author to start fixing, while a catalog broken everywhere cannot flood
// the log; /catalogs/{name} and `catalogd validate` list them all.
const maxLoggedProblems = 20

// logProblems logs the problems of a new index, one line each, where the
// author of the catalog can see them.
func logProblems(log logr.Logger, problems []query.Problem) {
	for i, p := range problems {
		if i == maxLoggedProblems {
			log.Info("more problems not logged; GET /catalogs/{name} lists them all", "more", len(problems)-i)
			return
		}
		log.Info("catalog problem", "position", p.Position, "package", p.Package, "problem", p.Message)
	}
}

// Backoff is how long to wait before retrying a catalog after its last
// sync: zero after a success, else doubling from MinBackoff with each
// failure in a row, up to MaxBackoff, and never past poll when poll > 0 —
// a catalog polled every minute is retried at least every minute.
func (s *Service) Backoff(name string, poll time.Duration) time.Duration {
	s.mu.Lock()
	e, ok := s.catalogs[name]
	failures := 0
	if ok {
		failures = e.failures
	}
	s.mu.Unlock()
	if failures == 0 {
		return 0
	}
	d := s.opts.MinBackoff
	for i := 1; i < failures && d < s.opts.MaxBackoff; i++ {
		d *= 2
	}
	d = wait.Jitter(min(d, s.opts.MaxBackoff), 0.1)
	if poll > 0 && d > poll {
		d = poll
	}
	return d
}

// next is when a catalog's loop syncs again on its own: after a failure the
// backoff, after a success the poll interval (with up to 10% jitter so that
// catalogs configured together do not poll together), otherwise never (0).
func (s *Service) next(name string) time.Duration {
	s.mu.Lock()
	e, ok := s.catalogs[name]
	var poll time.Duration
	if ok && !e.spec.Unavailable && e.spec.Fetcher != nil {
		poll = e.spec.PollInterval
	}
	s.mu.Unlock()
	if !ok {
		return 0
	}
	if d := s.Backoff(name, poll); d > 0 {
		return d
	}
	if poll > 0 {
		return wait.Jitter(poll, 0.1)
	}
	return 0
}

// Outcome is how one sync went.
type Outcome struct {
	Result
	Err error
}

// SyncAll syncs every catalog once, in parallel, and returns each outcome by
// name: `catalogd serve` reports them before serving on.
func (s *Service) SyncAll(ctx context.Context) map[string]Outcome {
	s.mu.Lock()
	names := make([]string, 0, len(s.catalogs))
	for name := range s.catalogs {
		names = append(names, name)
	}
	s.mu.Unlock()
	out := make(map[string]Outcome, len(names))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Go(func() {
			res, err := s.Sync(ctx, name, nil)
			mu.Lock()
			out[name] = Outcome{res, err}
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// Start runs every catalog's loop until ctx ends: a catalog syncs when it is
// Set with a new source, when triggered, when its backoff or poll interval
// runs out, and once at start unless it was synced already. It implements
// controller-runtime's Runnable; see NeedLeaderElection.
func (s *Service) Start(ctx context.Context) error {
	s.mu.Lock()
	s.runCtx = ctx
	for _, e := range s.catalogs {
		s.startLoop(e)
	}
	s.mu.Unlock()
	<-ctx.Done()
	s.mu.Lock()
	s.runCtx = nil
	s.mu.Unlock()
	s.loops.Wait()
	return nil
}

// NeedLeaderElection is false: every replica keeps its own indexes and
// serves them.
func (s *Service) NeedLeaderElection() bool { return false }

// startLoop starts e's loop; s.mu is held.
func (s *Service) startLoop(e *entry) {
	ctx, cancel := context.WithCancel(s.runCtx)
	e.stopLoop = cancel
	if !e.attempted {
		e.poke()
	}
	s.loops.Go(func() { s.loop(ctx, e) })
}

func (s *Service) loop(ctx context.Context, e *entry) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	if d := s.next(e.name); d > 0 {
		timer.Reset(d)
	}
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.kick:
		case <-timer.C:
		}
		// A remembered content error was logged when the content first
		// failed: the loop looks again only to notice a fix, and saying
		// the same error at every backoff would bury everything else.
		if res, err := s.Sync(ctx, e.name, nil); err != nil && ctx.Err() == nil && !res.Remembered {
			_, serving := s.opts.Store.Info(e.name)
			msg := "sync failed; will retry"
			if IsContentError(err) {
				// Not fetched again: only a change of source can help.
				msg = "sync failed on the content; waiting for the source to change"
			}
			s.opts.Log.Error(err, msg, "catalog", e.name, "servingPreviousIndex", serving)
		}
		timer.Stop()
		if d := s.next(e.name); d > 0 {
			timer.Reset(d)
		}
	}
}

// NoPackageHint is what serve logs, and validate reports as a problem, of a
// catalog that holds no package.
const NoPackageHint = "the catalog holds no package; is its source the file-based catalog's directory?"
