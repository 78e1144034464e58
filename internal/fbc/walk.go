// Package fbc reads a file-based catalog (FBC): it walks a catalog's
// fs.FS as operator-registry's declcfg walk does (lexical order,
// .indexignore honoured) and yields its blobs in that order, each with its
// declcfg.Meta, the typed value of the schemas the index interprets and its
// position in the catalog (file, line, column), within Limits. It has one
// job, so that the index (which stores blobs) and anything else that reads
// a catalog share one reader, and that reader can be fuzzed against
// operator-registry's on its own.
//
// A file whose first non-space byte (within its first 4 KiB) is '{' is a
// JSON stream: it is cut into values by their brackets and each is encoded
// as declcfg.Meta encodes it, in one pass (canonicalMeta), with bundles
// decoded without copies (scanBundle). Anything else is YAML, cut into
// documents by lines as operator-registry cuts them and each decoded into
// the tree the YAML parser operator-registry uses (go.yaml.in/yaml/v2)
// gives, by blockTree where it can and by that parser where it cannot; the
// tree is encoded as operator-registry would encode it (treeMeta). Up to two YAML
// files are parsed at once, a JSON file alone (walkOptions). The scanners
// share the primitives of scan.go.
//
// Memory is bounded by a constant independent of a file's size and shape:
// about 2×Limits.BlobBytes + 2 MiB per parsing worker, more only while a
// YAML document is converted (below). A walk holds the blob being read (its
// buffer never grows past Limits.BlobBytes, and a blob is refused once
// over it, so a GB-long string costs the limit) and its encoding, the byte
// budget of parsed blobs waiting for the consumer (walkOptions: 1 MiB),
// and a 64 KiB chunk per open file. What is not a blob is dropped as it is
// read, never held: space between JSON values, and before a YAML
// document's first line the separator that opens it and lines of spaces,
// newlines or comments (a run of spaces is counted, not kept). So a file
// of nothing but spaces, newlines, separators or comment lines takes a
// constant 0.2 MiB of heap however long it is (TestBombsTakeBoundedMemory;
// test/stress's BenchmarkBombs feeds a GB of each to the binary). Deep
// nesting costs stack, not heap: the canonical encoder stops at 64 levels
// and encoding/json at 10,000. Decoding a YAML document (go.yaml.in/yaml/v2's
// tree) takes several times its text, at most once per worker.
package fbc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	pathpkg "path"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/joelanford/ignore"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/catalogd/catalogd/internal/declcfg"
)

// Blob is one blob of a catalog.
type Blob struct {
	// Meta is the blob as operator-registry's declcfg walk gives it: its
	// schema, package and name, and its encoding (compact JSON, keys
	// sorted, a newline at the end).
	Meta *declcfg.Meta
	// Value is the blob decoded, for the schemas the index interprets: a
	// *declcfg.Package, *declcfg.Channel, *declcfg.Bundle or
	// *declcfg.Deprecation; nil for other schemas.
	Value any
	// ValueStarts holds, for a bundle, where each property's value starts
	// in Meta.Blob (-1 when it has none).
	ValueStarts []int
	// Pos is where the blob starts in the catalog: its first byte that is
	// not space ('{' in JSON), nor in a YAML comment line before it.
	Pos Position
	// Known is what FileHooks.Known answered for the blob: when not nil,
	// Value and ValueStarts are unset, the blob's value not decoded, and
	// so is Meta.Blob, the bytes the caller already holds.
	Known any
	// Prepared is what FileHooks.Prepare answered for the blob; nil
	// without that hook, and for a Known blob.
	Prepared any
}

// size is what a blob counts against the walk's byte budget.
func (b Blob) size() int64 {
	if b.Meta == nil {
		return 0
	}
	return int64(len(b.Meta.Blob))
}

// parsed is what a file's parser hands the walk: a blob, or why it
// stopped.
type parsed struct {
	blob Blob
	err  error
}

