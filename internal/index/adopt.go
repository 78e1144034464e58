package index

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/catalogd/catalogd/migrations"
)

// ModePrebuilt is the BuildMode of an index this process did not build
// but adopted (Adopt): one published beside the catalog in its registry.
const ModePrebuilt = "prebuilt"

// ErrRefused marks an index that Adopt refuses: its files disagree with
// each other, with the schema, or with the catalog it claims to be of.
var ErrRefused = errors.New("index refused")

// Adopt checks the index version at path (its database and content
// directory, Files), which this process did not build, and makes it one
// package store may swap in as it swaps in what Build makes. It is how a
// prebuilt index downloaded from a registry becomes live, so it checks
// everything a reader relies on, each independently of the others:
//
//   - the database was built by this binary's schema (migrations.Digest),
//     and holds every table and index the schema makes, so that every
//     query finds what it reads;
//   - it records being built from the content of ref's digest, which is
//     the digest the caller asked for: an index of other content is
//     refused whatever else it claims;
//   - SQLite's quick_check passes (checkDatabase: every page read; what
//     it leaves out, whether each index holds exactly its table's rows,
//     the publisher's build checked with integrity_check before the
//     file's bytes were fixed by their digest; the full check would make
//     taking the bench catalog's index about a third dearer in CPU);
//   - every content and gzip segment its list names is there with its
//     listed size, the content holds the bytes the database recorded, and
//     their CRC-32 is the one the list records (the gzip copy's trailer).
//     The CRC-32 of each content segment is the one sums holds, taken by
//     whoever wrote the file as it wrote it, rather than read back here:
//     on the 1.3 GB catalog of CRD objects, reading the content again
//     was a tenth of taking its index. A segment without one is refused.
//
// What passes is recorded as adopted: mode prebuilt, the time given, and
// ref as its source, so that the catalog's own repository is the one its
// index names (the publisher may have pushed through another name). A
// refusal wraps ErrRefused (or ErrOtherSchema) and says which check
// failed. The files are left in place either way; the caller removes them.
func Adopt(ctx context.Context, path, ref string, adoptedAt time.Time, sums ContentSums) (Info, error) {
	_, digest, ok := strings.Cut(ref, "@")
	if !ok || digest == "" {
		return Info{}, fmt.Errorf("adopt index: reference %q has no digest", ref)
	}
	db, err := sqlx.Open("sqlite", FileURI(path, url.Values{"_pragma": {"journal_mode(DELETE)"}}))
	if err != nil {
		return Info{}, fmt.Errorf("adopt index: open: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)

	info, err := ReadInfo(ctx, db)
	switch {
	case errors.Is(err, ErrOtherSchema):
		return Info{}, fmt.Errorf("adopt index: %w", err)
	case err != nil:
		return Info{}, fmt.Errorf("adopt index: %w: %w", ErrRefused, err)
	}
	if err := checkTables(ctx, db); err != nil {
		return Info{}, fmt.Errorf("adopt index: %w: %w", ErrRefused, err)
	}
	if info.Digest != digest {
		return Info{}, fmt.Errorf("adopt index: %w: it records content %s, not %s", ErrRefused, info.Digest, digest)
	}
	if _, recorded, _ := strings.Cut(info.SourceRef, "@"); recorded != digest {
		return Info{}, fmt.Errorf("adopt index: %w: it records being built from %q, not from %s", ErrRefused, info.SourceRef, digest)
	}
	if err := checkDatabase(ctx, db, ModeIncremental); err != nil {
		return Info{}, fmt.Errorf("adopt index: %w: %w", ErrRefused, err)
	}
	if err := checkStreams(path, info.AllBytes, sums); err != nil {
		return Info{}, fmt.Errorf("adopt index: %w: %w", ErrRefused, err)
	}
	info.SourceRef, info.BuiltAt = ref, adoptedAt.UTC()
	info.Build = BuildMode{Mode: ModePrebuilt}
	if _, err := db.ExecContext(ctx, `UPDATE catalog_info SET source_ref = ?, built_at = ?, build_mode = ?, build_reason = '', packages_rebuilt = 0 WHERE id = 1`,
		info.SourceRef, info.BuiltAt.Format(time.RFC3339Nano), ModePrebuilt); err != nil {
		return Info{}, fmt.Errorf("adopt index: record adoption: %w", err)
	}
	return info, nil
}

// checkTables compares the tables and indexes of db with those the
// schema makes, found by applying it to an empty database: a file missing
// one (or holding one under another definition) would fail a query later,
// or answer it without its index.
func checkTables(ctx context.Context, db *sqlx.DB) error {
	want, err := schemaObjects(ctx)
	if err != nil {
		return err
	}
	got, err := dbObjects(ctx, db)
	if err != nil {
		return err
	}
	for name, sql := range want {
		switch have, ok := got[name]; {
		case !ok:
			return fmt.Errorf("the database has no %s", name)
		case have != sql:
			return fmt.Errorf("the database's %s is not the schema's", name)
		}
	}
	return nil
}

// schemaObjects are the tables and indexes of this binary's schema, by
// name, with their SQL.
func schemaObjects(ctx context.Context) (map[string]string, error) {
	scratch, err := sqlx.Open("sqlite", ":memory:")
	if err != nil {
		return nil, fmt.Errorf("open scratch database: %w", err)
	}
	defer scratch.Close()
	scratch.SetMaxOpenConns(1)
	for _, f := range []string{migrations.Tables, migrations.Indexes, migrations.Counts} {
		if err := migrations.Apply(ctx, scratch, f); err != nil {
			return nil, err
		}
	}
	return dbObjects(ctx, scratch)
}

// dbObjects lists the tables and named indexes of db, by name, with their
// SQL ("table x", "index y"), SQLite's own automatic indexes left out.
func dbObjects(ctx context.Context, db *sqlx.DB) (map[string]string, error) {
	var rows []struct {
		Type string `db:"type"`
		Name string `db:"name"`
		SQL  string `db:"sql"`
	}
	if err := db.SelectContext(ctx, &rows, `SELECT type, name, coalesce(sql, '') AS sql FROM sqlite_master WHERE type IN ('table', 'index') AND sql IS NOT NULL`); err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.Type+" "+r.Name] = r.SQL
	}
	return out, nil
}

