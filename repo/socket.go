package repo

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// MaxSocketPathLen is the longest Unix socket path, in bytes, that SocketPath
// puts in the repo. sun_path holds 108 bytes on Linux and 104 on macOS and
// the BSDs, the terminating NUL included; 103 fits on all of them.
const MaxSocketPathLen = 103

// SocketPath returns the path of the daemon's control socket (docs/design.md §12).
// The daemon listens there and clients dial it; both compute it from Dir
// alone, so they agree without talking.
//
// It is <Dir>/api.sock when that is at most MaxSocketPathLen bytes. A
// longer path would not fit in a sockaddr_un, so then it is
//
//	<os.TempDir()>/wats-<uid>/<hex of the first 12 bytes of SHA-256(Dir)>.sock
//
// where uid is the owner of Dir (so a client run as another user, e.g.
// root, still finds it). Dir must be as Open and Init set it (absolute,
// symlinks resolved): two spellings of one directory would hash apart.
// The fallback also needs the daemon and its clients to see the same
// os.TempDir() ($TMPDIR); the daemon makes its directory private with
// PrepareSocket.
func (r *Repo) SocketPath() string {
	if p := filepath.Join(r.Dir, SocketFile); len(p) <= MaxSocketPathLen {
		return p
	}
	return fallbackSocketPath(r.Dir)
}

// fallbackSocketPath is SocketPath for a repo whose own socket path is too
// long.
func fallbackSocketPath(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return filepath.Join(socketDirFor(dir), hex.EncodeToString(sum[:12])+".sock")
}

// socketDirFor is the private directory of fallback sockets for the repo
// dir: <os.TempDir()>/wats-<owner uid of dir>.
func socketDirFor(dir string) string {
	return filepath.Join(os.TempDir(), "wats-"+strconv.Itoa(ownerUID(dir)))
}

// PrepareSocket readies SocketPath for the daemon to listen on, and returns
// it. For a fallback path it creates the parent directory with mode 0700
// and refuses one that is a symlink, not owned by this user or open to
// others (another user could otherwise squat or spy on the socket). It
// removes a stale socket left by a daemon that died, and refuses to remove
// anything else. It fails if the path is still too long (a long $TMPDIR).
//
// REQUIRES: the caller holds the repo lock (Lock), so no live daemon owns
// the socket it removes.
func (r *Repo) PrepareSocket() (string, error) {
	p := r.SocketPath()
	if len(p) > MaxSocketPathLen {
		return "", fmt.Errorf("repo: socket path %s is %d bytes, over the %d-byte limit of Unix sockets; set TMPDIR to a shorter directory",
			p, len(p), MaxSocketPathLen)
	}
	if parent := filepath.Dir(p); parent != r.Dir {
		if err := os.Mkdir(parent, DirMode); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("repo: socket directory: %w", err)
		}
		if err := checkPrivateDir(parent); err != nil {
			return "", err
		}
	}
	fi, err := os.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return p, nil
	case err != nil:
		return "", fmt.Errorf("repo: socket: %w", err)
	case fi.Mode()&fs.ModeSocket == 0:
		return "", fmt.Errorf("repo: %s exists and is not a socket; move it away", p)
	}
	if err := os.Remove(p); err != nil {
		return "", fmt.Errorf("repo: remove stale socket: %w", err)
	}
	return p, nil
}
