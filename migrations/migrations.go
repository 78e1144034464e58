// Package migrations owns the index database schema: ordered goose SQL files,
// embedded so a built binary carries the schema it writes.
package migrations

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
)

// FS holds the ordered migration files.
//
//go:embed *.sql
var FS embed.FS

// Digest identifies the schema: a digest over every migration file, so that
// any change to the schema, even an edit of an existing file, changes it.
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
