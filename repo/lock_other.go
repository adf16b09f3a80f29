//go:build !unix

package repo

import "errors"

// Lock is not supported on this platform: wats daemons run on Unix (their
// control API is a Unix socket with file permissions, docs/design.md §12).
func (r *Repo) Lock() (release func() error, err error) {
	return nil, errors.New("repo: lock: not supported on this platform")
}

// RLock is not supported on this platform (Lock).
func (r *Repo) RLock() (release func() error, err error) {
	return nil, errors.New("repo: lock: not supported on this platform")
}

// LockHolder is not supported on this platform (Lock).
func LockHolder(dir string) (pid int, held bool, err error) {
	return 0, false, errors.New("repo: lock: not supported on this platform")
}
