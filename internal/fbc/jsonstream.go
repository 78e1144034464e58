package fbc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/catalogd/catalogd/internal/declcfg"
)

// jsonSplitter cuts a JSON stream into its top-level values, as raw bytes.
// It holds the value it is cutting and no more: the space between values
// is dropped as it is read.
type jsonSplitter struct {
	in    *input
	limit int64 // Limits.BlobBytes
	// raw holds the last value cut; it is reused for the next one.
	raw []byte
}

// errOverLimit marks a blob over Limits.BlobBytes.
var errOverLimit = errors.New("larger than the limit")

// errCancelled is what nextValue returns when grow refused to go on.
var errCancelled = errors.New("cancelled")

// nextValue returns the next top-level value and its position, io.EOF at
// the end, or an error for a stream that ends inside a value or holds
// something else than objects separated by space. grow is called as the
// value grows, with the bytes it grew by.
func (s *jsonSplitter) nextValue(grow func(n int) bool) ([]byte, Position, error) {
	in := s.in
	for {
		in.consume(skipSpace(in.buf, 0))
		if len(in.buf) > 0 {
			break
		}
		if !in.fill() {
			return nil, in.pos, in.endErr()
		}
	}
	start := in.pos
	if in.buf[0] != '{' {
		return nil, start, invalidAt(start, "expected an object")
	}
	raw := s.raw[:0]
	defer func() { s.raw = raw }()
	var v valueScan
	for {
		n, done := v.scan(in.buf)
		if int64(len(raw)+n) > s.limit {
			return nil, start, invalidAt(start, "the blob is %w of %d bytes per blob", errOverLimit, s.limit)
		}
		if !grow(n) {
			return nil, start, errCancelled
		}
		if len(raw)+n > cap(raw) {
			// Doubling, but never past the limit: a value refused at
			// the limit has held no more than the limit.
			raw = append(make([]byte, 0, max(min(2*cap(raw), int(s.limit)), len(raw)+n)), raw...)
		}
		raw = append(raw, in.buf[:n]...)
		in.consume(n)
		if done {
			return raw, start, nil
		}
		if !in.fill() {
			if in.err != nil {
				return nil, start, in.err
			}
			return nil, start, invalidAt(start, "the stream ends inside this value: %w", io.ErrUnexpectedEOF)
		}
	}
}

// decodeJSONMeta makes the declcfg.Meta of raw, one JSON value that starts
// at pos. out is the buffer canonicalMeta encodes into.
func decodeJSONMeta(raw, out []byte, pos Position) (*declcfg.Meta, error) {
	if meta, ok := canonicalMeta(raw, out); ok {
		return meta, nil
	}
	meta := &declcfg.Meta{}
	if err := meta.UnmarshalJSON(raw); err != nil {
		// Point at the fault where encoding/json says where it is.
		var syntax *json.SyntaxError
		var typeErr *json.UnmarshalTypeError
		at := int64(0)
		switch {
		case errors.As(err, &syntax):
			at = syntax.Offset - 1
		case errors.As(err, &typeErr):
			at = typeErr.Offset - 1
		}
		if at > 0 && at < int64(len(raw)) {
			pos = pos.advance(raw[:at])
		}
		return nil, &Error{Pos: pos, Err: fmt.Errorf("JSON: %w", InAuthorsWords(err))}
	}
	return meta, nil
}

// jsonFallback is what parseJSONStream leaves to the YAML reader when the
// stream's first two values do not both parse (operator-registry's parser
// then reads on as YAML): the first blob if it parsed, where to read on
// from, and the JSON error, which is the answer if the YAML reader cannot
// start.
type jsonFallback struct {
	first  *Blob
	resume int64
	err    error
}

// parseJSONStream sends the blobs of a JSON stream. It returns a fallback,
// having sent nothing, when the stream's first two values do not both
// parse.
func parseJSONStream(in *input, limits Limits, known knownFunc, budget fileBudget, send func(Blob) bool) (*jsonFallback, error) {
	split := &jsonSplitter{in: in, limit: limits.BlobBytes}
	var first *Blob // held until a second value parses
	var firstEnd int64
	// spare is the encoding of the last blob known recognised, which the
	// consumer does not take: the next value of about its size is encoded
	// into it rather than into new memory.
	var spare []byte
	parsed := 0
	for {
		raw, pos, err := split.nextValue(func(n int) bool { return budget.reserve(int64(n)) })
		if err == io.EOF {
			break
		}
		if errors.Is(err, errCancelled) {
			return nil, err
		}
		var meta *declcfg.Meta
		if err == nil {
			// The encoding takes about the value's size again.
			if !budget.reserve(int64(len(raw))) {
				return nil, errCancelled
			}
			out := spare[:0]
			if need := len(raw) + 1; cap(out) < need || cap(out) > 2*need {
				out = make([]byte, 0, need)
			}
			spare = nil
			meta, err = decodeJSONMeta(raw, out, pos)
		}
		if err != nil {
			switch {
			case in.err != nil:
				return nil, in.err
			case errors.Is(err, errOverLimit):
				return nil, err
			case parsed < 2:
				fb := &jsonFallback{first: first, err: err}
				if first != nil {
					fb.resume = firstEnd
				}
				return fb, nil
			}
			return nil, err
		}
		parsed++
		encoded := meta.Blob
		b, err := newBlob(meta, pos, limits, known)
		if err != nil {
			return nil, err
		}
		if b.Known != nil {
			spare = encoded
		}
		if parsed == 1 {
			first, firstEnd = &b, in.off
			continue
		}
		if first != nil && !send(*first) {
			return nil, errCancelled
		}
		first = nil
		if !send(b) {
			return nil, errCancelled
		}
	}
	if first != nil && !send(*first) {
		return nil, errCancelled
	}
	return nil, nil
}
