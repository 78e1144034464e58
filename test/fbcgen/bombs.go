package fbcgen

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
)

// Bomb is a shape of catalog file that costs a reader memory out of
// proportion to what it holds, if the reader keeps what it skips: runs of
// space, newlines, YAML separators or comment lines, one long string, deep
// nesting. A file of the shape is Head, then Unit repeated, then Tail; it
// compresses to almost nothing, so an image layer of a GB of it is a
// download of a MB (issue 18).
type Bomb struct {
	// Shape names it.
	Shape string
	// File is the name to write it under in a catalog.
	File             string
	Head, Unit, Tail string
	// Refused is part of the error a reader that matches operator-registry
	// must refuse a file of the shape with at any size above a few units
	// ("" when the file is a valid catalog).
	Refused string
	// OneBlob says the file is one blob, which a reader holds up to the
	// limit per blob before it refuses it.
	OneBlob bool
}

// Check reports how err, a reader's answer to a file of the shape, differs
// from what it must be: nothing for a valid catalog, a refusal saying
// Refused otherwise.
func (b Bomb) Check(err error) error {
	switch {
	case b.Refused == "" && err != nil:
		return fmt.Errorf("%w; want the %s read", err, b.Shape)
	case b.Refused != "" && (err == nil || !strings.Contains(err.Error(), b.Refused)):
		return fmt.Errorf("%v; want the %s refused: %q", err, b.Shape, b.Refused)
	}
	return nil
}

// BoundMiB is the most heap, in MiB, a reader may take for a file of the
// shape: base, what it holds whatever it reads, and for one blob the
// blob's buffer up to blobBytes, the limit per blob, as it grows.
func (b Bomb) BoundMiB(base float64, blobBytes int64) float64 {
	if b.OneBlob {
		return base + 1.5*float64(blobBytes)/(1<<20)
	}
	return base
}

// deepBlob is a blob nested as deep as catalog readers take cheaply and
// more: past the 64 levels fbc's canonical encoder handles itself.
var deepBlob = `{"schema":"io.example.deep","v":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + "}\n"

// Bombs are the shapes of issue 18. Every document of nothing but space,
// separators or comments is an empty document, which operator-registry
// refuses ("missing root schema field"); a line indented by a GB, or a
// string, is refused once its blob is over the limit per blob.
func Bombs() []Bomb {
	return []Bomb{
		{Shape: "spaces", File: "catalog.json", Unit: " ", Refused: "blob without a schema"},
		{Shape: "newlines", File: "catalog.yaml", Unit: "\n", Refused: "blob without a schema"},
		{Shape: "separators", File: "catalog.yaml", Unit: "---\n", Refused: "blob without a schema"},
		{Shape: "comments", File: "catalog.yaml", Unit: "# a comment, and another, and another\n", Refused: "blob without a schema"},
		{Shape: "indent", File: "catalog.yaml", Unit: " ", Tail: "schema: x\n", Refused: "bytes per blob"},
		{Shape: "string", File: "catalog.json", Head: `{"schema":"olm.bundle","name":"`, Unit: "abcdefghijklmnop", Tail: `"}`, Refused: "bytes per blob", OneBlob: true},
		{Shape: "nesting", File: "catalog.json", Unit: deepBlob},
	}
}

// units is how many units a file of about size bytes holds.
func (b Bomb) units(size int64) int64 {
	return max(size-int64(len(b.Head)+len(b.Tail)), 0) / int64(len(b.Unit))
}

// Size is the exact size of the file Reader(size) streams.
func (b Bomb) Size(size int64) int64 {
	return int64(len(b.Head)+len(b.Tail)) + b.units(size)*int64(len(b.Unit))
}

// Reader streams a file of the shape of about size bytes (whole units).
func (b Bomb) Reader(size int64) io.Reader {
	return io.MultiReader(strings.NewReader(b.Head), &repeatReader{unit: []byte(b.Unit), left: b.units(size)}, strings.NewReader(b.Tail))
}

// Bytes is a file of the shape of about size bytes, for small ones.
func (b Bomb) Bytes(size int) []byte {
	var buf bytes.Buffer
	_, _ = io.Copy(&buf, b.Reader(int64(size)))
	return buf.Bytes()
}

// Write writes a file of the shape of about size bytes to path.
func (b Bomb) Write(path string, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if _, err := io.Copy(w, b.Reader(size)); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// repeatReader reads unit left times.
type repeatReader struct {
	unit []byte
	left int64
	buf  []byte // whole units, at most 64 KiB of them
	off  int    // unread part of buf
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.buf == nil {
		r.buf = bytes.Repeat(r.unit, max(1, (64<<10)/len(r.unit)))
		r.off = len(r.buf)
	}
	if r.off == len(r.buf) {
		if r.left == 0 {
			return 0, io.EOF
		}
		units := min(r.left, int64(len(r.buf)/len(r.unit)))
		r.left -= units
		r.off = len(r.buf) - int(units)*len(r.unit)
	}
	n := copy(p, r.buf[r.off:])
	r.off += n
	return n, nil
}

// BombSeeds are small files of every shape, alone and between two
// documents (where a reader that drops what is not a blob must still cut
// the documents as operator-registry does): seeds for the fuzz targets
// that read catalogs.
func BombSeeds() [][]byte {
	var seeds [][]byte
	for _, bomb := range Bombs() {
		small := bomb.Bytes(300)
		seeds = append(seeds, small, []byte("schema: a\n---\n"+string(small)+"\n---\nschema: b\n"))
	}
	return seeds
}
