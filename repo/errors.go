package repo

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors, for errors.Is. The errors returned carry the directory
// and a hint; see Error and LockedError.
var (
	// ErrNotInitialized: the directory holds no repo (neither config.toml
	// nor identity.key), or does not exist.
	ErrNotInitialized = errors.New("repo: not initialized")
	// ErrAlreadyInitialized: Init without Force on a directory that holds a
	// repo (config.toml, identity.key or db/).
	ErrAlreadyInitialized = errors.New("repo: already initialized")
	// ErrNotEmpty: Init on a directory that holds files that are not a
	// repo's; Init never mixes a repo with other files.
	ErrNotEmpty = errors.New("repo: directory not empty")
	// ErrBadKey: identity.key is missing, unreadable, not a libp2p private
	// key, or not Ed25519 (docs/design.md §3).
	ErrBadKey = errors.New("repo: bad identity key")
	// ErrKeyPermissions: identity.key is accessible by group or others. Like
	// ssh with its keys, Open refuses it rather than use a key others may
	// have copied.
	ErrKeyPermissions = errors.New("repo: identity key not private")
	// ErrIncomplete: the repo lacks config.toml.
	ErrIncomplete = errors.New("repo: incomplete")
	// ErrLocked: another process (a running daemon) holds repo.lock.
	ErrLocked = errors.New("repo: locked")
)

// Error is a problem with the repo at Dir, of kind Kind (one of the
// sentinels above); Msg is the full message, with a hint when there is one.
type Error struct {
	Dir  string
	Kind error
	Msg  string
	Err  error // the underlying error, or nil
}

func (e *Error) Error() string { return e.Msg }

// Is reports whether target is e's Kind.
func (e *Error) Is(target error) bool { return target == e.Kind }

// Unwrap returns the underlying error, or nil.
func (e *Error) Unwrap() error { return e.Err }

// LockedError is ErrLocked with the directory and the process id written in
// repo.lock by the holder (0 when it could not be read).
type LockedError struct {
	Dir string
	PID int
}

func (e *LockedError) Error() string {
	pid := "pid unknown"
	if e.PID > 0 {
		pid = fmt.Sprintf("pid %d", e.PID)
	}
	return fmt.Sprintf("repo: %s is in use by another wats daemon (%s)", e.Dir, pid)
}

// Is reports whether target is ErrLocked.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

func newError(dir string, kind, err error, format string, args ...any) *Error {
	return &Error{Dir: dir, Kind: kind, Err: err, Msg: "repo: " + fmt.Sprintf(format, args...)}
}

// notInitialized is the ErrNotInitialized error for dir, with the command
// that makes a repo there.
func notInitialized(dir string) *Error {
	return newError(dir, ErrNotInitialized, nil, "no wats repo at %s; run `wats init --repo %s`", dir, shellQuote(dir))
}

// shellQuote quotes s for a POSIX shell if it needs it, so that hints can be
// pasted as they are.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+,:@%=", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