// walkOptions bound a walk: it parses up to workers YAML files at once,
// and a JSON file alone (it takes every worker), up to aheadFiles files
// ahead of the consumer, and holds about aheadBytes of parsed blobs (see
// byteBudget). A file's blobs wait in a channel of fileBuffer, so that a
// worker rarely blocks on a long file and leaves its core idle; the byte
// budget, not the channel, bounds the memory a walk holds, whatever the
// catalog's size.
//
// YAML is parsed two files at once, JSON one file at a time: the index's
// loader, which writes SQLite on one goroutine, is the slower side for JSON
// (an 8,000-bundle catalog built in the same time with one worker as with
// two; with each bundle's checks moved onto the parsers, FileHooks.Prepare,
// two JSON workers made a first build of the bench catalog 0.97 of the
// time and raised its peak RSS by 3.6 MiB), and each worker is one more
// blob of many MB held in two copies (as read and as encoded) while it
// parses; decoding YAML takes longer per byte than the loader, so two
// files parse at once, one per core of a small machine (operator-registry
// parses on every core). The budget is 1 MiB for
// the same reason: it is what lets a parser run ahead of the consumer,
// which small blobs need and large ones only pay for in memory. 1 MiB is
// still about a hundred bundles of a typical catalog ahead, and a build of
// the bench catalog took as long as with 4 MiB within the noise of a
// shared machine (BenchmarkBuild, alternating runs), while 4 MiB raised
// the server's peak by 8 MiB (make bench-memory).
type walkOptions struct {
	workers, aheadFiles, fileBuffer int
	aheadBytes                      int64
}

var defaultWalk = walkOptions{workers: 2, aheadFiles: 32, fileBuffer: 1024, aheadBytes: 1 << 20}

// Walk reads the catalog in fsys and calls yield with each blob, in walk
// order, until yield fails. Content that is not a catalog, or breaks
// limits (zero fields take the defaults), fails with an error that is
// ErrInvalidCatalog and, where it stands in a file, an *Error. Walk returns
// once every file it opened is closed, even when it stops early.
func Walk(ctx context.Context, fsys fs.FS, limits Limits, yield func(context.Context, Blob) error) error {
	return walk(ctx, fsys, limits, defaultWalk, nil, FileHooks{Blob: yield})
}

// FileHooks are what WalkFiles calls: Start before a file's first blob,
// Blob with each blob, End after a file's last blob (Start and End also
// for a file without blobs). Start and End may be nil.
//
// Known, when set, is asked about each blob once its Meta is made, from
// the parsing goroutines, before its value is decoded: a blob it answers
// for with a value other than nil is sent without its value or its bytes
// (Blob.Known).
// An incremental index build (package index) so skips decoding the large
// blobs it already holds: making a blob's canonical encoding costs a small
// part of decoding and checking it.
//
// Prepare, when set, is called with each decoded blob (not a Known one)
// from the goroutine that parsed it, before Blob gets it; its answer is
// Blob.Prepared. Work on one blob that needs neither the blobs before it
// nor the consumer's state (package index checks each bundle so) then
// runs beside the consumer, on the parsing goroutines, instead of after
// it: Blob is called in walk order on one goroutine, which is the longest
// stage of an index build. Prepare must be safe to call from several
// goroutines at once.
type FileHooks struct {
	Start, End func(ctx context.Context, path string) error
	Blob       func(context.Context, Blob) error
	Known      func(*declcfg.Meta) any
	Prepare    func(Blob) any
}

// Files lists the catalog files of fsys in walk order, with the ignore
// rules and limits of Walk: the files Walk reads.
func Files(fsys fs.FS, limits Limits) ([]string, error) {
	if fsys == nil {
		return nil, errors.New("list catalog files: no filesystem given")
	}
	paths, err := catalogFiles(fsys, limits.withDefaults())
	if err != nil {
		return nil, fmt.Errorf("list catalog files: %w", err)
	}
	return paths, nil
}

// WalkFiles is Walk over the named files of fsys only, in the order given
// (a subsequence of Files, so that blobs come in walk order), telling
// hooks where each file starts and ends: an index built file by file
// (package index) keeps a record per file.
func WalkFiles(ctx context.Context, fsys fs.FS, limits Limits, paths []string, hooks FileHooks) error {
	if paths == nil {
		paths = []string{}
	}
	return walk(ctx, fsys, limits, defaultWalk, paths, hooks)
}

