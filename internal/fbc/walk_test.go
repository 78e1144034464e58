package fbc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"testing/iotest"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/catalogd/catalogd/internal/declcfg"
	"github.com/catalogd/catalogd/test/fbcfacts"
)

// TestWalkLimits walks a generated catalog, as JSON and as YAML, under
// limits from the tightest (one blob buffered, a one-byte budget) to the
// build's own, and checks that every blob arrives once and in walk order:
// the stream equals the catalogd encoding of the files, read by fbcfacts.
func TestWalkLimits(t *testing.T) {
	for _, format := range []struct {
		name string
		dir  func(*testing.T) string
	}{
		{"JSON", func(t *testing.T) string { return fbcfacts.Generated(t) }},
		{"YAML", generatedYAML},
	} {
		t.Run(format.name, func(t *testing.T) { testWalkLimits(t, format.dir(t)) })
	}
}

func testWalkLimits(t *testing.T, dir string) {
	want := fbcfacts.Load(t, dir).JSONLines()
	tests := []struct {
		name string
		opts walkOptions
	}{
		{"tightest", walkOptions{workers: 1, aheadFiles: 1, fileBuffer: 1, aheadBytes: 1}},
		{"budget smaller than a blob", walkOptions{workers: 4, aheadFiles: 8, fileBuffer: 64, aheadBytes: 100}},
		{"many workers, little buffer", walkOptions{workers: 8, aheadFiles: 2, fileBuffer: 2, aheadBytes: 64 << 10}},
		{"build", defaultWalk},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got bytes.Buffer
			err := walk(context.Background(), os.DirFS(dir), Limits{}, tt.opts, nil, FileHooks{Blob: func(_ context.Context, b Blob) error {
				got.Write(b.Meta.Blob)
				return nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("walk gave %d bytes that differ from the catalog's %d", got.Len(), len(want))
			}
		})
	}
}

// TestWalkStops: a walk that is cancelled, or whose consumer fails, returns
// that error and leaves no parsing goroutine behind, whatever it was
// waiting on (a full channel, the byte budget, a free worker).
func TestWalkStops(t *testing.T) {
	t.Run("JSON", func(t *testing.T) { testWalkStops(t, fbcfacts.Generated(t)) })
	t.Run("YAML", func(t *testing.T) { testWalkStops(t, generatedYAML(t)) })
}

