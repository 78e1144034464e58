package fbc

import "fmt"

// Limits bound what one catalog may make a build hold. Parsing a blob
// takes several times its size in memory (operator-registry decodes each
// one into maps and encodes it again), so a single huge blob, or a small
// compressed layer that unpacks to one, could otherwise take the process
// down. Blobs stream, so the file limit bounds disk and time rather than
// memory; it is generous so that a catalog kept in one file still builds.
// Walking a catalog keeps every file's path, so the number of files bounds
// the memory of the walks (catalogdir.Read's digest and the build's).
type Limits struct {
	// FileBytes is the largest catalog file, in bytes; 0 means DefaultFileBytes.
	FileBytes int64
	// BlobBytes is the most bytes one blob (a top-level JSON value or a
	// YAML document) may take in its file; 0 means DefaultBlobBytes.
	BlobBytes int64
	// Files is the most entries (files, directories and links, ignored or
	// not) a catalog may hold; 0 means DefaultFiles.
	Files int
}

// The default limits. The largest bundle blobs of published catalogs,
// which carry their CSV and CRDs as olm.bundle.object, are a few MB.
// Published catalogs hold a file or a directory per package, or at most one
// per bundle: tens of thousands of entries. DefaultFiles is
// unpack.DefaultMaxFiles, so a catalog directory may hold what an image may
// unpack to.
const (
	DefaultFileBytes int64 = 1 << 30
	DefaultBlobBytes int64 = 32 << 20
	DefaultFiles     int   = 100_000
)

func (l Limits) withDefaults() Limits {
	if l.FileBytes <= 0 {
		l.FileBytes = DefaultFileBytes
	}
	if l.BlobBytes <= 0 {
		l.BlobBytes = DefaultBlobBytes
	}
	if l.Files <= 0 {
		l.Files = DefaultFiles
	}
	return l
}

// CheckFiles fails, with ErrInvalidCatalog, once a walk of a catalog has met
// more than Files entries: n is the count so far. Walks check as they go,
// so a catalog of a million tiny files fails after its first Files entries,
// not after holding the paths of all of them.
func (l Limits) CheckFiles(n int) error {
	if limit := l.withDefaults().Files; n > limit {
		return fmt.Errorf("%w: the catalog holds more than %d files and directories, the limit per catalog", ErrInvalidCatalog, limit)
	}
	return nil
}
