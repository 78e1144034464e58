package fbc

import (
	"bytes"
	"errors"
	"fmt"
)

// ErrInvalidCatalog marks content that is not a catalog: bad JSON or YAML, a
// blob without a schema, a blob of the wrong shape, a limit broken. The
// same content always fails the same way, so retrying it without a change
// is pointless. (index.ErrInvalidCatalog is this same error, so that the
// index's callers need not know this package.)
var ErrInvalidCatalog = errors.New("invalid catalog")

// Position is where a blob or a fault stands in a catalog.
type Position struct {
	// Path is the file's slash-separated path from the catalog's root.
	Path string
	// Line and Column count from 1; Column counts bytes.
	Line, Column int
}

// String gives the position as editors and compilers do: path:line:column.
func (p Position) String() string { return fmt.Sprintf("%s:%d:%d", p.Path, p.Line, p.Column) }

// advance returns the position of the byte just after text, which starts
// at p.
func (p Position) advance(text []byte) Position {
	if n := bytes.Count(text, []byte{'\n'}); n > 0 {
		p.Line += n
		p.Column = len(text) - bytes.LastIndexByte(text, '\n')
		return p
	}
	p.Column += len(text)
	return p
}

// Error is content that is not a catalog, with where it stands. It is
// ErrInvalidCatalog.
type Error struct {
	Pos Position
	// Package is the package the fault stands in, when the file or its
	// directory named one before it: a catalog author looks for a
	// package, and a file's path need not say which.
	Package string
	Err     error
}

func (e *Error) Error() string {
	if e.Package != "" {
		return fmt.Sprintf("parse %s: %v: package %s: %v", e.Pos, ErrInvalidCatalog, e.Package, e.Err)
	}
	return fmt.Sprintf("parse %s: %v: %v", e.Pos, ErrInvalidCatalog, e.Err)
}

func (e *Error) Unwrap() []error { return []error{ErrInvalidCatalog, e.Err} }

// invalidAt is an Error at pos.
func invalidAt(pos Position, format string, args ...any) error {
	return &Error{Pos: pos, Err: fmt.Errorf(format, args...)}
}
