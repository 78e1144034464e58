//go:build !linux

package prebuilt

import "os"

// reserve leaves allocation to the writes where fallocate is not there.
func reserve(*os.File, int64) {}
