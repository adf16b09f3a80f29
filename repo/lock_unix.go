//go:build unix

package repo

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Lock takes the repo lock: an exclusive, non-blocking flock(2) on
// <Dir>/repo.lock, which it creates (mode 0600) if needed, and writes the
// process id into the file. A daemon holds it for its lifetime, so one repo
// has at most one daemon; Init holds it while it writes.
//
// If another open file holds the lock (another process, or another Lock in
// this one), Lock returns a *LockedError (errors.Is ErrLocked) with the pid
// read from the file: "repo: DIR is in use by another wats daemon (pid N)".
//
// release unlocks and closes the file; it is safe to call more than once.
// The file stays (removing a flock'ed file races with the next locker); the
// lock dies with the process, so a crash leaves no stale lock.
func (r *Repo) Lock() (release func() error, err error) {
	f, err := os.OpenFile(r.LockPath(), os.O_RDWR|os.O_CREATE, FileMode)
	if err != nil {
		return nil, fmt.Errorf("repo: lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		pid := readPID(f)
		f.Close()
		return nil, &LockedError{Dir: r.Dir, PID: pid}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("repo: lock %s: %w", r.LockPath(), err)
	}
	if err := writePID(f); err != nil {
		f.Close() // closing drops the lock
		return nil, fmt.Errorf("repo: lock %s: write pid: %w", r.LockPath(), err)
	}
	var once sync.Once
	var relErr error
	return func() error {
		once.Do(func() {
			// Clear the pid while still holding the lock, then unlock.
			f.Truncate(0)
			relErr = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			if err := f.Close(); relErr == nil {
				relErr = err
			}
			if relErr != nil {
				relErr = fmt.Errorf("repo: unlock %s: %w", r.LockPath(), relErr)
			}
		})
		return relErr
	}, nil
}

// maxPIDBytes bounds what is read from a lock file: a pid and a newline.
const maxPIDBytes = 32

// readPID returns the pid written in the lock file f, or 0.
func readPID(f *os.File) int {
	buf := make([]byte, maxPIDBytes)
	n, _ := f.ReadAt(buf, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// writePID replaces the content of f with this process's id.
func writePID(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return err
}
