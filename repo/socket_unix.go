//go:build unix

package repo

import (
	"fmt"
	"os"
	"syscall"
)

// ownerUID returns the uid of the owner of path, or this process's uid if
// it cannot be read.
func ownerUID(path string) int {
	fi, err := os.Stat(path)
	if err != nil {
		return os.Getuid()
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return os.Getuid()
}

// checkPrivateDir checks that dir is a real directory (not a symlink), owned
// by this process's user and closed to group and others.
func checkPrivateDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("repo: socket directory: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("repo: socket directory %s is not a directory; remove it", dir)
	case !ok || int(st.Uid) != os.Getuid():
		return fmt.Errorf("repo: socket directory %s belongs to another user; remove it or set TMPDIR", dir)
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("repo: socket directory %s is open to others (mode %04o); remove it", dir, fi.Mode().Perm())
	}
	return nil
}
