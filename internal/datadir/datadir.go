// Package datadir decides whether a directory is catalogd's to write in and
// to clean up: the data directory of `catalogd serve` and `catalogd
// manager`, and the offline cache of `kubectl catalog`. catalogd deletes
// only what it created, so a directory it is given must be one it made.
//
// The first use marks a directory with a layout file (LayoutFile) that
// says which kind of directory it is and the version of its layout, so
// that a later catalogd knows what it finds and can migrate from it. A
// directory is opened when it is missing or empty (it is created and
// marked), when it carries the mark of this kind with a layout version this
// binary knows, or when it holds exactly what an earlier catalogd, which
// did not mark its directories, left there (it is adopted and marked).
// Anything else is refused with ErrNotCatalogds or ErrNewerLayout, and
// nothing in it is touched.
//
// Inside its own directory catalogd still removes only entries it
// recognises by its own names (RemoveLeftovers), never a whole subtree it
// did not name: a person may have put something there by hand.
package datadir

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// LayoutFile names the mark inside a directory catalogd owns.
const LayoutFile = "catalogd-layout.json"

// Layout is the version of the layouts this binary writes. An unmarked
// directory of an earlier catalogd is layout 0; a directory marked with a
// higher version than Layout is refused, since this binary cannot know
// what a newer one keeps there.
const Layout = 1

// UnpackPrefix begins the name of every directory an image is unpacked
// into; what a crash leaves under that name is removed at the next start.
const UnpackPrefix = "unpack-"

// markTempPrefix begins the temporary file a mark is written to before it
// is renamed into place, so that a reader never sees half a mark.
const markTempPrefix = ".catalogd-layout-"

// Errors of Open; the message of each names the directory and what to do.
var (
	ErrNotCatalogds = errors.New("not a directory catalogd made")
	ErrNewerLayout  = errors.New("laid out by a newer catalogd")
)

// Kind is a kind of directory catalogd owns.
type Kind struct {
	// Name is recorded in the mark: a data directory is not a cache.
	Name string
	// What names the directory in errors ("data directory").
	What string
	// Hint says, in a refusal, what to give instead.
	Hint string
	// earlier reports whether the entries of an unmarked, non-empty
	// directory are what an earlier catalogd left in one of this kind.
	earlier func(dir string, entries []fs.DirEntry) bool
}

// State says how Open found a directory.
type State int

const (
	// Marked: the directory carried this kind's mark already.
	Marked State = iota
	// Created: the directory was missing or empty, and is marked now.
	Created
	// Adopted: an earlier catalogd's directory, marked now.
	Adopted
)

// mark is the content of LayoutFile.
type mark struct {
	Kind   string `json:"kind"`
	Layout int    `json:"layout"`
}

// Open makes sure dir is a directory of kind k that catalogd may write in
// and clean up, creating or adopting it as the package doc says. On error
// nothing in dir was changed.
func Open(dir string, k Kind) (State, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return 0, fmt.Errorf("create %s %s: %w", k.What, dir, err)
		}
		return Created, writeMark(dir, k)
	}
	if err != nil {
		return 0, fmt.Errorf("read %s %s: %w", k.What, dir, err)
	}
	var others []fs.DirEntry
	for _, e := range entries {
		switch {
		case e.Name() == LayoutFile:
			if err := checkMark(dir, k); err != nil {
				return 0, err
			}
			// A temporary mark of a process stopped while marking; one
			// younger than a minute may still be renamed into place.
			_, err := RemoveLeftovers(dir, markTempPrefix, time.Minute)
			return Marked, err
		case strings.HasPrefix(e.Name(), markTempPrefix):
			// Another process is marking the directory this moment, or
			// one was stopped doing so.
		case e.Name() == "lost+found" && e.IsDir():
			// The root of a new filesystem (a volume mounted as the data
			// directory) has one; catalogd leaves it alone.
		default:
			others = append(others, e)
		}
	}
	switch {
	case len(others) == 0:
		return Created, writeMark(dir, k)
	case k.earlier != nil && k.earlier(dir, others):
		return Adopted, writeMark(dir, k)
	}
	return 0, fmt.Errorf("%s %s is not empty and is %w (it holds %s, and no %s); %s",
		k.What, dir, ErrNotCatalogds, describe(others), LayoutFile, k.Hint)
}

// describe names a few of entries for an error message.
func describe(entries []fs.DirEntry) string {
	const shown = 3
	var names []string
	for i, e := range entries {
		if i == shown {
			break
		}
		names = append(names, fmt.Sprintf("%q", e.Name()))
	}
	s := strings.Join(names, ", ")
	if len(entries) > shown {
		s += fmt.Sprintf(" and %d more", len(entries)-shown)
	}
	return s
}

func checkMark(dir string, k Kind) error {
	path := filepath.Join(dir, LayoutFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	var m mark
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("%s %s: %s is not catalogd's mark (%v); %s", k.What, dir, LayoutFile, err, k.Hint)
	}
	if m.Kind != k.Name {
		return fmt.Errorf("%s %s is %w: it is marked as a catalogd %q directory, not %q; %s", k.What, dir, ErrNotCatalogds, m.Kind, k.Name, k.Hint)
	}
	if m.Layout > Layout {
		return fmt.Errorf("%s %s was %w (layout %d; this one knows up to %d): run that catalogd, or %s",
			k.What, dir, ErrNewerLayout, m.Layout, Layout, k.Hint)
	}
	// Layout 1 is the first that is marked: there is nothing to migrate
	// from yet. A later layout migrates here and rewrites the mark.
	return nil
}

// writeMark writes dir's mark through a temporary file renamed into place:
// a reader sees no mark or a whole one, and two processes marking one new
// directory at once write the same content.
func writeMark(dir string, k Kind) error {
	b, err := json.Marshal(mark{Kind: k.Name, Layout: Layout})
	if err != nil {
		return err
	}
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	tmp := filepath.Join(dir, markTempPrefix+hex.EncodeToString(suffix))
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("mark %s %s: %w", k.What, dir, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, LayoutFile)); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("mark %s %s: %w", k.What, dir, err)
	}
	return nil
}

// RemoveLeftovers removes the entries of dir whose names begin with prefix
// and that were last modified at least minAge ago (0: whatever their age),
// and returns how many it removed. Only catalogd names entries that way
// inside its own directories, so what matches is its own leftover, whole;
// everything else in dir is left alone. minAge keeps an entry another
// process may still be writing. A missing dir has no leftovers.
func RemoveLeftovers(dir, prefix string, minAge time.Duration) (int, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", dir, err)
	}
	removed := 0
	var errs []error
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		if minAge > 0 {
			info, err := e.Info()
			if err != nil || time.Since(info.ModTime()) < minAge {
				continue
			}
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			errs = append(errs, fmt.Errorf("remove leftover %s: %w", filepath.Join(dir, e.Name()), err))
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}
