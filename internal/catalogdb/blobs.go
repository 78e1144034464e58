package catalogdb

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

// blobBatch is how many blobs Blobs reads per query.
const blobBatch = 16

// Blobs calls fn with the data of every blob matching f, in id order. It
// never calls fn while a query is open: fn writes to a client, and a client
// that stops reading would otherwise hold one of the file's few connections
// for as long as the server's write timeout, and with a handful of such
// clients, stop the whole catalog answering. So it reads the matching ids
// first, then the data blobBatch blobs at a time.
func (c *Catalog) Blobs(ctx context.Context, f BlobFilter, fn func(data []byte) error) error {
	var conds []string
	var args []any
	for _, col := range []struct{ name, value string }{{"schema", f.Schema}, {"package", f.Package}, {"name", f.Name}} {
		if col.value != "" {
			conds = append(conds, col.name+" = ?")
			args = append(args, col.value)
		}
	}
	if len(conds) == 0 {
		return c.allBlobs(ctx, fn)
	}
	var ids []int64
	if err := c.sel(ctx, &ids, `SELECT id FROM blobs WHERE `+strings.Join(conds, " AND ")+` ORDER BY id`, args...); err != nil {
		return err
	}
	batch := `SELECT data FROM blobs WHERE id IN (?` + strings.Repeat(", ?", blobBatch-1) + `) ORDER BY id`
	for len(ids) > 0 {
		n := min(len(ids), blobBatch)
		// A short last batch repeats its last id, so that one prepared
		// statement serves every batch; IN matches it once.
		batchArgs := make([]any, blobBatch)
		for i := range batchArgs {
			batchArgs[i] = ids[min(i, n-1)]
		}
		var data [][]byte
		if err := c.sel(ctx, &data, batch, batchArgs...); err != nil {
			return err
		}
		for _, d := range data {
			if err := fn(d); err != nil {
				return err
			}
		}
		ids = ids[n:]
	}
	return nil
}

// allBlobs is Blobs without a filter: every blob, paged by id.
func (c *Catalog) allBlobs(ctx context.Context, fn func(data []byte) error) error {
	type row struct {
		ID   int64  `db:"id"`
		Data []byte `db:"data"`
	}
	for last := int64(-1); ; {
		var rows []row
		if err := c.sel(ctx, &rows, `SELECT id, data FROM blobs WHERE id > ? ORDER BY id LIMIT ?`, last, blobBatch); err != nil {
			return err
		}
		for _, r := range rows {
			if err := fn(r.Data); err != nil {
				return err
			}
		}
		if len(rows) < blobBatch {
			return nil
		}
		last = rows[len(rows)-1].ID
	}
}

// AllChunk is a run of consecutive blobs of the /all stream: their data
// concatenated, the stream offset it starts at, and the id of the blob
// after it.
type AllChunk struct {
	Data   []byte
	Offset int64
	NextID int64
}

// AllFrom reads up to n blobs of the /all stream starting with the blob
// holding stream offset pos, appending their data to buf. Data is empty
// past the end.
func (c *Catalog) AllFrom(ctx context.Context, pos int64, n int, buf []byte) (AllChunk, error) {
	return c.allChunk(ctx, `SELECT id, offset, data FROM blobs WHERE id >= (SELECT id FROM blobs WHERE offset <= ? ORDER BY offset DESC LIMIT 1) ORDER BY id LIMIT ?`, pos, n, buf)
}

// AllNext reads up to n blobs of the /all stream from blob id on (an
// AllChunk's NextID), appending their data to buf.
func (c *Catalog) AllNext(ctx context.Context, id int64, n int, buf []byte) (AllChunk, error) {
	return c.allChunk(ctx, `SELECT id, offset, data FROM blobs WHERE id >= ? ORDER BY id LIMIT ?`, id, n, buf)
}

func (c *Catalog) allChunk(ctx context.Context, query string, from int64, n int, buf []byte) (AllChunk, error) {
	out := AllChunk{Data: buf[:0]}
	first := true
	err := c.each(ctx, query, []any{from, n}, func(rows *sqlx.Rows) error {
		var id, offset int64
		var data []byte
		if err := rows.Scan(&id, &offset, &data); err != nil {
			return err
		}
		if first {
			out.Offset = offset
			first = false
		}
		out.Data = append(out.Data, data...)
		out.NextID = id + 1
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("read blobs: %w", err)
	}
	return out, nil
}
