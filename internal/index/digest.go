package index

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"

	"github.com/catalogd/catalogd/internal/declcfg"
)

// A package's digest (packages.digest) identifies its content, so that a
// client, or a later build, can tell whether a package changed between two
// versions of a catalog without comparing the packages themselves.
//
// It covers every blob that belongs to the package: its olm.package blob
// (whose name is the package) and every blob, of any schema, whose package
// is the package: olm.channel, olm.bundle, olm.deprecations and custom
// schemas alike. Blobs that name no package belong to none and are covered
// by the catalog's digest only. Each blob is hashed over its schema, its
// name and its bytes as the index stores them, which package fbc has made
// canonical (keys sorted, no insignificant space; JSON and YAML give the
// same bytes); the package's digest is a sha256 over its blobs' hashes in
// sorted order. So equal content gives equal digests whatever the files'
// layout, format or order, and a repeated blob counts each time it appears.
//
// Validation problems and the positions they quote are not covered: they
// follow from the blobs, but name files and lines, which a new layout
// changes without changing the package.

// digestPrefix names the hash of a package digest.
const digestPrefix = "sha256:"

// packageOf is the package a blob belongs to, "" for none.
func packageOf(m *declcfg.Meta) string {
	if m.Schema == declcfg.SchemaPackage {
		return m.Name
	}
	return m.Package
}

// blobHash is the hash of one blob that a package digest sorts and hashes.
func blobHash(m *declcfg.Meta) []byte {
	h := sha256.New()
	h.Write([]byte(m.Schema))
	h.Write([]byte{0})
	h.Write([]byte(m.Name))
	h.Write([]byte{0})
	h.Write(m.Blob)
	return h.Sum(nil)
}

// readDigestQuery reads a package's blob hashes in sorted order, which is
// the order of the work table's key.
const readDigestQuery = `SELECT hash FROM work_digests WHERE package = ? ORDER BY hash, blob_id`

// packageDigest computes the digest of a package from the hashes the walk
// noted.
func (l *loader) packageDigest(ctx context.Context, pkg string) (string, error) {
	h := sha256.New()
	err := l.each(ctx, readDigestQuery, pkg, func(rows *sql.Rows) error {
		var blob []byte
		if err := rows.Scan(&blob); err != nil {
			return err
		}
		h.Write(blob)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("digest of package %q: %w", pkg, err)
	}
	return digestPrefix + hex.EncodeToString(h.Sum(nil)), nil
}
