// Package migrations owns the index database schema: plain SQL files, embedded
// so a built binary carries the schema it writes, and applied to a new, empty
// index file in the order of their names.
//
// An index file is built once and never altered: new catalog content gets a
// new file. So nothing is ever migrated in place, and the files need neither
// a version table nor down steps; a file built by another schema is told
// apart by Digest and rebuilt.
package migrations

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
)

// FS holds the schema files.
//
//go:embed *.sql
var FS embed.FS

// The schema files, in the order a build applies them. Tables goes into the
// empty file; Indexes, the secondary indexes, follows the bulk load, because
// maintaining indexes row by row makes the load slower; Counts counts the
// finished tables. An incremental build, which starts from a copy of the
// previous file, applies Counts alone.
const (
	Tables  = "00001_init.sql"
	Indexes = "00002_indexes.sql"
	Counts  = "00003_counts.sql"
)

// Execer runs SQL statements: *sql.DB, *sql.Tx and their sqlx wrappers are.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Apply runs every statement of the schema file name against db.
func Apply(ctx context.Context, db Execer, name string) error {
	data, err := FS.ReadFile(name)
	if err != nil {
		return fmt.Errorf("read schema file %s: %w", name, err)
	}
	if _, err := db.ExecContext(ctx, string(data)); err != nil {
		return fmt.Errorf("apply schema file %s: %w", name, err)
	}
	return nil
}

// Digest identifies the schema: a digest over every schema file, so that any
// change to the schema, even an edit of an existing file, changes it.
func Digest() string {
	h := sha256.New()
	_ = fs.WalkDir(FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := FS.ReadFile(path)
		if err != nil {
			return err
		}
		h.Write([]byte(path))
		h.Write([]byte{0})
		h.Write(data)
		return nil
	})
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
