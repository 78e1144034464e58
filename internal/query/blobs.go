package query

import (
	"context"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"
)

// Counts are a catalog's totals.
type Counts struct{ Packages, Channels, Bundles int }

// Counts returns the catalog's totals, counted when the index was built.
func (c *Catalog) Counts(ctx context.Context) (Counts, error) {
	var out Counts
	if err := c.get(ctx, &out, `SELECT
		(SELECT count FROM catalog_counts WHERE what = 'packages' AND name = '') AS packages,
		(SELECT count FROM catalog_counts WHERE what = 'channels' AND name = '') AS channels,
		(SELECT count FROM catalog_counts WHERE what = 'bundles' AND name = '') AS bundles`); err != nil {
		return out, fmt.Errorf("read counts: %w", err)
	}
	return out, nil
}

// SchemaCount is how many blobs of a schema a catalog has.
type SchemaCount struct {
	Schema string
	Count  int
}

// SchemaCounts returns how many blobs of each schema the catalog has, by
// schema, counted when the index was built.
func (c *Catalog) SchemaCounts(ctx context.Context) ([]SchemaCount, error) {
	var out []SchemaCount
	if err := c.sel(ctx, &out, `SELECT name AS schema, count FROM catalog_counts WHERE what = 'schema' ORDER BY name`); err != nil {
		return nil, fmt.Errorf("read schema counts: %w", err)
	}
	return out, nil
}

// BlobFilter selects blobs by exact schema, package and name; an empty
// field matches every blob.
type BlobFilter struct{ Schema, Package, Name string }

// Range is a byte range of the index's content file: blobs, whole.
type Range struct{ Offset, Length int64 }

// BlobRanges returns where the blobs matching f stand in the content file,
// in id order (which is the file's order), adjacent blobs joined into one
// range: copying the ranges in order gives the blobs byte for byte. Its
// memory is 16 bytes per range, never the blobs themselves, and no query
// is open once it returns, so a caller writing to a slow client holds none
// of the file's few connections. Without a filter it is the whole file.
func (c *Catalog) BlobRanges(ctx context.Context, f BlobFilter) ([]Range, error) {
	var conds []string
	var args []any
	for _, col := range []struct{ name, value string }{{"schema", f.Schema}, {"package", f.Package}, {"name", f.Name}} {
		if col.value != "" {
			conds = append(conds, col.name+" = ?")
			args = append(args, col.value)
		}
	}
	if len(conds) == 0 {
		var size int64
		if err := c.get(ctx, &size, `SELECT coalesce((SELECT offset + length FROM blobs ORDER BY id DESC LIMIT 1), 0)`); err != nil {
			return nil, fmt.Errorf("read blob ranges: %w", err)
		}
		if size == 0 {
			return nil, nil
		}
		return []Range{{0, size}}, nil
	}
	var out []Range
	err := c.each(ctx, `SELECT offset, length FROM blobs WHERE `+strings.Join(conds, " AND ")+` ORDER BY id`, args, func(rows *sqlx.Rows) error {
		var r Range
		if err := rows.Scan(&r.Offset, &r.Length); err != nil {
			return err
		}
		if n := len(out); n > 0 && out[n-1].Offset+out[n-1].Length == r.Offset {
			out[n-1].Length += r.Length
			return nil
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read blob ranges: %w", err)
	}
	return out, nil
}

// readContent reads the byte range r of the content file.
func (c *Catalog) readContent(r Range) ([]byte, error) { return c.readInto(nil, r) }

// EachBlob calls fn with the schema and the bytes of every blob, in id
// order (the content file's), one blob at a time: blob is only valid
// during the call, so a caller deriving something from every blob (the
// GraphQL surface's schema discovery) never holds the catalog in memory.
// The ranges are read first, so no query stays open while fn runs.
func (c *Catalog) EachBlob(ctx context.Context, fn func(schema string, blob []byte) error) error {
	type located struct {
		Schema string `db:"schema"`
		Range
	}
	var all []located
	err := c.each(ctx, `SELECT schema, offset, length FROM blobs ORDER BY id`, nil, func(rows *sqlx.Rows) error {
		var l located
		if err := rows.Scan(&l.Schema, &l.Offset, &l.Length); err != nil {
			return err
		}
		all = append(all, l)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read blob ranges: %w", err)
	}
	var buf []byte
	for _, l := range all {
		if err := ctx.Err(); err != nil {
			return err
		}
		if buf, err = c.readInto(buf, l.Range); err != nil {
			return err
		}
		if err := fn(l.Schema, buf); err != nil {
			return err
		}
	}
	return nil
}

// Page is a window of a list: Offset items skipped, at most Limit given.
type Page struct{ Offset, Limit int }

// BlobPage calls fn with the bytes of each blob matching f (whose Schema
// must be set) in the window p of the matching blobs in id order, one at a
// time and valid only during the call. The filter and the window are the
// SQL's, so a page costs what it holds, not what the schema holds.
func (c *Catalog) BlobPage(ctx context.Context, f BlobFilter, p Page, fn func(blob []byte) error) error {
	if f.Schema == "" {
		return fmt.Errorf("read blob page: no schema given")
	}
	if p.Offset < 0 || p.Limit <= 0 {
		return nil
	}
	conds, args := []string{"schema = ?"}, []any{f.Schema}
	if f.Package != "" {
		conds, args = append(conds, "package = ?"), append(args, f.Package)
	}
	if f.Name != "" {
		conds, args = append(conds, "name = ?"), append(args, f.Name)
	}
	var ranges []Range
	err := c.each(ctx, `SELECT offset, length FROM blobs WHERE `+strings.Join(conds, " AND ")+` ORDER BY id LIMIT ? OFFSET ?`,
		append(args, p.Limit, p.Offset), func(rows *sqlx.Rows) error {
			var r Range
			if err := rows.Scan(&r.Offset, &r.Length); err != nil {
				return err
			}
			ranges = append(ranges, r)
			return nil
		})
	if err != nil {
		return fmt.Errorf("read blob page of schema %q: %w", f.Schema, err)
	}
	var buf []byte
	for _, r := range ranges {
		if buf, err = c.readInto(buf, r); err != nil {
			return err
		}
		if err := fn(buf); err != nil {
			return err
		}
	}
	return nil
}

// readInto reads the byte range r of the content file into buf, grown as
// needed, and returns it.
func (c *Catalog) readInto(buf []byte, r Range) ([]byte, error) {
	if int64(cap(buf)) < r.Length {
		buf = make([]byte, r.Length)
	}
	buf = buf[:r.Length]
	if _, err := c.content.ReadAt(buf, r.Offset); err != nil {
		return nil, fmt.Errorf("read content file at %d: %w", r.Offset, err)
	}
	return buf, nil
}
