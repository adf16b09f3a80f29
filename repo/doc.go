// Package repo is the node's home on disk: a directory that holds its
// configuration, its identity and its database (docs/design.md §3, §11, §12).
//
// # Layout
//
//	<dir>/              mode 0700; $WATS_PATH, else ~/.wats (DefaultPath)
//	  config.toml       the configuration (package config), mode 0600
//	  identity.key      crypto.MarshalPrivateKey of an Ed25519 key, mode 0600
//	  db/               the pebble database, created by the node
//	  api.sock          the control socket, created by the daemon
//	  repo.lock         flock'ed by a running daemon, holds its pid
//
// # Use
//
// `wats init` calls Init, which creates the directory, a new key and
// config.toml (config.Template). The daemon calls Open, then Lock, and
// keeps the lock until it exits, so a repo has one daemon at most; it then
// calls PrepareSocket and listens on the path it returns. A CLI command
// calls Open and dials SocketPath, or, to reach the daemon alone, dials
// SocketPathOf(dir), which reads neither key nor config.
//
//	r, err := repo.Open(dir) // ErrNotInitialized says to run `wats init`
//	release, err := r.Lock() // ErrLocked names the running daemon's pid
//	defer release()
//
// # Rules
//
//   - Init refuses a directory that holds a repo unless Force is set, and
//     with Force wipes db/ as well: the database belongs to the identity it
//     replaces. It never writes into a directory that holds other files.
//   - Open refuses an identity.key that group or others can access (like
//     ssh), one that is not Ed25519, and an invalid config.toml, each with a
//     message that says what to do.
//   - Unix socket paths hold at most 103 bytes everywhere (MaxSocketPathLen).
//     When <dir>/api.sock is longer, SocketPath is a short path under
//     os.TempDir() derived from a hash of the directory, which the daemon
//     and its clients compute alike.
//
// # Files
//
//   - repo.go: Repo, the layout constants, DefaultPath, Init and Open.
//   - key.go: reading and checking identity.key (written with
//     fileio.WriteAtomic).
//   - lock_unix.go: Lock, with flock(2).
//   - socket.go, socket_unix.go: SocketPath and PrepareSocket.
//   - locate.go: SocketPathOf, a repo's socket without opening the repo.
//   - errors.go: the sentinel errors, Error and LockedError.
package repo
