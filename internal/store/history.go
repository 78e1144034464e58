package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/catalogd/catalogd/internal/query"
)

// The history of a catalog is the per-package digests of the last versions
// the store served, so that a changes answer can say what changed since any
// of them without their index files, which are removed once replaced. It is
// kept in a file of its own beside the index files (HistoryFile, written
// atomically right after each swap and read again at start), not inside the
// index files: it then survives restarts, and an index file stays a pure
// function of its content, which a later build may reuse.
//
// Each version records its catalog digest, every package's digest (a few
// dozen bytes per package), and, for the packages whose digest differs
// from the version before it (changed or removed), their PackageFacts in
// that version before: what the later answers need of the old side, read
// from the old index while it is still open. Those facts are bounded per
// version by maxBeforeBytes; packages past it, and those of a swap the
// store did not see happen (a crash between the swap and the history
// write), are only known to have changed.

// HistoryFile names, inside a catalog's directory, its history: part of
// a live catalog beside its current index, kept by every cleanup.
const HistoryFile = "history.json"

// DefaultHistory is how many versions of each catalog the history keeps.
const DefaultHistory = 20

// maxBeforeBytes bounds the facts one version keeps of the packages it
// changed, counted as the bytes of their names (see factsSize).
const maxBeforeBytes = 256 << 10

// History is the recent versions of a catalog, oldest first; the last is
// the live one. It is never modified once a snapshot can see it.
type History struct {
	Versions []Version `json:"versions"`
}

// Version is one version of a catalog in its history.
type Version struct {
	// Digest is the catalog's content digest.
	Digest string `json:"digest"`
	// Packages maps each package to its digest.
	Packages map[string]string `json:"packages"`
	// Before holds, for packages whose digest differs from the previous
	// version's, their facts in the previous version, where kept.
	Before map[string]query.PackageFacts `json:"before,omitempty"`
}

// ErrUnknownVersion says a changes request named a version the history
// does not have (any more); errors wrapping it are *GoneError.
var ErrUnknownVersion = errors.New("catalog version unknown or expired")

// GoneError is a changes request for a version the history does not hold.
type GoneError struct {
	Since string
	// Oldest is the oldest version still known.
	Oldest string
}

func (e *GoneError) Error() string {
	return fmt.Sprintf("version %q of the catalog is unknown or expired; the oldest known is %q", e.Since, e.Oldest)
}

func (e *GoneError) Unwrap() error { return ErrUnknownVersion }

// WithHistory sets how many versions of each catalog the store keeps in
// their history; n < 1 takes DefaultHistory.
func WithHistory(n int) Option {
	return func(s *Store) {
		if n < 1 {
			n = DefaultHistory
		}
		s.historyLen = n
	}
}

// readHistory reads the history of a catalog; a missing or unreadable file
// is an empty history (the history is a convenience, never a reason not to
// serve).
func readHistory(cdir string) *History {
	data, err := os.ReadFile(filepath.Join(cdir, HistoryFile))
	if err != nil {
		return &History{}
	}
	var h History
	if json.Unmarshal(data, &h) != nil {
		return &History{}
	}
	return &h
}

// extendHistory returns hist with the version of cur appended, trimmed to
// the store's length. old, when not nil, is the index cur replaces, from
// which the facts of the packages that changed are read.
func (s *Store) extendHistory(ctx context.Context, hist *History, old, cur *handle) (*History, error) {
	if n := len(hist.Versions); n > 0 && hist.Versions[n-1].Digest == cur.info.Digest {
		return hist, nil
	}
	digests, err := cur.catalog.PackageDigests(ctx)
	if err != nil {
		return nil, err
	}
	v := Version{Digest: cur.info.Digest, Packages: digests}
	if n := len(hist.Versions); n > 0 {
		prev := hist.Versions[n-1]
		if old != nil && old.info.Digest == prev.Digest {
			if v.Before, err = beforeFacts(ctx, old.catalog, prev.Packages, digests); err != nil {
				return nil, err
			}
		}
	}
	versions := append(slices.Clone(hist.Versions), v)
	if over := len(versions) - s.historyLen; over > 0 {
		versions = versions[over:]
	}
	return &History{Versions: versions}, nil
}

// beforeFacts reads from old the facts of the packages of prev whose digest
// differs in cur, in name order, each as long as it fits in what is left of
// maxBeforeBytes.
func beforeFacts(ctx context.Context, old *query.Catalog, prev, cur map[string]string) (map[string]query.PackageFacts, error) {
	var changed []string
	for pkg, d := range prev {
		if cur[pkg] != d {
			changed = append(changed, pkg)
		}
	}
	slices.Sort(changed)
	out := map[string]query.PackageFacts{}
	size := 0
	for _, pkg := range changed {
		f, err := old.PackageFacts(ctx, pkg)
		if err != nil {
			return nil, err
		}
		if n := factsSize(f); size+n <= maxBeforeBytes {
			size += n
			out[pkg] = f
		}
	}
	return out, nil
}

