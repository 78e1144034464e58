package index

import (
	"bytes"
	"fmt"
	"io"
)

// Limits bound what one catalog may make a build hold. Parsing a blob
// takes several times its size in memory (operator-registry decodes each
// one into maps and encodes it again), so a single huge blob, or a small
// compressed layer that unpacks to one, could otherwise take the process
// down. Blobs stream, so the file limit bounds disk and time rather than
// memory; it is generous so that a catalog kept in one file still builds.
// Walking a catalog keeps every file's path, so the number of files bounds
// the memory of the walks (source.DirContext's digest and the build's).
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
		return invalid(fmt.Errorf("the catalog holds more than %d files and directories, the limit per catalog", limit))
	}
	return nil
}

// guardedReader reads a catalog file for the parser and fails as soon as
// the file breaks a limit or shows it is not text, before the parser has
// buffered what breaks it. It follows the stream's top-level structure
// just enough to know where each blob starts: a JSON stream (first
// non-space byte '{', as the parser decides) by its brackets and strings,
// a YAML stream by its "---" document separators.
type guardedReader struct {
	r      io.Reader
	limits Limits
	// off is the file offset of the next byte read.
	off int64
	// blobStart is the offset of the current blob's first byte, -1 between
	// blobs of a JSON stream.
	blobStart int64
	mode      byte // 0 undecided, 'j' JSON, 'y' YAML
	// JSON: nesting depth, and whether inside a string (after a backslash).
	depth            int
	inString, escape bool
	// YAML: the bytes read so far of the current line, up to three.
	lineHead []byte
	err      error
}

func newGuardedReader(r io.Reader, limits Limits) *guardedReader {
	return &guardedReader{r: r, limits: limits, blobStart: -1, lineHead: make([]byte, 0, 3)}
}

func (g *guardedReader) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.r.Read(p)
	if n > 0 {
		if g.err = g.check(p[:n]); g.err != nil {
			return 0, g.err
		}
	}
	return n, err
}

// check follows chunk, the next bytes of the file.
func (g *guardedReader) check(chunk []byte) error {
	if i := bytes.IndexByte(chunk, 0); i >= 0 {
		return fmt.Errorf("not a text file: NUL byte at offset %d", g.off+int64(i))
	}
	end := g.off + int64(len(chunk))
	if end > g.limits.FileBytes {
		return fmt.Errorf("file is larger than the limit of %d bytes per catalog file", g.limits.FileBytes)
	}
	for i := 0; i < len(chunk); {
		switch g.mode {
		case 'j':
			i = g.json(chunk, i)
		case 'y':
			i = g.yaml(chunk, i)
		default:
			switch chunk[i] {
			case ' ', '\t', '\r', '\n':
				i++
			case '{':
				g.mode = 'j'
			default:
				g.mode, g.blobStart = 'y', g.off+int64(i)
			}
		}
		if g.err != nil {
			return g.err
		}
	}
	// The start of a YAML line may yet turn out to be a separator, which
	// belongs to the next document.
	pending := int64(0)
	if g.mode == 'y' && string(g.lineHead) != "---" {
		pending = int64(len(g.lineHead))
	}
	if g.blobStart >= 0 && end-pending-g.blobStart > g.limits.BlobBytes {
		return g.blobTooLarge()
	}
	g.off = end
	return nil
}

func (g *guardedReader) blobTooLarge() error {
	return fmt.Errorf("the blob at offset %d is larger than the limit of %d bytes per blob", g.blobStart, g.limits.BlobBytes)
}

// json follows a JSON stream from chunk[i] and returns where it stopped.
func (g *guardedReader) json(chunk []byte, i int) int {
	for i < len(chunk) {
		if g.inString {
			if g.escape {
				g.escape = false
				i++
				continue
			}
			j := bytes.IndexAny(chunk[i:], `"\`)
			if j < 0 {
				return len(chunk)
			}
			i += j
			if chunk[i] == '\\' {
				g.escape = true
			} else {
				g.inString = false
			}
			i++
			continue
		}
		switch c := chunk[i]; c {
		case '"':
			g.inString = true
		case '{', '[':
			if g.depth == 0 {
				g.blobStart = g.off + int64(i)
			}
			g.depth++
		case '}', ']':
			g.depth--
			if g.depth <= 0 {
				if g.blobStart >= 0 && g.off+int64(i)+1-g.blobStart > g.limits.BlobBytes {
					g.err = g.blobTooLarge()
					return i
				}
				g.depth, g.blobStart = 0, -1
			}
		case ' ', '\t', '\r', '\n', ',', ':':
		default:
			if g.depth == 0 {
				// Not a JSON stream after all: the parser tries YAML next.
				g.mode, g.blobStart = 'y', g.off+int64(i)
				return i
			}
		}
		i++
	}
	return i
}

// yaml follows a YAML stream from chunk[i]: a line starting "---" starts a
// new document, which takes that line in.
func (g *guardedReader) yaml(chunk []byte, i int) int {
	for i < len(chunk) {
		if len(g.lineHead) < 3 && chunk[i] != '\n' {
			g.lineHead = append(g.lineHead, chunk[i])
			if string(g.lineHead) == "---" {
				if g.off+int64(i)-2-g.blobStart > g.limits.BlobBytes {
					g.err = g.blobTooLarge()
					return i
				}
				g.blobStart = g.off + int64(i) - 2
			}
			i++
			continue
		}
		j := bytes.IndexByte(chunk[i:], '\n')
		if j < 0 {
			return len(chunk)
		}
		i += j + 1
		g.lineHead = g.lineHead[:0]
	}
	return i
}
