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
func (c *Catalog) readContent(r Range) ([]byte, error) {
	data := make([]byte, r.Length)
	if _, err := c.content.ReadAt(data, r.Offset); err != nil {
		return nil, fmt.Errorf("read content file at %d: %w", r.Offset, err)
	}
	return data, nil
}
