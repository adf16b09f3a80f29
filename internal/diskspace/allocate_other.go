//go:build !linux

package diskspace

import "os"

// allocate writes size zero bytes to f.
func allocate(f *os.File, size int64) error { return writeZeros(f, size) }
