package index

import "testing"

// withBigBlobBytes makes blobs of size canonical bytes or more big (see
// bigBlobBytes) for the rest of the test, so that small catalogs have
// big blobs.
func withBigBlobBytes(t testing.TB, size int64) {
	old := bigBlobBytes
	bigBlobBytes = size
	t.Cleanup(func() { bigBlobBytes = old })
}
