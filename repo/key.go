package repo

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/crypto/pb"
)

// MaxKeyFileSize is the largest identity.key Open reads, in bytes. An
// Ed25519 key marshals to 68 bytes (crypto.MarshalPrivateKey); the cap
// keeps a wrong file from being read whole.
const MaxKeyFileSize = 4096

// readKey reads the identity key at path, in the repo dir, and checks it:
// a regular file, private to its owner, at most MaxKeyFileSize bytes, a
// libp2p Ed25519 private key.
func readKey(path, dir string) (crypto.PrivKey, error) {
	reinit := fmt.Sprintf("restore it from a backup, or run `wats init --force --repo %s` for a new identity (this also wipes the database)", shellQuote(dir))
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, newError(dir, ErrBadKey, err, "%s is missing; %s", path, reinit)
	} else if err != nil {
		return nil, newError(dir, ErrBadKey, err, "read %s: %v", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, newError(dir, ErrBadKey, err, "read %s: %v", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, newError(dir, ErrBadKey, nil, "%s is not a regular file; %s", path, reinit)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, newError(dir, ErrKeyPermissions, nil,
			"%s is accessible by others (mode %04o), so others may have copied the node's identity; "+
				"if that is not a worry, run `chmod 600 %s`", path, perm, shellQuote(path))
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxKeyFileSize+1))
	if err != nil {
		return nil, newError(dir, ErrBadKey, err, "read %s: %v", path, err)
	}
	if len(data) > MaxKeyFileSize {
		return nil, newError(dir, ErrBadKey, nil, "%s is larger than %d bytes: not an identity key; %s",
			path, MaxKeyFileSize, reinit)
	}
	key, err := crypto.UnmarshalPrivateKey(data)
	if err != nil {
		return nil, newError(dir, ErrBadKey, err, "%s is not a libp2p private key (%v); %s", path, err, reinit)
	}
	if t := key.Type(); t != pb.KeyType_Ed25519 {
		return nil, newError(dir, ErrBadKey, nil, "%s holds a %s key; a wats identity is Ed25519; %s", path, t, reinit)
	}
	return key, nil
}
