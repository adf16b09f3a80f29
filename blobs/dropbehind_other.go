//go:build !linux

package blobs

// newFileCache returns nil: elsewhere than Linux a fetch's data file does
// not drop behind (ADR 0053, addendum).
func newFileCache(uintptr) pageCache { return nil }
