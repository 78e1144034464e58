package index

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/catalogd/catalogd/migrations"
)

// Problem is a validation problem of a package, as Check returns it and
// Build records it.
type Problem struct {
	Package string
	// Position is where the blob concerned starts (see fbc.Position).
	Position string
	Message  string
}

// Check validates src as Build does, with the same reader and the same
// per-package validation, and returns the problems Build would record, in
// the order an index lists them (by package, then as found). It writes
// only what validation reads back: the work tables that hold a package's
// bundles until the package is complete (so that memory grows with neither
// the catalog's bytes nor its bundles, as in Build), the rows of its
// olm.package, olm.channel and olm.deprecations blobs, and those blobs'
// bytes. The bundles' parts, the content file's other bytes, its gzip copy,
// the secondary indexes and the checks of a finished index, which only
// serving reads, are left out. The files go into dir, which must exist,
// and are removed before Check returns. The errors are Build's: a catalog
// that cannot be read at all fails with ErrInvalidCatalog.
func Check(ctx context.Context, dir string, src Content) (Stats, []Problem, error) {
	path := filepath.Join(dir, "check.db")
	defer RemoveFiles(path)
	if err := os.Mkdir(ContentDir(path), 0o700); err != nil {
		return Stats{}, nil, fmt.Errorf("create scratch content directory: %w", fileError(err))
	}
	// Check never cuts the content: one segment.
	content := newSegWriter(ContentDir(path), contentExt, 0)
	defer content.close()
	db, err := openForBuild(path)
	if err != nil {
		return Stats{}, nil, err
	}
	defer db.Close()
	if err := migrations.Apply(ctx, db, migrations.Tables); err != nil {
		return Stats{}, nil, fmt.Errorf("create tables: %w", err)
	}

	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return Stats{}, nil, fmt.Errorf("begin check: %w", err)
	}
	// Nothing is committed: the file is scratch.
	defer tx.Rollback() //nolint:errcheck // the file is removed anyway

	l, err := newLoader(ctx, tx, content, nil)
	if err != nil {
		return Stats{}, nil, err
	}
	defer l.close()
	l.checkOnly = true
	if err := walk(ctx, l, src); err != nil {
		return Stats{}, nil, err
	}
	return l.stats, l.problems, nil
}