func testWalkStops(t *testing.T, dir string) {
	errLoad := errors.New("load failed")
	tests := []struct {
		name   string
		opts   walkOptions
		cancel bool
		want   error
	}{
		{"cancelled, waiting on the budget", walkOptions{workers: 2, aheadFiles: 4, fileBuffer: 64, aheadBytes: 1}, true, context.Canceled},
		{"cancelled, waiting on channels", walkOptions{workers: 2, aheadFiles: 4, fileBuffer: 1, aheadBytes: 1 << 30}, true, context.Canceled},
		{"consumer fails", defaultWalk, false, errLoad},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			n := 0
			err := walk(ctx, os.DirFS(dir), Limits{}, tt.opts, nil, FileHooks{Blob: func(context.Context, Blob) error {
				if n++; n < 20 {
					return nil
				}
				if tt.cancel {
					cancel()
					return nil
				}
				return errLoad
			}})
			if !errors.Is(err, tt.want) {
				t.Fatalf("walk returned %v, want %v", err, tt.want)
			}
			// Goroutines end on their own once they see the walk is over;
			// wait for them rather than assume how long that takes.
			for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > before; {
				if time.Now().After(deadline) {
					buf := make([]byte, 1<<16)
					t.Fatalf("%d goroutines before the walk, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// TestByteBudget: files ahead of the consumer wait once the budget is spent;
// the file the consumer reads waits only for its own blobs; a blob larger
// than the budget passes alone, and only in the file the consumer reads.
func TestByteBudget(t *testing.T) {
	b := newByteBudget(context.Background(), 100)
	acquiredIn := func(b *byteBudget, file int, n int64) chan struct{} {
		done := make(chan struct{})
		go func() {
			b.acquire(file, n)
			close(done)
		}()
		return done
	}
	acquired := func(file int, n int64) chan struct{} { return acquiredIn(b, file, n) }
	// blocked reports whether done stays open for a while: a pass can be
	// wrong only in the lenient direction (it was about to close).
	blocked := func(done chan struct{}) bool {
		select {
		case <-done:
			return false
		case <-time.After(50 * time.Millisecond):
			return true
		}
	}

	<-acquired(0, 60) // the consumer's file
	<-acquired(1, 30)
	ahead := acquired(2, 30) // 120 would be over the budget
	if !blocked(ahead) {
		t.Fatal("a file ahead went over the budget")
	}
	head := acquired(0, 30) // over the budget too, but its own blobs are only 90
	if blocked(head) {
		t.Fatal("the consumer's file waited on files ahead of it")
	}
	own := acquired(0, 20) // 110 of its own
	if !blocked(own) {
		t.Fatal("the consumer's file went over the budget with its own blobs")
	}
	b.release(0, 60) // the consumer's file holds 30: its 20 more fit
	<-own
	b.release(1, 30) // 50 in all: the file ahead's 30 fit
	<-ahead

	big := newByteBudget(context.Background(), 10)
	if !big.acquire(0, 1000) {
		t.Fatal("a blob larger than the budget did not pass alone in the consumer's file")
	}
	ahead = acquiredIn(big, 1, 1000) // ahead of the consumer, it waits
	if !blocked(ahead) {
		t.Fatal("a blob larger than the budget went ahead of the consumer")
	}
	big.release(0, 1000)
	if !blocked(ahead) {
		t.Fatal("a blob larger than the budget went ahead of the consumer once the budget was free")
	}
	big.advance(1) // now the consumer's file
	<-ahead
}

// oneByteFS serves its files a byte per Read, so that every blob boundary
// falls between two reads.
type oneByteFS struct{ fstest.MapFS }

func (f oneByteFS) Open(name string) (fs.File, error) {
	file, err := f.MapFS.Open(name)
	if err != nil {
		return nil, err
	}
	return oneByteFile{file}, nil
}

type oneByteFile struct{ fs.File }

func (f oneByteFile) Read(p []byte) (int, error) { return iotest.OneByteReader(f.File).Read(p) }

// TestWalkBlobLimit walks files whose largest blob is known, read whole and
// a byte at a time: a blob limit of exactly that size passes, one byte less
// fails, however the reads split the stream. A YAML document counts its
// text (here a comment makes it longer than its JSON encoding).
func TestWalkBlobLimit(t *testing.T) {
	const pkg = `{"schema":"olm.package","name":"p"}`
	big := `{"schema":"s","v":["a\"]}{[","\\",{"k":[1,2]}],"w":"` + strings.Repeat("x", 300) + `"}`
	yamlBig := "schema: s\nv: |\n  ---not a separator\n# " + strings.Repeat("y", 300) + "\n"
	tests := []struct {
		name, file, stream string
		largest            int
	}{
		{"JSON", "c.json", "\n " + pkg + "\n" + big + "\n" + pkg, len(big)},
		{"JSON, largest last", "c.json", pkg + big, len(big)},
		{"YAML", "c.yaml", "schema: a\n---\n" + yamlBig + "--- # comment\nschema: b\n", len(yamlBig)},
		{"YAML, largest first", "c.yaml", yamlBig + "---\nschema: b\n", len(yamlBig)},
	}
	for _, tt := range tests {
		for _, oneByte := range []bool{false, true} {
			for _, limit := range []int{tt.largest, tt.largest - 1} {
				t.Run(fmt.Sprintf("%s/one byte %v/limit %d", tt.name, oneByte, limit), func(t *testing.T) {
					var fsys fs.FS = fstest.MapFS{tt.file: {Data: []byte(tt.stream)}}
					if oneByte {
						fsys = oneByteFS{fsys.(fstest.MapFS)}
					}
					err := Walk(t.Context(), fsys, Limits{BlobBytes: int64(limit)}, func(context.Context, Blob) error { return nil })
					if limit == tt.largest && err != nil {
						t.Errorf("limit %d, the largest blob's size: %v", limit, err)
					}
					if limit < tt.largest && (!errors.Is(err, ErrInvalidCatalog) || !strings.Contains(err.Error(), "bytes per blob")) {
						t.Errorf("limit %d, below the largest blob's %d: error %v", limit, tt.largest, err)
					}
				})
			}
		}
	}
}

// generatedYAML writes the generated catalog of fbcfacts.Generated again as
// YAML, a document per blob, as opm renders catalogs to YAML.
func generatedYAML(t *testing.T) string {
	t.Helper()
	src := fbcfacts.Generated(t)
	dir := t.TempDir()
	err := fs.WalkDir(os.DirFS(src), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(filepath.Join(src, p))
		if err != nil {
			return err
		}
		var out bytes.Buffer
		dec := json.NewDecoder(bytes.NewReader(data))
		for {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err == io.EOF {
				break
			} else if err != nil {
				return err
			}
			doc, err := yaml.JSONToYAML(raw)
			if err != nil {
				return err
			}
			out.WriteString("---\n")
			out.Write(doc)
		}
		dst := filepath.Join(dir, strings.TrimSuffix(p, filepath.Ext(p))+".yaml")
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, out.Bytes(), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// gatedFS holds every Read past a file's first until release is closed,
// counting the readers it holds at once: files the walk parses at the same
// time. (The first Read is the launcher's look at the file's start.)
type gatedFS struct {
	fs.FS
	release chan struct{}
	mu      sync.Mutex
	held    int
	most    int
}

func (g *gatedFS) Open(name string) (fs.File, error) {
	f, err := g.FS.Open(name)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || fi.IsDir() {
		return f, err
	}
	return &gatedFile{File: f, fs: g}, nil
}

// holding reports how many readers are held now.
func (g *gatedFS) holding() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held
}

type gatedFile struct {
	fs.File
	fs    *gatedFS
	reads int
}

func (f *gatedFile) Read(p []byte) (int, error) {
	if f.reads++; f.reads > 1 {
		g := f.fs
		g.mu.Lock()
		g.held++
		g.most = max(g.most, g.held)
		g.mu.Unlock()
		<-g.release
		g.mu.Lock()
		g.held--
		g.mu.Unlock()
	}
	return f.File.Read(p)
}

// TestWalkWorkers: a walk parses two YAML files at once, the YAML parser
// being the slow side of reading YAML, and JSON files one at a time, the
// loader being the slow side there.
func TestWalkWorkers(t *testing.T) {
	// Each file is over sniffBytes and within a chunk, so that the look at
	// its start is one Read and the parser's reads are held.
	filler := strings.Repeat("\n", sniffBytes)
	files := func(ext, doc string) fstest.MapFS {
		fsys := fstest.MapFS{}
		for i := range 4 {
			fsys[fmt.Sprintf("p%d/c.%s", i, ext)] = &fstest.MapFile{Data: []byte(strings.Replace(doc, "N", strconv.Itoa(i), 1) + filler)}
		}
		return fsys
	}
	tests := []struct {
		name string
		fsys fstest.MapFS
		want int
	}{
		{"YAML", files("yaml", "schema: olm.package\nname: pN\n"), 2},
		{"JSON", files("json", `{"schema":"olm.package","name":"pN"}`+"\n"), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &gatedFS{FS: tt.fsys, release: make(chan struct{})}
			done := make(chan error, 1)
			n := 0
			go func() {
				done <- Walk(t.Context(), g, Limits{}, func(context.Context, Blob) error { n++; return nil })
			}()
			// Wait for the walk to hold as many parsers as it will: the
			// expected count, or a while longer than it takes to start them.
			for deadline := time.Now().Add(10 * time.Second); g.holding() < tt.want && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			time.Sleep(100 * time.Millisecond)
			close(g.release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if n != len(tt.fsys) {
				t.Errorf("walk gave %d blobs of %d files", n, len(tt.fsys))
			}
			if g.most != tt.want {
				t.Errorf("%d files parsed at once, want %d", g.most, tt.want)
			}
		})
	}
}

// TestWalkFiles: Files lists what Walk reads, in its order and with its
// ignore rules, and WalkFiles reads just the files given, telling where
// each starts and ends, an empty file included.
func TestWalkFiles(t *testing.T) {
	fsys := fstest.MapFS{
		"a/one.json":   {Data: []byte(`{"schema":"olm.package","name":"a"}` + "\n" + `{"schema":"x.custom","name":"c1"}`)},
		"b/empty.yaml": {Data: []byte("")},
		"c/one.yaml":   {Data: []byte("schema: olm.package\nname: c\n")},
		"d/ignored":    {Data: []byte(`{"schema":"olm.package","name":"d"}`)},
		".indexignore": {Data: []byte("d/\n")},
	}
	files, err := Files(fsys, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(files, " "), "a/one.json b/empty.yaml c/one.yaml"; got != want {
		t.Fatalf("Files = %s, want %s", got, want)
	}
	tests := []struct {
		name  string
		paths []string
		want  string
	}{
		{"all", files, "start a/one.json, blob a, blob c1, end a/one.json, start b/empty.yaml, end b/empty.yaml, start c/one.yaml, blob c, end c/one.yaml"},
		{"some", []string{"a/one.json", "c/one.yaml"}, "start a/one.json, blob a, blob c1, end a/one.json, start c/one.yaml, blob c, end c/one.yaml"},
		{"none", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var events []string
			note := func(what string) func(context.Context, string) error {
				return func(_ context.Context, path string) error {
					events = append(events, what+" "+path)
					return nil
				}
			}
			err := WalkFiles(context.Background(), fsys, Limits{}, tt.paths, FileHooks{Start: note("start"), End: note("end"),
				Blob: func(_ context.Context, b Blob) error {
					events = append(events, "blob "+b.Meta.Name)
					return nil
				}})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(events, ", "); got != tt.want {
				t.Errorf("events:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// TestWalkPrepare: Prepare's answer for each decoded blob reaches Blob as
// Prepared, in JSON and YAML files parsed at once, and a blob Known
// answers for is neither prepared nor decoded.
func TestWalkPrepare(t *testing.T) {
	fsys := fstest.MapFS{}
	var want []string
	for i := range 6 {
		name := fmt.Sprintf("p%d", i)
		if i%2 == 0 {
			fsys[name+"/c.json"] = &fstest.MapFile{Data: []byte(`{"schema":"olm.package","name":"` + name + `"}` + "\n" + `{"schema":"olm.bundle","package":"` + name + `","name":"` + name + `.v1"}`)}
		} else {
			fsys[name+"/c.yaml"] = &fstest.MapFile{Data: []byte("schema: olm.package\nname: " + name + "\n---\nschema: olm.bundle\npackage: " + name + "\nname: " + name + ".v1\n")}
		}
		want = append(want, name+"=prepared "+name, name+".v1=known")
	}
	paths, err := Files(fsys, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	prepared := 0
	var got []string
	err = WalkFiles(context.Background(), fsys, Limits{}, paths, FileHooks{
		Known: func(m *declcfg.Meta) any {
			if m.Schema == declcfg.SchemaBundle {
				return "known"
			}
			return nil
		},
		Prepare: func(b Blob) any {
			mu.Lock()
			prepared++
			mu.Unlock()
			if b.Value == nil {
				t.Errorf("blob %s prepared before its value was decoded", b.Meta.Name)
			}
			return "prepared " + b.Value.(*declcfg.Package).Name
		},
		Blob: func(_ context.Context, b Blob) error {
			if b.Known != nil {
				if b.Prepared != nil {
					t.Errorf("known blob %s was prepared: %v", b.Meta.Name, b.Prepared)
				}
				got = append(got, fmt.Sprintf("%s=%v", b.Meta.Name, b.Known))
				return nil
			}
			got = append(got, fmt.Sprintf("%s=%v", b.Meta.Name, b.Prepared))
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if g, w := strings.Join(got, " "), strings.Join(want, " "); g != w {
		t.Errorf("blobs:\n%s\nwant:\n%s", g, w)
	}
	if prepared != 6 {
		t.Errorf("Prepare called %d times, want 6 (the packages)", prepared)
	}
}
