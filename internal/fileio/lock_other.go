//go:build !unix

package fileio

import (
	"errors"
	"os"
)

// lock is not supported here: no leftover is ever taken for abandoned.
func lock(f *os.File, nowait bool) error {
	if nowait {
		return errors.New("fileio: no file locks on this system")
	}
	return nil
}
