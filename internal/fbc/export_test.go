package fbc

// acquire reserves a whole blob of n bytes at once (see reserve).
func (b *byteBudget) acquire(file int, n int64) bool {
	ok := b.reserve(file, n)
	b.settle(file, n)
	return ok
}
