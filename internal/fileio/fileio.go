// Package fileio holds the two whole-file helpers that the CLI (cmd/wats)
// and its harnesses (internal/devnet) share: WriteAtomic, which replaces a
// file so that a reader sees the old content or the new, never part, and
// ReadCapped, which reads a file whole but refuses one over a bound.
//
// It imports no other wats package.
package fileio

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteAtomic writes data to path through a temporary file in the same
// directory (".<name>.tmp*"), set to perm and synced before it is renamed
// over path, so that a reader sees the old or the new content, never part.
// On an error the temporary file is removed and path is left as it was.
func WriteAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync() // the new content on disk before it replaces the old
	}
	if err1 := f.Close(); err == nil {
		err = err1
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// ReadCapped reads the file name whole, or stdin when name is "-",
// refusing one of more than max bytes with an error that names it ("NAME
// is larger than MAX bytes"). It reads at most max+1 bytes.
func ReadCapped(name string, stdin io.Reader, max int64) ([]byte, error) {
	r := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, max)
	}
	return b, nil
}
