package index

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/catalogd/catalogd/test/fbcchange"
	"github.com/catalogd/catalogd/test/fbcgen"
)

// TestIncrementalBigBlobsMatchFull is the differential test on a catalog
// whose bundles carry CRDs (made big by a small bigBlobBytes), reshaped
// as TestIncrementalMatchesFull's: random edits inside files of big blobs
// leave most of them unchanged, to be taken from the previous index,
// which must give a full build's rows, content and gzip copy.
func TestIncrementalBigBlobsMatchFull(t *testing.T) {
	steps := 16
	if s := os.Getenv("CATALOGD_INCREMENTAL_STEPS"); s != "" {
		fmt.Sscan(s, &steps)
	}
	withSegmentSize(t, 64<<10)
	withBigBlobBytes(t, 4<<10)
	dir := reshaped(t, fbcgen.Options{Packages: 8, Bundles: 40, BundleObjectBytes: 200, CRDObjectBytes: 5000, Seed: 9}, 3)
	n, reused := differential(t, dir, 3, steps)
	if n < steps/2 {
		t.Errorf("%d of %d builds incremental", n, steps)
	}
	if reused == 0 {
		t.Errorf("no build took a big blob from the previous index")
	}
}

// TestIncrementalReusesBigBlobs: after an edit of a file of big blobs, an
// incremental build decodes and compresses only what the edit changed.
// It takes every other big blob of the file from the previous index
// (Stats.Work.BlobsReused), compresses the rest of the file's bytes alone
// (Stats.Work.CompressedBytes), and gives a full build's index.
func TestIncrementalReusesBigBlobs(t *testing.T) {
	withBigBlobBytes(t, 8<<10)
	src := generated(t, fbcgen.Options{Packages: 3, Bundles: 24, BundleObjectBytes: 200, CRDObjectBytes: 12_000, Seed: 4})
	tests := []struct {
		name string
		edit func(t *testing.T, m *fbcchange.Model, rng *rand.Rand)
		// edited counts the big blobs of the changed file the edit
		// changed.
		edited int
	}{
		{"a blob appended", func(t *testing.T, m *fbcchange.Model, _ *rand.Rand) {
			m.AppendBlob(m.Paths()[0], "test.edit", "appended")
		}, 0},
		{"a bundle's image changed", func(t *testing.T, m *fbcchange.Model, rng *rand.Rand) {
			m.Edit(t, rng, "change a bundle's image", 1)
		}, 1},
		{"a bundle's blob removed", func(t *testing.T, m *fbcchange.Model, rng *rand.Rand) {
			m.Edit(t, rng, "remove a bundle's blob", 1)
		}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			work, dir, prev := copyCatalog(t, src)
			m := fbcchange.ReadModel(t, dir)
			tc.edit(t, m, rand.New(rand.NewPCG(5, 5)))
			m.Write(t, dir)
			got, _, stats := incrementalMatchesFull(t, work, dir, prev)
			f := changedFile(t, prev, got)
			db := sqlx.MustOpen("sqlite", FileURI(got, nil))
			defer db.Close()
			var big, bigBytes int64
			if err := db.QueryRow(`SELECT count(*), coalesce(sum(length), 0) FROM blobs WHERE id BETWEEN ? AND ? AND length >= ?`,
				f.firstBlob, f.firstBlob+f.blobs-1, bigBlobBytes).Scan(&big, &bigBytes); err != nil {
				t.Fatal(err)
			}
			if big < 3 {
				t.Fatalf("the changed file %s holds %d big blobs", f.path, big)
			}
			if want := int(big) - tc.edited; stats.Work.BlobsReused != want {
				t.Errorf("%d blobs reused, want the %d big blobs of %s the edit left", stats.Work.BlobsReused, want, f.path)
			}
			// The reused blobs' bytes are copied; the edited blob's and the
			// small blobs' are compressed.
			var edited int64
			if tc.edited > 0 {
				prevDB := sqlx.MustOpen("sqlite", FileURI(prev, nil))
				defer prevDB.Close()
				edited = editedBigBytes(t, prevDB, db, f)
			}
			if want := f.contentLength - bigBytes + edited; stats.Work.CompressedBytes != want {
				t.Errorf("%d bytes compressed, want %d: the %d bytes of %s but its %d reused big blobs' %d",
					stats.Work.CompressedBytes, want, f.contentLength, f.path, int(big)-tc.edited, bigBytes-edited)
			}
		})
	}
}

// changedFile returns the record, in the index at got, of the one file
// whose hash differs from the index at prev's.
func changedFile(t *testing.T, prev, got string) fileRecord {
	t.Helper()
	read := func(path string) []fileRecord {
		db := sqlx.MustOpen("sqlite", FileURI(path, nil))
		defer db.Close()
		files, err := readFiles(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		return files
	}
	old := map[string][32]byte{}
	for _, f := range read(prev) {
		old[f.path] = f.sum
	}
	var changed []fileRecord
	for _, f := range read(got) {
		if old[f.path] != f.sum {
			changed = append(changed, f)
		}
	}
	if len(changed) != 1 {
		t.Fatalf("%d files changed, want 1", len(changed))
	}
	return changed[0]
}

// editedBigBytes returns the bytes of the big blobs of the file f of the
// index in db that the index in prevDB does not hold.
func editedBigBytes(t *testing.T, prevDB, db *sqlx.DB, f fileRecord) int64 {
	t.Helper()
	var old []string
	if err := prevDB.Select(&old, `SELECT hex(digest) FROM big_blobs`); err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, d := range old {
		known[d] = true
	}
	var rows []struct {
		Digest string `db:"digest"`
		Length int64  `db:"length"`
	}
	if err := db.Select(&rows, `SELECT hex(g.digest) AS digest, b.length FROM big_blobs g JOIN blobs b ON b.id = g.blob_id WHERE g.blob_id BETWEEN ? AND ?`,
		f.firstBlob, f.firstBlob+f.blobs-1); err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, r := range rows {
		if !known[r.Digest] {
			n += r.Length
		}
	}
	return n
}