// ContentSums are the CRC-32s (IEEE) of files of an index version's
// content directory, by file name, each taken of the bytes written to
// the file as they were written.
type ContentSums map[string]uint32

// checkStreams checks the content directory of the index at path against
// its segment list (OpenStreams: every segment there with its size), the
// content's size against the database's record of it, and the content's
// CRC-32, combined from the segments' in sums, against the one the list
// records.
func checkStreams(path string, allBytes int64, sums ContentSums) error {
	content, gz, err := OpenStreams(path)
	if err != nil {
		return fmt.Errorf("content: %w", err)
	}
	defer content.Close()
	defer gz.Close()
	if content.Size() != allBytes {
		return fmt.Errorf("content: %d bytes, the database records %d", content.Size(), allBytes)
	}
	m, err := readManifest(ContentDir(path))
	if err != nil {
		return fmt.Errorf("content: %w", err)
	}
	var crc uint32
	for _, s := range m.Segments {
		c, ok := sums[s.Content]
		if !ok {
			return fmt.Errorf("content: segment %s has no CRC-32 taken as it was written", s.Content)
		}
		crc = crc32Combine(crc, c, s.Size)
	}
	if crc != m.CRC {
		return fmt.Errorf("content: CRC-32 %08x, its segment list records %08x", crc, m.CRC)
	}
	return nil
}

// ContentFiles lists the names of the files of the content directory of
// the index at path: its segment list and every segment file it names,
// sorted. It is what a prebuilt index carries besides the database.
func ContentFiles(path string) ([]string, error) {
	m, err := readManifest(ContentDir(path))
	if err != nil {
		return nil, err
	}
	names := []string{manifestName}
	for _, s := range m.Segments {
		names = append(names, s.Content, s.Gzip)
	}
	slices.Sort(names)
	return names, nil
}
