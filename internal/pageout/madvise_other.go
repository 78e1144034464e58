//go:build !linux

package pageout

func pageOut(uint64, uint64) error { return ErrUnsupported }

func readAlone(uint64, uint64) error { return ErrUnsupported }

func dropCache(string) error { return ErrUnsupported }
