package index

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"sort"

	"github.com/jmoiron/sqlx"

	"github.com/catalogd/catalogd/internal/declcfg"
	"github.com/catalogd/catalogd/internal/fbc"
)

// Big blobs: an incremental build's unit is the file (incremental.go), but
// a changed file may hold blobs of many MB that did not change, a bundle
// carrying its CRDs, say: the catalog of CRD objects of make bench has
// bundles of about 8 MB in files of up to 275 MB, and adding a blob to
// such a file made it parsed, checked and compressed again in full. So a
// blob of at least bigBlobBytes once made canonical is a unit of its own:
// it has a piece of the gzip copy to itself (see gzipSegment), in every
// build, and a row in big_blobs with what the build found in it alone. An
// incremental build looks each big blob of a file it parses up among the
// previous index's, by schema, package, name and length, and compares
// its canonical bytes with the previous content's; one it finds there,
// byte for byte, is not decoded (fbc.FileHooks's Known) and is taken from
// the previous index: its bytes and its piece of the gzip copy copied, its
// rows copied from the previous one's, its bundle's verdict and its hash
// in the package digest carried (addKnown). Making a blob canonical and
// comparing it costs a small part of what decoding, checking and
// compressing it cost (and a third of hashing it), and equal canonical
// bytes decode to equal values.
//
// Blobs of the schemas finish reads back (package, channel, deprecations:
// readBack) are always decoded: their rows are written as they are read.

// bigBlobBytes is the size, in canonical bytes, from which a blob is a
// unit of its own. Below it, cutting the gzip copy would cost compression
// (back-references between blobs) and the reuse would save little; the
// bench catalog's bundles (5.5 KB objects) stay well under it, the CRD
// catalog's (2 MB of base64 per CRD) far above. A variable so that tests
// make small blobs big.
var bigBlobBytes int64 = 256 << 10

// knownBlob is a big blob of the previous index that a changed file may
// hold again: what a build needs to take it over without decoding it.
type knownBlob struct {
	id                   int64
	schema, pkg, name    string
	offset, length       int64
	digest               []byte
	problems             *string
	gz                   gzipSegment
	bundle               int64
	bundleName           string
	version, release, im string
}

// knownBlobsQuery reads the previous index's big blobs, with their rows
// and their bundles' where they have one.
const knownBlobsQuery = `SELECT g.blob_id, g.digest, g.problems, g.bundle_id, g.gzip_start, g.gzip_length, g.gzip_crc,
	b.schema, b.package, b.name, b.offset, b.length, n.name, n.version, n.release, n.image
	FROM big_blobs g JOIN blobs b ON b.id = g.blob_id LEFT JOIN bundles n ON n.id = g.bundle_id ORDER BY g.blob_id`

// knownKey is what a big blob is looked up by, before its bytes are
// compared.
type knownKey struct {
	schema, pkg, name string
	length            int64
}

