package diskspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// makeBallast makes the ballast file at path, size bytes of allocated
// blocks (fallocate(2), or zeros written where the filesystem has no
// fallocate), synced so that it holds its room after a crash. A file cut
// short is removed.
func makeBallast(path string, size uint64) (err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("diskspace: ballast: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("diskspace: ballast: %w", cerr)
		}
		if err != nil {
			_ = os.Remove(path)
		}
	}()
	if err := allocate(f, int64(size)); err != nil {
		return fmt.Errorf("diskspace: ballast: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("diskspace: ballast: %w", err)
	}
	return nil
}

// writeZeros fills f with size zero bytes, where fallocate is missing.
func writeZeros(f *os.File, size int64) error {
	buf := make([]byte, 1<<20)
	for size > 0 {
		n := min(size, int64(len(buf)))
		if _, err := f.Write(buf[:n]); err != nil {
			return err
		}
		size -= n
	}
	return nil
}

// removeBallast removes the ballast file; one already gone is no error.
func removeBallast(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("diskspace: ballast: %w", err)
	}
	return nil
}

// hasBallast reports whether the ballast file at path is whole: size
// bytes long.
func hasBallast(path string, size uint64) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && uint64(fi.Size()) == size
}
