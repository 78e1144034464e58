package fbc

import (
	"bytes"
	"io"
	"regexp"
	"strconv"
	"unicode"
	"unicode/utf8"

	yamlv2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"

	"github.com/catalogd/catalogd/internal/declcfg"
)

// yamlSplitter cuts a YAML stream into documents the way operator-registry's
// parser (apimachinery's YAMLReader) does, line by line: "\r\n" ends a line
// as "\n" does; a line starting "---" must hold nothing else but space or a
// comment; it ends the open document and is dropped, or, when no document
// is open, opens one and belongs to it.
//
// Unlike YAMLReader, it does not keep what cannot change a document's
// meaning: the separator line that opens a document, and lines of nothing
// but spaces or a comment before the document's first other line. So a
// file of a GB of spaces, newlines, separators or comment lines takes no
// memory, and a document only the memory of its own text, which
// Limits.BlobBytes bounds.
type yamlSplitter struct {
	in    *input
	limit int64 // Limits.BlobBytes
	// text holds the lines of the open document that are kept.
	text []byte
	// open says a line was read into the open document, kept or not.
	open bool
	doc  yamlDoc
}

// yamlDoc says where a document stands in its file.
type yamlDoc struct {
	// at is where the document begins, first is where its first kept line
	// starts (line 1 of its text for the YAML parser), content where its
	// first character that is not space, outside a separator, stands: the
	// blob's position (at, if there is none).
	at, first, content Position
	hasContent         bool
}

// blobPos is the position of the document's blob.
func (d yamlDoc) blobPos() Position {
	if d.hasContent {
		return d.content
	}
	return d.at
}

// nextDoc returns the next document's text and where it stands, or io.EOF
// at the end of the stream. The text is valid until the next call. grow is
// called as the text grows, with the bytes it grew by.
func (s *yamlSplitter) nextDoc(grow func(n int) bool) ([]byte, yamlDoc, error) {
	in := s.in
	for {
		in.ensure(3)
		if len(in.buf) == 0 {
			if in.err != nil {
				return nil, yamlDoc{}, in.err
			}
			if s.open {
				return s.emit()
			}
			return nil, yamlDoc{}, io.EOF
		}
		lineStart := in.pos
		if n := emptyLines(in.buf); n > 0 && len(s.text) == 0 {
			// Dropped as line drops them, a chunk at a time: a file of
			// newlines is read as fast as one of spaces.
			if !s.open {
				s.start(lineStart)
			}
			in.consume(n)
			continue
		}
		if bytes.HasPrefix(in.buf, []byte("---")) {
			closes := s.open
			if !closes {
				s.start(lineStart)
			}
			if err := s.separator(); err != nil {
				return nil, yamlDoc{}, err
			}
			if closes {
				return s.emit()
			}
			continue
		}
		if !s.open {
			s.start(lineStart)
		}
		if err := s.line(lineStart, grow); err != nil {
			return nil, yamlDoc{}, err
		}
	}
}

// emptyLines is how many bytes of buf are empty lines ("\n") at its start.
func emptyLines(buf []byte) int {
	n := 0
	for n < len(buf) && buf[n] == '\n' {
		n++
	}
	return n
}

// start opens a document at pos.
func (s *yamlSplitter) start(pos Position) {
	s.open = true
	s.text = s.text[:0]
	s.doc = yamlDoc{at: pos}
}

// emit closes the open document and returns it.
func (s *yamlSplitter) emit() ([]byte, yamlDoc, error) {
	s.open = false
	return s.text, s.doc, nil
}

// keep appends seg, part of a line, to the document's text.
func (s *yamlSplitter) keep(seg []byte, grow func(n int) bool) error {
	if err := s.fits(len(seg)); err != nil {
		return err
	}
	if !grow(len(seg)) {
		return errCancelled
	}
	s.text = append(s.text, seg...)
	return nil
}

// fits fails once n more bytes would take the document's text past the
// limit.
func (s *yamlSplitter) fits(n int) error {
	if int64(len(s.text)+n) > s.limit {
		return invalidAt(s.doc.at, "the YAML document is %w of %d bytes per blob", errOverLimit, s.limit)
	}
	return nil
}

// separator reads a separator line and checks it. It is not kept: a
// document parses the same without it.
func (s *yamlSplitter) separator() error {
	at := s.in.pos
	rest, comment := false, false // past "---"; in the comment after it
	return s.takeLine(func(seg []byte, _ Position) error {
		if !rest {
			seg, rest = seg[3:], true
		}
		for len(seg) > 0 && !comment {
			r, size := utf8.DecodeRune(seg)
			switch {
			case r == '#':
				comment = true
			case !unicode.IsSpace(r):
				return invalidAt(at, "invalid YAML document separator: %.200q", seg)
			}
			seg = seg[size:]
		}
		return nil
	}, func() error { return nil })
}

