package fbc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
	"testing/iotest"
	"time"

	"github.com/catalogd/catalogd/test/fbcfacts"
)

// TestWalkLimits walks a generated catalog under limits from the tightest
// (one blob buffered, a one-byte budget) to the build's own, and checks that
// every blob arrives once and in walk order: the stream equals the catalogd
// encoding of the files, read by fbcfacts.
func TestWalkLimits(t *testing.T) {
	dir := fbcfacts.Generated(t)
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
	dir := fbcfacts.Generated(t)
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
