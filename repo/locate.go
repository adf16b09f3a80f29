package repo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// SocketPathOf returns the control socket of the repo in dir, as
// SocketPath gives it, without reading the repo's key or config: for the
// clients of a daemon, which need only its socket, so that a config.toml
// edited while the daemon runs, and broken, does not stop them. It spells
// dir as Open does (absolute, symlinks resolved), so that the daemon and
// its clients agree on the path. It returns ErrNotInitialized (bare, for
// errors.Is) when dir does not exist, is not a directory or has neither
// config.toml nor identity.key.
func SocketPathOf(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("repo %s: %w", dir, err)
	}
	fi, err := os.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) || err == nil && !fi.IsDir() {
		return "", ErrNotInitialized
	}
	if err != nil {
		return "", err
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return "", err
	}
	r := &Repo{Dir: abs}
	_, cfgErr := os.Lstat(r.ConfigPath())
	_, keyErr := os.Lstat(r.KeyPath())
	if errors.Is(cfgErr, fs.ErrNotExist) && errors.Is(keyErr, fs.ErrNotExist) {
		return "", ErrNotInitialized
	}
	return r.SocketPath(), nil
}