// readKnownBlobs reads the big blobs of the previous index a build can
// take over, old being its files: those of a schema finish does not read
// back, bundles only where the previous build kept the bundle (a repeated
// name's parts are removed).
func readKnownBlobs(ctx context.Context, db *sqlx.DB, old []fileRecord) (map[knownKey][]*knownBlob, error) {
	rows, err := db.QueryxContext(ctx, knownBlobsQuery)
	if err != nil {
		return nil, fallback("previous index unreadable: %v", err)
	}
	out := map[knownKey][]*knownBlob{}
	err = eachRow(rows, func(rows *sqlx.Rows) error {
		var k knownBlob
		var start, crc int64
		var bundle sql.NullInt64
		var problems, bundleName, version, release, image sql.NullString
		if err := rows.Scan(&k.id, &k.digest, &problems, &bundle, &start, &k.gz.length, &crc,
			&k.schema, &k.pkg, &k.name, &k.offset, &k.length, &bundleName, &version, &release, &image); err != nil {
			return err
		}
		if len(k.digest) != sha256.Size {
			return fallback("previous index inconsistent: big blob %d has a hash of %d bytes", k.id, len(k.digest))
		}
		if bundle.Valid != problems.Valid || (k.schema == declcfg.SchemaBundle) != bundle.Valid {
			return fallback("previous index inconsistent: big blob %d of schema %s, bundle %v", k.id, k.schema, bundle.Valid)
		}
		if readBack(k.schema) || (bundle.Valid && !bundleName.Valid) {
			return nil
		}
		k.bundle, k.bundleName, k.version, k.release, k.im = bundle.Int64, bundleName.String, version.String, release.String, image.String
		if problems.Valid {
			k.problems = &problems.String
		}
		// Its piece lies in its file's, which lies in the gzip copy
		// (checkPrevious).
		i := sort.Search(len(old), func(i int) bool { return old[i].firstBlob+old[i].blobs > k.id })
		if i == len(old) || k.id < old[i].firstBlob {
			return fallback("previous index inconsistent: big blob %d in no file", k.id)
		}
		f := old[i]
		if start < 0 || k.gz.length <= 0 || start+k.gz.length > f.gz.length ||
			k.offset < f.contentOffset || k.offset+k.length > f.contentOffset+f.contentLength {
			return fallback("previous index inconsistent: big blob %d lies outside its file %s", k.id, f.path)
		}
		k.gz.offset, k.gz.crc, k.gz.size = f.gz.offset+start, uint32(crc), k.length
		key := knownKey{k.schema, k.pkg, k.name, k.length}
		out[key] = append(out[key], &k)
		return nil
	})
	if err != nil {
		if _, ok := err.(*fallbackError); ok {
			return nil, err
		}
		return nil, fallback("previous index unreadable: %v", err)
	}
	return out, nil
}

// knownHook is the walk's fbc.FileHooks.Known for an incremental build
// along p: it finds big blobs the previous index holds, byte for byte.
func (p *plan) knownHook(m *declcfg.Meta) any {
	if int64(len(m.Blob)) < bigBlobBytes {
		return nil
	}
	for _, k := range p.big[knownKey{m.Schema, m.Package, m.Name, int64(len(m.Blob))}] {
		if p.holds(k.offset, m.Blob) {
			return k
		}
	}
	return nil
}

// compareChunk is how much of the previous content holds compares at a
// time.
const compareChunk = 256 << 10

// holds says whether the previous content holds blob at offset. A read
// that fails says no: the blob is then decoded, as if it were new.
func (p *plan) holds(offset int64, blob []byte) bool {
	if p.compare == nil {
		p.compare = make([]byte, compareChunk)
	}
	buf := p.compare[:min(compareChunk, len(blob))]
	for done := 0; done < len(blob); {
		n := min(len(buf), len(blob)-done)
		if _, err := p.content.ReadAt(buf[:n], offset+int64(done)); err != nil || !bytes.Equal(buf[:n], blob[done:done+n]) {
			return false
		}
		done += n
	}
	return true
}

