// Package migrations owns the index database schema: ordered goose SQL files,
// embedded so a built binary carries the schema it writes.
package migrations

import "embed"

// FS holds the ordered migration files.
//
//go:embed *.sql
var FS embed.FS
