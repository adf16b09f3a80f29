//go:build unix

package fileio

import (
	"errors"
	"os"
	"syscall"
)

// lock takes an exclusive flock(2) on f, without waiting if nowait.
func lock(f *os.File, nowait bool) error {
	how := syscall.LOCK_EX
	if nowait {
		how |= syscall.LOCK_NB
	}
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