// addKnown stores a big blob the previous index holds, k, as add would
// have stored it: its bytes and its piece of the gzip copy copied (unless
// its file is copied whole, skipWrite), its rows made from the previous
// index's, its bundle's verdict carried.
func (l *loader) addKnown(ctx context.Context, b fbc.Blob, k *knownBlob) error {
	blobID := int64(l.stats.Blobs) + 1
	if !l.skipWrite {
		if err := l.endUnit(0); err != nil {
			return err
		}
		if err := l.content.Flush(); err != nil {
			return fmt.Errorf("write content file: %w", fileError(err))
		}
		if err := l.copyContent(k.offset, k.length); err != nil {
			return err
		}
	}
	if err := l.insert(ctx, "blobs", blobID, k.schema, k.pkg, k.name, l.written, k.length); err != nil {
		return fmt.Errorf("store blob %s %q: %w", k.schema, k.name, err)
	}
	l.written += k.length
	if k.pkg != "" {
		if err := l.insert(ctx, "work_digests", k.pkg, k.digest, blobID); err != nil {
			return fmt.Errorf("store blob %s %q: %w", k.schema, k.name, err)
		}
	}
	l.stats.Blobs++
	l.stats.Schemas[k.schema]++
	l.stats.AllBytes += k.length
	l.reused++
	bb := bigBlob{id: blobID, digest: k.digest, problems: k.problems}
	if k.bundle != 0 {
		l.pkg(k.pkg)
		l.bundleID++
		bb.bundle = l.bundleID
		if err := l.insert(ctx, "work_bundles", k.pkg, l.bundleID, blobID, k.bundleName, k.version, k.release, k.im, *k.problems, b.Pos.String()); err != nil {
			return fmt.Errorf("index bundle %q: %w", k.bundleName, err)
		}
		if l.plan.keep {
			if err := l.claim(ctx, bundleIDs, 0); err != nil {
				return err
			}
		}
		moved := map[string]any{"bundle": l.bundleID - k.bundle, "n1": k.bundle, "n2": k.bundle}
		for _, q := range bundlePartsQueries {
			if _, err := l.tx.NamedExecContext(ctx, q, moved); err != nil {
				return fmt.Errorf("copy parts of bundle %q: %w", k.bundleName, err)
			}
		}
	}
	if l.skipWrite {
		return nil
	}
	l.gz.endSegment(segmentSource{size: k.length, from: l.plan.gz, seg: k.gz, blob: blobID}, l.written)
	l.unitStart = l.written
	l.big = append(l.big, bb)
	return nil
}

// copyBigBlobsQuery copies the big_blobs rows of a range of blobs of
// unchanged files (:b1 to :b2), whose pieces are where they were in their
// files, ids moved by :blob and :bundle.
const copyBigBlobsQuery = `INSERT INTO big_blobs (blob_id, digest, problems, bundle_id, gzip_start, gzip_length, gzip_crc)
	SELECT blob_id + :blob, digest, problems, bundle_id + :bundle, gzip_start, gzip_length, gzip_crc
	FROM prev.big_blobs WHERE blob_id BETWEEN :b1 AND :b2 ORDER BY blob_id`

// insertBigBlobQuery records one big blob.
const insertBigBlobQuery = `INSERT INTO big_blobs (blob_id, digest, problems, bundle_id, gzip_start, gzip_length, gzip_crc)
	VALUES (?, ?, ?, ?, ?, ?, ?)`

// writeBigBlobs records the big blobs written outside unchanged files,
// big, with their pieces of the gzip copy, pieces, placed in the files
// that hold them, records and segments (see writeFiles).
func writeBigBlobs(ctx context.Context, tx *sqlx.Tx, big []bigBlob, pieces []blobPiece, records []fileRecord, segments []gzipSegment) error {
	if len(pieces) != len(big) {
		return fmt.Errorf("record big blobs: %d, %d pieces of the gzip copy", len(big), len(pieces))
	}
	stmt, err := tx.PrepareContext(ctx, insertBigBlobQuery)
	if err != nil {
		return fmt.Errorf("record big blobs: %w", err)
	}
	defer stmt.Close()
	f := 0
	for i, b := range big {
		p := pieces[i]
		for f < len(records) && records[f].firstBlob+records[f].blobs <= b.id {
			f++
		}
		if p.blob != b.id || f == len(records) || b.id < records[f].firstBlob {
			return fmt.Errorf("record big blob %d: its piece of the gzip copy is blob %d's", b.id, p.blob)
		}
		var bundle any
		if b.bundle != 0 {
			bundle = b.bundle
		}
		if _, err := stmt.ExecContext(ctx, b.id, b.digest, b.problems, bundle, p.seg.offset-segments[f].offset, p.seg.length, int64(p.seg.crc)); err != nil {
			return fmt.Errorf("record big blob %d: %w", b.id, err)
		}
	}
	return nil
}
