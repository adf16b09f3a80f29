package repo

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/bandwidth"
	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/internal/fileio"
)

// EnvPath is the environment variable that names the repo directory; without
// it the repo is ~/.wats (docs/design.md §11).
const EnvPath = "WATS_PATH"

// The names of the entries of a repo directory.
const (
	ConfigFile = "config.toml"  // the configuration, package config
	KeyFile    = "identity.key" // the node's Ed25519 key, mode 0600
	DBDir      = "db"           // the pebble database, created by the node
	SocketFile = "api.sock"     // the control socket, created by the daemon
	LockFile   = "repo.lock"    // flock'ed by a running daemon, holds its pid
	// BallastFile holds room on the repo's disk that the daemon gives
	// back to its database when the disk fills (docs/adr/0044); any
	// process may delete it to make room.
	BallastFile = "ballast"
	// AckedFile is the event log's acknowledged mark: its head and the
	// short ids of its newest events, written after each durable commit,
	// by which a start finds acknowledged events the database lost
	// (docs/adr/0045).
	AckedFile = "acked"
	// MovedAsideInfix follows DBDir in the name of a database that `repo
	// repair` moved aside: db.corrupt-<UTC time>.
	MovedAsideInfix = ".corrupt-"
)

// File modes of a repo (docs/design.md §12: repo dir 0700, socket 0600).
const (
	DirMode  fs.FileMode = 0o700
	KeyMode  fs.FileMode = 0o600
	FileMode fs.FileMode = 0o600 // config.toml and repo.lock
)

// Repo is an opened repo: its directory, its configuration and its identity
// key. Open and Init return it; it holds no open file, so there is nothing
// to close. A daemon also takes the lock (Lock).
type Repo struct {
	// Dir is the repo directory: absolute, cleaned, symlinks resolved, so
	// that every process computes the same SocketPath from it.
	Dir string
	// Config is the loaded and validated config.toml.
	Config *config.Config
	// Key is the node's Ed25519 identity (docs/design.md §3).
	Key crypto.PrivKey
}

// ConfigPath returns <Dir>/config.toml.
func (r *Repo) ConfigPath() string { return filepath.Join(r.Dir, ConfigFile) }

// KeyPath returns <Dir>/identity.key.
func (r *Repo) KeyPath() string { return filepath.Join(r.Dir, KeyFile) }

// DBPath returns <Dir>/db, the pebble directory; the node creates it.
func (r *Repo) DBPath() string { return filepath.Join(r.Dir, DBDir) }

// LockPath returns <Dir>/repo.lock.
func (r *Repo) LockPath() string { return filepath.Join(r.Dir, LockFile) }

// PeerID returns the peer ID of r's key: the node id (docs/design.md §3). It is ""
// only if r.Key is nil.
func PeerID(r *Repo) peer.ID {
	if r.Key == nil {
		return ""
	}
	id, err := peer.IDFromPrivateKey(r.Key)
	if err != nil {
		return "" // unreachable for the Ed25519 keys Open and Init return
	}
	return id
}

// DefaultPath returns the repo directory to use when none is given:
// $WATS_PATH if set and not empty, else ~/.wats.
func DefaultPath() (string, error) {
	if p := os.Getenv(EnvPath); p != "" {
		return p, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("repo: $%s is not set and there is no home directory: %w", EnvPath, err)
	}
	return filepath.Join(home, ".wats"), nil
}

// InitOptions are the options of Init; nil, or the zero value, is the
// defaults (a new repo of config.Default()).
type InitOptions struct {
	// Force replaces an existing repo: a new identity key and config.toml,
	// and its db/ wiped, since the database belongs to the old identity.
	Force bool
	// Config is written to config.toml (as config.Template); nil means
	// config.Default().
	Config *config.Config
}