// line reads a line of the open document. Until a line of the document is
// kept, a line of nothing but spaces, or of spaces and a comment, is
// dropped: neither can change what the document means. Leading spaces are
// counted, not held, until the line shows which it is.
func (s *yamlSplitter) line(lineStart Position, grow func(n int) bool) error {
	kept := len(s.text) > 0
	spaces := 0       // leading spaces read and not kept yet
	dropping := false // the line is a comment before the document's first kept line
	return s.takeLine(func(seg []byte, pos Position) error {
		if dropping {
			return nil
		}
		if !kept {
			i := 0
			for i < len(seg) && seg[i] == ' ' {
				i++
			}
			if i == len(seg) {
				spaces += len(seg)
				return nil
			}
			if seg[i] == '#' {
				dropping = true
				return nil
			}
			kept = true
			s.doc.first = lineStart
			if err := s.fits(spaces); err != nil {
				return err
			}
			if err := s.keep(bytes.Repeat([]byte{' '}, spaces), grow); err != nil {
				return err
			}
		}
		if !s.doc.hasContent {
			if i := bytes.IndexFunc(seg, func(r rune) bool { return r != ' ' }); i >= 0 {
				s.doc.content, s.doc.hasContent = pos.advance(seg[:i]), true
			}
		}
		return s.keep(seg, grow)
	}, func() error {
		if kept {
			return s.keep([]byte{'\n'}, grow)
		}
		return nil
	})
}

// takeLine consumes a line, calling each with the pieces of its text
// (without the "\n" or "\r\n" that ends it), each of whole runes and at
// the position it starts, then end.
func (s *yamlSplitter) takeLine(each func(seg []byte, pos Position) error, end func() error) error {
	in := s.in
	for {
		if j := bytes.IndexByte(in.buf, '\n'); j >= 0 {
			seg := in.buf[:j]
			if len(seg) > 0 && seg[len(seg)-1] == '\r' {
				seg = seg[:len(seg)-1]
			}
			if err := each(seg, in.pos); err != nil {
				return err
			}
			in.consume(j + 1)
			return end()
		}
		cut := len(in.buf)
		if !in.eof {
			// Hold back what the next bytes may change: a "\r" before
			// "\n", a rune cut in two.
			if cut > 0 && in.buf[cut-1] == '\r' {
				cut--
			}
			for k := 1; k <= utf8.UTFMax-1 && k <= cut; k++ {
				if utf8.RuneStart(in.buf[cut-k]) {
					if !utf8.FullRune(in.buf[cut-k : cut]) {
						cut -= k
					}
					break
				}
			}
		}
		if cut > 0 {
			if err := each(in.buf[:cut], in.pos); err != nil {
				return err
			}
			in.consume(cut)
		}
		if !in.fill() {
			if in.err != nil {
				return in.err
			}
			if len(in.buf) == 0 {
				return end()
			}
		}
	}
}

// yamlLine finds the line a YAML parser's error names.
var yamlLine = regexp.MustCompile(`yaml: line (\d+): `)

// decodeYAMLMeta makes the declcfg.Meta of a document as operator-registry's
// parser does (sigs.k8s.io/yaml, which decodes the document with
// go.yaml.in/yaml/v2 and encodes it as JSON for Meta.UnmarshalJSON, which
// decodes and encodes it again). A document of no text is an empty Meta.
// The tree is blockTree's, which reads the block YAML catalogs are written
// in several times faster than yaml.v2, or yaml.v2's where blockTree
// declines; it goes straight to the final encoding (treeMeta), without the
// two encodings and the decoding between them. What treeMeta declines, and
// any error, takes operator-registry's own path, so that errors are its
// own. (For a Meta, a json.Unmarshaler, sigs.k8s.io/yaml converts the
// document exactly as YAMLToJSON does.)
func decodeYAMLMeta(text []byte, d yamlDoc) (*declcfg.Meta, error) {
	meta := &declcfg.Meta{}
	if len(text) == 0 {
		return meta, nil
	}
	tree, ok := blockTree(text)
	if !ok && yamlv2.Unmarshal(text, &tree) != nil {
		tree = nil
	}
	if fast, ok := treeMeta(tree, len(text)); ok {
		return fast, nil
	}
	if err := yaml.Unmarshal(text, meta); err != nil {
		pos, msg := d.blobPos(), InAuthorsWords(err).Error()
		if m := yamlLine.FindStringSubmatchIndex(msg); m != nil {
			n, _ := strconv.Atoi(msg[m[2]:m[3]])
			pos = Position{Path: d.first.Path, Line: d.first.Line + n - 1, Column: 1}
			msg = msg[:m[0]] + "yaml: " + msg[m[1]:]
		}
		return nil, &Error{Pos: pos, Err: &decodeError{msg: msg, err: err}}
	}
	return meta, nil
}

// skipFallbackSpace consumes what apimachinery's decoder skips before it
// reads a stream it took for JSON on as YAML: space, up to and including
// the first newline. It reports false where that decoder gives up (fewer
// than 4 bytes left, or bytes that are not UTF-8), leaving the JSON error
// as the answer.
func skipFallbackSpace(in *input) bool {
	for {
		if !in.ensure(utf8.UTFMax) {
			return false
		}
		r, size := utf8.DecodeRune(in.buf[:utf8.UTFMax])
		if r == utf8.RuneError {
			return false
		}
		if !unicode.IsSpace(r) {
			return true
		}
		in.consume(size)
		if r == '\n' {
			return true
		}
	}
}
