// Package fileio holds the two whole-file helpers that the repo, the CLI
// (cmd/wats) and its harnesses (internal/devnet) share: WriteAtomic, which replaces a
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
	"strings"
)

// WriteAtomic writes data to path through a temporary file in the same
// directory (".<name>.tmp*"), set to perm and synced before it is renamed
// over path, so that a reader sees the old or the new content, never part;
// the directory is synced after, so that the rename outlives a crash. On
// an error the temporary file is removed and path is left as it was.
//
// A writer holds an exclusive flock(2) on its temporary file until the
// rename: one left by a writer that was killed is held by nobody, and
// WriteAtomic removes such leftovers of path first (RemoveLeftovers),
// while another writer's, held, stay.
func WriteAtomic(path string, data []byte, perm os.FileMode) error {
	RemoveLeftovers(path)
	f, err := os.CreateTemp(filepath.Dir(path), tempPattern(path))
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = lock(f, false)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync() // the new content on disk before it replaces the old
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err1 := f.Close(); err == nil {
		err = err1
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(path))
}

// tempPattern is the os.CreateTemp pattern of path's temporary files.
func tempPattern(path string) string { return "." + filepath.Base(path) + ".tmp*" }

// IsTemp reports whether a file name is that of a temporary file
// WriteAtomic writes (".<name>.tmp…"): one a killed writer may leave.
func IsTemp(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp")
}

// RemoveLeftovers removes the temporary files of path that WriteAtomic
// left when it was killed: those no writer holds locked. It reports how
// many it removed; what it cannot remove stays, and is not an error.
func RemoveLeftovers(path string) int {
	names, _ := filepath.Glob(filepath.Join(filepath.Dir(path), globEscape(tempPattern(path))))
	n := 0
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		if lock(f, true) == nil && os.Remove(name) == nil {
			n++
		}
		f.Close()
	}
	return n
}

// globEscape escapes the glob metacharacters of pattern but its final *.
func globEscape(pattern string) string {
	var b []byte
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		if (c == '*' && i < len(pattern)-1) || c == '?' || c == '[' || c == '\\' {
			b = append(b, '\\')
		}
		b = append(b, c)
	}
	return string(b)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
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