// Init makes a repo in dir and returns it opened:
//
//   - dir is created with mode 0700 (parents too, if missing); an existing
//     dir is set to 0700;
//   - identity.key gets a new Ed25519 key (crypto.MarshalPrivateKey), mode
//     0600;
//   - config.toml gets config.Template(opts.Config), mode 0600.
//
// Files are written to a temporary name, synced and renamed, so a crash
// leaves either no file or a whole one.
//
// Init refuses, with an *Error:
//   - ErrAlreadyInitialized if dir holds a repo (config.toml, identity.key
//     or db/) and opts.Force is not set; the message mentions --force;
//   - ErrNotEmpty if dir holds anything but a repo's entries, Force or not:
//     Init does not mix a repo with other files (nor chmod a home directory);
//   - ErrLocked (a *LockedError) if a daemon runs on dir: Init holds the
//     lock while it writes.
//
// With opts.Force, Init deletes db/ first, then writes the key, then the
// config: a crash in between leaves the old key with an empty database,
// never the new key with the old database.
func Init(dir string, opts *InitOptions) (*Repo, error) {
	if opts == nil {
		opts = &InitOptions{}
	}
	cfg := opts.Config
	if cfg == nil {
		cfg = config.Default()
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("repo: init %s: %w", dir, err)
	}
	data := config.Template(cfg)
	parsed, err := config.Parse(data, ConfigFile)
	if err != nil {
		return nil, fmt.Errorf("repo: init %s: the config template does not parse: %w", dir, err)
	}

	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("repo: init %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, DirMode); err != nil {
		return nil, fmt.Errorf("repo: init: %w", err)
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return nil, fmt.Errorf("repo: init: %w", err)
	}
	if fi, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("repo: init: %w", err)
	} else if !fi.IsDir() {
		return nil, newError(abs, ErrNotEmpty, nil, "%s is not a directory", abs)
	}

	entries, err := os.ReadDir(abs)
	if err != nil {
		return nil, fmt.Errorf("repo: init: %w", err)
	}
	var held, foreign []string
	for _, e := range entries {
		switch name := e.Name(); {
		case name == ConfigFile || name == KeyFile || name == DBDir || name == AckedFile:
			held = append(held, name)
		case name == SocketFile || name == LockFile || fileio.IsTemp(name):
			// a temporary file of Init's writes, which a crash may leave
		case name == BallastFile || name == bandwidth.MonthFile || strings.HasPrefix(name, DBDir+MovedAsideInfix):
			// a daemon's or a repair's, which --force keeps: the room
			// held on the disk, the bytes sent this month (a cap of
			// the operator's link, not of the identity), a damaged
			// database moved aside
		default:
			foreign = append(foreign, name)
		}
	}
	if len(foreign) > 0 {
		return nil, newError(abs, ErrNotEmpty, nil,
			"%s is not empty and not a wats repo (it holds %s); choose a new or empty directory",
			abs, listNames(foreign))
	}
	if len(held) > 0 && !opts.Force {
		return nil, newError(abs, ErrAlreadyInitialized, nil,
			"%s already holds a wats repo (%s); use --force to replace its identity, config and database",
			abs, strings.Join(held, ", "))
	}
	if err := os.Chmod(abs, DirMode); err != nil {
		return nil, fmt.Errorf("repo: init: %w", err)
	}

	r := &Repo{Dir: abs, Config: parsed}
	release, err := r.Lock()
	if err != nil {
		return nil, err
	}
	defer release()

	if opts.Force {
		if err := os.RemoveAll(r.DBPath()); err != nil {
			return nil, fmt.Errorf("repo: init --force: delete the old database: %w", err)
		}
		// The old database's acknowledged mark: kept, the new database's
		// first start would count the old one's events as lost.
		if err := os.Remove(filepath.Join(abs, AckedFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("repo: init --force: delete the old database's %s: %w", AckedFile, err)
		}
	}
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("repo: init: generate key: %w", err)
	}
	keyBytes, err := crypto.MarshalPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("repo: init: marshal key: %w", err)
	}
	if err := fileio.WriteAtomic(filepath.Join(abs, KeyFile), keyBytes, KeyMode); err != nil {
		return nil, fmt.Errorf("repo: init: write %s: %w", r.KeyPath(), err)
	}
	if err := fileio.WriteAtomic(filepath.Join(abs, ConfigFile), data, FileMode); err != nil {
		return nil, fmt.Errorf("repo: init: write %s: %w", r.ConfigPath(), err)
	}
	r.Key = key
	if err := release(); err != nil {
		return nil, fmt.Errorf("repo: init: %w", err)
	}
	return r, nil
}

// listNames lists a few names for a message.
func listNames(names []string) string {
	const most = 3
	if len(names) <= most {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:most], ", "), len(names)-most)
}

// Open opens the repo in dir: it resolves dir (absolute, symlinks), reads
// the identity key and loads config.toml (config.Load: strict, validated).
// It does not take the lock; a daemon calls Lock.
//
// Errors:
//   - ErrNotInitialized when dir does not exist or holds neither
//     config.toml nor identity.key: "repo: no wats repo at DIR; run `wats
//     init --repo DIR`";
//   - ErrBadKey when identity.key is missing, too large, not a libp2p
//     private key or not Ed25519;
//   - ErrKeyPermissions when identity.key is readable or writable by group
//     or others (mode & 0o077 != 0), with the chmod that fixes it;
//   - ErrIncomplete when config.toml is missing;
//   - the errors of config.Load (ErrUnknownKey, ErrInvalid, ...), which name
//     the file, line and key.
func Open(dir string) (*Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("repo: open %s: %w", dir, err)
	}
	fi, err := os.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, notInitialized(abs)
	} else if err != nil {
		return nil, fmt.Errorf("repo: open: %w", err)
	}
	if !fi.IsDir() {
		return nil, newError(abs, ErrNotInitialized, nil, "%s is not a directory; a wats repo is a directory", abs)
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return nil, fmt.Errorf("repo: open: %w", err)
	}
	r := &Repo{Dir: abs}
	_, cfgErr := os.Lstat(r.ConfigPath())
	_, keyErr := os.Lstat(r.KeyPath())
	if errors.Is(cfgErr, fs.ErrNotExist) && errors.Is(keyErr, fs.ErrNotExist) {
		return nil, notInitialized(abs)
	}
	if r.Key, err = readKey(r.KeyPath(), abs); err != nil {
		return nil, err
	}
	if errors.Is(cfgErr, fs.ErrNotExist) {
		return nil, newError(abs, ErrIncomplete, cfgErr,
			"%s is missing; restore it, or create it: an empty file means every default", r.ConfigPath())
	}
	if r.Config, err = config.Load(r.ConfigPath()); err != nil {
		return nil, err
	}
	return r, nil
}
