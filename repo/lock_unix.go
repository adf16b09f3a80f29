//go:build unix

package repo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Lock takes the repo lock: an exclusive flock(2) on <Dir>/repo.lock,
// which it creates (mode 0600) if needed, and writes the process id into
// the file. A daemon holds it for its lifetime, so one repo has at most one
// daemon; Init holds it while it writes.
//
// Readers of the database without a daemon (RLock) hold the same lock for
// the milliseconds of a read: Lock waits for them, up to LockWait, so that
// a daemon starting while a monitoring script runs `wats events ls` in a
// loop starts. If another daemon holds it (a live process whose id is in
// the file), or readers still do after LockWait, Lock returns a
// *LockedError (errors.Is ErrLocked) with the pid read from the file:
// "repo: DIR is in use by another wats daemon (pid N)".
//
// release unlocks and closes the file; it is safe to call more than once.
// The file stays (removing a flock'ed file races with the next locker); the
// lock dies with the process, so a crash leaves no stale lock.
func (r *Repo) Lock() (release func() error, err error) {
	f, err := r.lockWaiting()
	if err != nil {
		return nil, err
	}
	if err := writePID(f); err != nil {
		f.Close() // closing drops the lock
		return nil, fmt.Errorf("repo: lock %s: write pid: %w", r.LockPath(), err)
	}
	return releaser(f, true), nil
}

// LockWait bounds how long Lock and RLock wait for readers to finish.
const LockWait = 10 * time.Second

// RLock takes the repo lock for a reader of the database while no daemon
// runs (store.OpenOffline), writing no pid. Readers take it one at a time,
// as pebble admits one opener of a database, read-only or not: RLock waits
// for another reader, up to LockWait, as a starting daemon does (Lock). If
// a daemon holds it (running, or starting), RLock returns a *LockedError
// with its pid at once.
func (r *Repo) RLock() (release func() error, err error) {
	f, err := r.lockWaiting()
	if err != nil {
		return nil, err
	}
	return releaser(f, false), nil
}

// LockHolder reports whether a process holds the lock of the repo in
// dir (repo.lock): a daemon, running or shutting down, or a reader for the
// milliseconds of a read; pid is the process id the file holds (0: none,
// as a reader writes none). It keeps no lock: it tries a shared flock(2)
// without waiting and drops it at once, so a daemon starting meanwhile at
// most waits as it does for a reader (Lock). A repo without a lock file
// is not held. `wats shutdown` watches it to know when a daemon has
// stopped (docs/adr/0051, addendum).
func LockHolder(dir string) (pid int, held bool, err error) {
	f, err := os.Open(filepath.Join(dir, LockFile))
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("repo: lock: %w", err)
	}
	defer f.Close()
	switch err := flock(f, syscall.LOCK_SH|syscall.LOCK_NB); {
	case errors.Is(err, syscall.EWOULDBLOCK):
		return readPID(f), true, nil
	case err != nil:
		return 0, false, fmt.Errorf("repo: lock %s: %w", f.Name(), err)
	}
	return 0, false, nil // closing f drops the shared lock
}

// lockWaiting takes repo.lock exclusive, waiting up to LockWait while
// readers hold it (no live pid in the file); a holder whose pid is alive is
// a daemon, and a *LockedError at once.
func (r *Repo) lockWaiting() (*os.File, error) {
	f, err := os.OpenFile(r.LockPath(), os.O_RDWR|os.O_CREATE, FileMode)
	if err != nil {
		return nil, fmt.Errorf("repo: lock: %w", err)
	}
	pause := time.Millisecond
	for deadline := time.Now().Add(LockWait); ; {
		err = flock(f, syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			break
		}
		pid := readPID(f)
		if pid > 0 && alive(pid) || time.Now().After(deadline) {
			f.Close()
			return nil, &LockedError{Dir: r.Dir, PID: pid}
		}
		time.Sleep(pause) // readers hold it for milliseconds
		pause = min(2*pause, 10*time.Millisecond)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("repo: lock %s: %w", r.LockPath(), err)
	}
	return f, nil
}

// flock is flock(2) on f, again on EINTR.
func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// alive reports whether a process pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// releaser unlocks and closes f once; an exclusive holder clears the pid
// it wrote first, while still holding the lock.
func releaser(f *os.File, exclusive bool) func() error {
	var once sync.Once
	var relErr error
	return func() error {
		once.Do(func() {
			if exclusive {
				f.Truncate(0)
			}
			relErr = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			if err := f.Close(); relErr == nil {
				relErr = err
			}
			if relErr != nil {
				relErr = fmt.Errorf("repo: unlock %s: %w", f.Name(), relErr)
			}
		})
		return relErr
	}
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