// walk walks paths, or every catalog file when paths is nil.
func walk(ctx context.Context, fsys fs.FS, limits Limits, opts walkOptions, paths []string, hooks FileHooks) error {
	if fsys == nil {
		return errors.New("parse catalog: no filesystem given")
	}
	limits = limits.withDefaults()
	if paths == nil {
		var err error
		if paths, err = catalogFiles(fsys, limits); err != nil {
			return fmt.Errorf("list catalog files: %w", err)
		}
	}
	// Cancelled first, then waited for: parsers stop at their next blob.
	var parsers sync.WaitGroup
	defer parsers.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// The launcher opens files in walk order; the consumer takes each
	// file's channel from opened in the same order.
	budget := newByteBudget(ctx, opts.aheadBytes)
	opened := make(chan chan parsed, opts.aheadFiles)
	workers := make(chan struct{}, opts.workers)
	parsers.Go(func() {
		defer close(opened)
		for i, path := range paths {
			src := openSource(fsys, path, limits)
			file := make(chan parsed, src.blobBuffer(opts.fileBuffer))
			select {
			case opened <- file:
			case <-ctx.Done():
				src.close()
				return
			}
			weight := 1
			if src.json {
				weight = opts.workers
			}
			for range weight {
				select {
				case workers <- struct{}{}:
				case <-ctx.Done():
					src.close()
					close(file) // the consumer may be waiting on it; it finds ctx done
					return
				}
			}
			parsers.Go(func() {
				defer func() {
					for range weight {
						<-workers
					}
				}()
				parseFile(ctx, fsys, src, limits, hooks.Known, hooks.Prepare, file, fileBudget{budget, i})
			})
		}
	})

	// dirPackage is the package each directory's files last named, for a
	// fault in a file that names none before it (a bundle file beside its
	// package's file).
	dirPackage := map[string]string{}
	i := -1
	for file := range opened {
		i++
		budget.advance(i)
		if hooks.Start != nil {
			if err := hooks.Start(ctx, paths[i]); err != nil {
				return err
			}
		}
		dir := pathpkg.Dir(paths[i])
		for p := range file {
			if p.err != nil {
				var positioned *Error
				if errors.As(p.err, &positioned) && positioned.Package == "" {
					positioned.Package = dirPackage[dir]
				}
				return p.err
			}
			if pkg := blobPackage(p.blob.Meta, ""); pkg != "" {
				dirPackage[dir] = pkg
			}
			err := hooks.Blob(ctx, p.blob)
			budget.release(i, p.blob.size())
			if err != nil {
				return err
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if hooks.End != nil {
			if err := hooks.End(ctx, paths[i]); err != nil {
				return err
			}
		}
	}
	return ctx.Err()
}

// byteBudget bounds the bytes of blobs being parsed or waiting for the
// consumer: all files together hold at most limit, except the file the
// consumer reads, which only waits for its own blobs (and so never on files
// behind it, whose blobs the consumer cannot free before it). Memory is thus
// about twice the limit. A blob is reserved as it is read. One larger than
// the limit passes alone, and only in the consumer's file, once the consumer
// has stored that file's earlier blobs: so at most one such blob is being
// read while the consumer stores another, however many files are ahead.
type byteBudget struct {
	mu    sync.Mutex
	cond  *sync.Cond
	ctx   context.Context
	limit int64
	used  int64
	// held is the bytes waiting or being parsed, per file; partial, of
	// those, the bytes reserved for the blob the file's parser is on.
	held, partial map[int]int64
	// head is the index of the file the consumer reads.
	head int
}

func newByteBudget(ctx context.Context, limit int64) *byteBudget {
	b := &byteBudget{ctx: ctx, limit: limit, held: map[int]int64{}, partial: map[int]int64{}}
	b.cond = sync.NewCond(&b.mu)
	context.AfterFunc(ctx, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.cond.Broadcast()
	})
	return b
}

// reserve waits until n more bytes of the blob file's parser is on fit,
// and reports false if the walk was cancelled meanwhile.
func (b *byteBudget) reserve(file int, n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.ctx.Err() == nil {
		if file == b.head && b.held[file]-b.partial[file] == 0 {
			break
		}
		waiting := b.used
		if file == b.head {
			waiting = b.held[file]
		}
		if waiting+n <= b.limit {
			break
		}
		b.cond.Wait()
	}
	b.used += n
	b.held[file] += n
	b.partial[file] += n
	return b.ctx.Err() == nil
}

// settle ends the blob file's parser was on: what was reserved for it
// becomes size, the bytes it holds until the consumer has it.
func (b *byteBudget) settle(file int, size int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delta := size - b.partial[file]
	delete(b.partial, file)
	b.used += delta
	if b.held[file] += delta; b.held[file] == 0 {
		delete(b.held, file)
	}
	b.cond.Broadcast()
}

// release returns the bytes of a blob of file once the consumer has it.
func (b *byteBudget) release(file int, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if b.held[file] -= n; b.held[file] == 0 {
		delete(b.held, file)
	}
	b.cond.Broadcast()
}

// fileBudget is the budget as one file's parser uses it.
type fileBudget struct {
	b    *byteBudget
	file int
}

func (f fileBudget) reserve(n int64) bool { return f.b.reserve(f.file, n) }
func (f fileBudget) settle(size int64)    { f.b.settle(f.file, size) }

// advance tells the budget which file the consumer now reads.
func (b *byteBudget) advance(file int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.head = file
	b.cond.Broadcast()
}

// catalogFiles lists the catalog's files as declcfg walks them: lexical
// order, skipping .indexignore files and what their patterns match. The
// entries are counted against limits.Files before the ignore matcher walks
// the whole tree in its turn.
func catalogFiles(fsys fs.FS, limits Limits) ([]string, error) {
	var paths []string
	entries := 0
	err := fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == "." {
			return nil
		}
		entries++
		if err := limits.CheckFiles(entries); err != nil {
			return err
		}
		if !d.IsDir() && d.Name() != ".indexignore" {
			paths = append(paths, path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	matcher, err := ignore.NewMatcher(fsys, ".indexignore")
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(paths, func(p string) bool { return matcher.Match(p, false) }), nil
}

// source is a catalog file opened, with what its first bytes say it is.
type source struct {
	path string
	f    fs.File
	in   *input
	// json says the file is read as a JSON stream, at least at first.
	json bool
	// err is why the file could not be opened.
	err error
}

// openSource opens a catalog file and looks at its start as
// operator-registry's parser (apimachinery's YAMLOrJSONDecoder) does: it
// is a JSON stream if its first non-space byte within 4 KiB is '{', YAML
// otherwise.
func openSource(fsys fs.FS, path string, limits Limits) source {
	f, err := fsys.Open(path)
	if err != nil {
		return source{path: path, err: err}
	}
	in := newInput(f, path, limits)
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		in.sizeHint(fi.Size())
	}
	in.ensure(sniffBytes)
	json := in.err == nil && bytes.HasPrefix(bytes.TrimLeftFunc(in.buf[:min(len(in.buf), sniffBytes)], unicode.IsSpace), []byte("{"))
	return source{path: path, f: f, in: in, json: json}
}

// blobBuffer is how many parsed blobs of the file may wait for the
// consumer: at most max, and no more than a file read to its end in the
// sniff can hold (a blob takes at least minBlobBytes). A buffer of max is
// about 100 KiB; made for each of 100,000 small files, it was most of
// the time and the memory of walking them.
func (s source) blobBuffer(max int) int {
	if s.in == nil || !s.in.eof {
		return max
	}
	return min(max, len(s.in.buf)/minBlobBytes+1)
}

// minBlobBytes is the fewest bytes a blob takes in a catalog file: a JSON
// object or YAML document naming a schema, with its separator.
const minBlobBytes = 8

// close closes the file, if it was opened.
func (s source) close() {
	if s.f != nil {
		s.f.Close()
	}
}

// parseFile streams the blobs of src, which it closes, into out and closes
// out; a failure is sent last. Each blob's bytes are reserved in budget
// while it is read and decoded, so that the walk's memory stays within the
// budget whatever the size of single blobs.
//
// A file is read as operator-registry's parser reads it: as a JSON stream
// or as YAML, as openSource found; a JSON stream whose first two values do
// not both parse is read on as YAML after the first value that did (see
// jsonFallback).
func parseFile(ctx context.Context, fsys fs.FS, src source, limits Limits, known knownFunc, prepare func(Blob) any, out chan<- parsed, budget fileBudget) {
	defer close(out)
	path := src.path
	var pkg string // the package the file last named
	send := func(b Blob) bool {
		pkg = blobPackage(b.Meta, pkg)
		if prepare != nil && b.Known == nil {
			b.Prepared = prepare(b)
		}
		budget.settle(b.size())
		select {
		case out <- parsed{blob: b}:
			return true
		case <-ctx.Done():
			return false
		}
	}
	fail := func(err error) {
		if errors.Is(err, errCancelled) {
			return
		}
		var positioned *Error
		if !errors.As(err, &positioned) {
			err = fmt.Errorf("parse %s: %w", path, err)
		} else if positioned.Package == "" {
			positioned.Package = pkg
		}
		budget.settle(0)
		select {
		case out <- parsed{err: err}:
		case <-ctx.Done():
		}
	}

	if src.err != nil {
		fail(src.err)
		return
	}
	f, in := src.f, src.in
	var fallback *jsonFallback
	if src.json {
		var err error
		fallback, err = parseJSONStream(in, limits, known, budget, send)
		if fallback == nil {
			f.Close()
			if err != nil {
				fail(err)
			}
			return
		}
		budget.settle(0)
		f.Close()
		if f, err = fsys.Open(path); err != nil {
			fail(err)
			return
		}
		in = newInput(f, path, limits)
		for in.off < fallback.resume && in.ensure(1) {
			in.consume(int(min(int64(len(in.buf)), fallback.resume-in.off)))
		}
		if !skipFallbackSpace(in) {
			f.Close()
			if in.err != nil {
				fallback.err = in.err
			}
			if fallback.first != nil {
				pkg = blobPackage(fallback.first.Meta, pkg)
			}
			fail(fallback.err)
			return
		}
		if fallback.first != nil && !send(*fallback.first) {
			f.Close()
			return
		}
	}
	err := parseYAMLStream(in, limits, known, budget, send)
	f.Close()
	if err != nil {
		fail(inFileFormat(path, err, fallback))
	}
}

// inFileFormat is the error to report for a YAML reading of path that
// failed with err. A .json file read on as YAML after its JSON failed
// (fallback) was meant as JSON: its author wants encoding/json's fault,
// which points at the offending byte, not the YAML parser's, which names
// YAML and the line where it gave up. Any other error stands: a broken
// limit, or the fault of a YAML file.
func inFileFormat(path string, err error, fallback *jsonFallback) error {
	var syntax *decodeError
	if fallback == nil || !strings.HasSuffix(path, ".json") || !errors.As(err, &syntax) {
		return err
	}
	return fallback.err
}

// blobPackage is the package meta names (an olm.package blob's name, any
// other blob's package field), or last when it names none.
func blobPackage(meta *declcfg.Meta, last string) string {
	switch {
	case meta == nil:
		return last
	case meta.Schema == declcfg.SchemaPackage && meta.Name != "":
		return meta.Name
	case meta.Package != "":
		return meta.Package
	}
	return last
}

// sniffBytes is how far into a file apimachinery's decoder looks for the
// '{' that makes it a JSON stream.
const sniffBytes = 4096

// parseYAMLStream sends the blobs of a YAML stream.
func parseYAMLStream(in *input, limits Limits, known knownFunc, budget fileBudget, send func(Blob) bool) error {
	split := &yamlSplitter{in: in, limit: limits.BlobBytes}
	// The document's text is reserved as the splitter keeps it, in steps
	// of reserveStep rather than line by line: the budget's lock and maps
	// cost more than reading a line. What a step reserves beyond the text
	// is given back when the blob is sent (settle).
	var credit int64
	grow := func(n int) bool {
		if int64(n) > credit {
			step := max(int64(n), reserveStep)
			if !budget.reserve(step) {
				return false
			}
			credit += step
		}
		credit -= int64(n)
		return true
	}
	for {
		credit = 0
		text, doc, err := split.nextDoc(grow)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		meta, err := decodeYAMLMeta(text, doc)
		if err != nil {
			return err
		}
		if !budget.reserve(int64(len(meta.Blob))) {
			return errCancelled
		}
		b, err := newBlob(meta, doc.blobPos(), limits, known)
		if err != nil {
			return err
		}
		if !send(b) {
			return errCancelled
		}
	}
}

// reserveStep is how much of the byte budget a YAML document's text takes
// at a time: about the size of a bundle's document in published catalogs.
const reserveStep = 16 << 10

// knownFunc is FileHooks.Known, nil when not set.
type knownFunc func(*declcfg.Meta) any

// newBlob checks a parsed blob, which starts at pos, and decodes its typed
// value, unless known knows the blob.
func newBlob(meta *declcfg.Meta, pos Position, limits Limits, known knownFunc) (Blob, error) {
	if meta.Schema == "" {
		return Blob{}, invalidAt(pos, "blob without a schema: %.200s", meta.Blob)
	}
	if n := int64(len(bytes.TrimSuffix(meta.Blob, []byte("\n")))); n > limits.BlobBytes {
		// A YAML document can grow on the way to JSON.
		return Blob{}, invalidAt(pos, "blob %s %q is %d bytes, over the limit of %d bytes per blob", meta.Schema, meta.Name, n, limits.BlobBytes)
	}
	if known != nil {
		if k := known(meta); k != nil {
			meta.Blob = nil
			return Blob{Meta: meta, Pos: pos, Known: k}, nil
		}
	}
	value, starts, err := decodeValue(meta)
	if err != nil {
		return Blob{}, &Error{Pos: pos, Err: err}
	}
	return Blob{Meta: meta, Value: value, ValueStarts: starts, Pos: pos}, nil
}

// findValueStarts finds where each property's value stands in the blob it
// was decoded from by encoding/json. A decoded value is a byte-for-byte slice of its blob, so
// any place holding the same bytes serves; properties are searched in
// order, each from where the previous one ended.
func findValueStarts(blob []byte, props []property.Property) []int {
	starts := make([]int, len(props))
	pos := 0
	for i, p := range props {
		starts[i] = -1
		if len(p.Value) == 0 {
			continue
		}
		j := bytes.Index(blob[pos:], p.Value)
		if j < 0 {
			j = bytes.Index(blob, p.Value)
			if j < 0 {
				continue
			}
			pos = 0
		}
		starts[i] = pos + j
		pos += j + len(p.Value)
	}
	return starts
}

// decodeValue decodes the typed value of a blob of a schema the index
// interprets; other schemas have none. For a bundle it also returns where
// each property's value starts in the blob (see Blob.ValueStarts).
func decodeValue(m *declcfg.Meta) (value any, valueStarts []int, err error) {
	var v any
	switch m.Schema {
	case declcfg.SchemaPackage:
		v = &declcfg.Package{}
	case declcfg.SchemaChannel:
		v = &declcfg.Channel{}
	case declcfg.SchemaBundle:
		if b, starts, ok := scanBundle(m.Blob); ok {
			return b, starts, nil
		}
		v = &declcfg.Bundle{}
	case declcfg.SchemaDeprecation:
		v = &declcfg.Deprecation{}
	default:
		return nil, nil, nil
	}
	if err := json.Unmarshal(m.Blob, v); err != nil {
		return nil, nil, fmt.Errorf("parse %s %q: %w", m.Schema, m.Name, InAuthorsWords(err))
	}
	if b, ok := v.(*declcfg.Bundle); ok {
		valueStarts = findValueStarts(m.Blob, b.Properties)
	}
	return v, valueStarts, nil
}