// factsSize is about the bytes f takes in the history file.
func factsSize(f query.PackageFacts) int {
	n := 0
	for _, c := range f.Channels {
		n += len(c.Name) + len(c.Head) + 24
	}
	for _, b := range f.Bundles {
		n += len(b) + 3
	}
	for _, d := range f.Deprecations {
		n += len(d.Schema) + len(d.Name) + len(d.Message) + 40
	}
	return n
}

// writeHistory replaces the history file of a catalog atomically.
func writeHistory(cdir string, h *History) error {
	data, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("encode history: %w", err)
	}
	tmp := filepath.Join(cdir, historyPrefix+randomSuffix())
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write history: %w", err)
	}
	if err := syncPath(tmp); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("sync history: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(cdir, HistoryFile)); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("move history into place: %w", err)
	}
	return syncPath(cdir)
}

// Previous returns the digest of the version served before the snapshot's,
// if the history holds one.
func (s *Snapshot) Previous() (string, bool) {
	if s.history == nil || len(s.history.Versions) < 2 {
		return "", false
	}
	return s.history.Versions[len(s.history.Versions)-2].Digest, true
}

// Oldest returns the digest of the oldest version the history holds.
func (s *Snapshot) Oldest() string {
	if s.history == nil || len(s.history.Versions) == 0 {
		return s.Info.Digest
	}
	return s.history.Versions[0].Digest
}

// Changes says what changed in the catalog between the version since and
// the snapshot's: packages added, removed and changed, and for each changed
// package, what changed in it (query.DiffFacts) when its facts in since were
// kept. A since the history does not hold is a *GoneError.
func (s *Snapshot) Changes(ctx context.Context, since string) (query.Changes, error) {
	if s.changes == nil {
		return s.computeChanges(ctx, since)
	}
	return s.changes.get(s.history, since, func() (query.Changes, error) { return s.computeChanges(ctx, since) })
}

// changesCache keeps the changes answers computed against one index, by
// the history and since they were computed from: the index never changes,
// and neither does a history once a snapshot holds it, so an answer stays
// true while the index lives. Only versions the history holds are
// answered, so it keeps at most one answer per version of the history.
type changesCache struct {
	mu      sync.Mutex
	history *History
	answers map[string]query.Changes
}

func (c *changesCache) get(h *History, since string, compute func() (query.Changes, error)) (query.Changes, error) {
	c.mu.Lock()
	if c.history == h {
		if v, ok := c.answers[since]; ok {
			c.mu.Unlock()
			return v, nil
		}
	}
	c.mu.Unlock()
	v, err := compute()
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.history != h {
		c.history, c.answers = h, map[string]query.Changes{}
	}
	c.answers[since] = v
	return v, nil
}

func (s *Snapshot) computeChanges(ctx context.Context, since string) (query.Changes, error) {
	out := query.Changes{From: since, To: s.Info.Digest}
	cur, err := s.Catalog.PackageDigests(ctx)
	if err != nil {
		return query.Changes{}, err
	}
	var versions []Version
	if s.history != nil {
		versions = s.history.Versions
	}
	k := -1
	for i := len(versions) - 1; i >= 0; i-- {
		if versions[i].Digest == since {
			k = i
			break
		}
	}
	if k < 0 {
		if since == s.Info.Digest {
			return out, nil
		}
		return query.Changes{}, &GoneError{Since: since, Oldest: s.Oldest()}
	}
	old := versions[k].Packages
	for pkg := range cur {
		if _, ok := old[pkg]; !ok {
			out.Added = append(out.Added, pkg)
		}
	}
	var changed []string
	for pkg, d := range old {
		switch now, ok := cur[pkg]; {
		case !ok:
			out.Removed = append(out.Removed, pkg)
		case now != d:
			changed = append(changed, pkg)
		}
	}
	slices.Sort(out.Added)
	slices.Sort(out.Removed)
	slices.Sort(changed)
	for _, pkg := range changed {
		c := query.PackageChange{}
		if before, ok := factsAt(versions[k+1:], pkg, old[pkg]); ok {
			after, err := s.Catalog.PackageFacts(ctx, pkg)
			if err != nil {
				return query.Changes{}, err
			}
			c = query.DiffFacts(before, after)
		}
		c.Package, c.DigestBefore, c.DigestAfter = pkg, old[pkg], cur[pkg]
		out.Changed = append(out.Changed, c)
	}
	return out, nil
}

// factsAt finds the facts of pkg when its digest was digest: they were kept
// by the first later version in which its digest differs.
func factsAt(later []Version, pkg, digest string) (query.PackageFacts, bool) {
	for _, v := range later {
		if v.Packages[pkg] != digest {
			f, ok := v.Before[pkg]
			return f, ok
		}
	}
	return query.PackageFacts{}, false
}
