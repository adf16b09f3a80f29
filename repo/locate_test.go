package repo

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSocketPathOf: every spelling of a repo's directory gives the socket
// Open's Repo gives, a long one the fallback; what holds no repo is
// ErrNotInitialized.
func TestSocketPathOf(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "repo")
	if _, err := Init(dir, &InitOptions{}); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Dir(dir))
	for _, d := range []string{dir, link, "repo", "./repo/"} {
		got, err := SocketPathOf(d)
		if err != nil || got != r.SocketPath() {
			t.Errorf("SocketPathOf(%q) = %q, %v; want %q as Open gives", d, got, err, r.SocketPath())
		}
	}

	// A path too long for a socket: the fallback in the temporary
	// directory, which hashes Dir, so Dir must be spelled as Open does.
	long := filepath.Join(t.TempDir(), strings.Repeat("d", 100))
	if _, err := Init(long, &InitOptions{}); err != nil {
		t.Fatal(err)
	}
	lr, err := Open(long)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := SocketPathOf(long + "/."); err != nil || got != lr.SocketPath() || strings.HasPrefix(got, long) {
		t.Errorf("SocketPathOf of a long path = %q, %v; want the fallback %q", got, err, lr.SocketPath())
	}

	empty := t.TempDir()
	file := filepath.Join(empty, "file")
	os.WriteFile(file, nil, 0o600)
	for _, d := range []string{filepath.Join(empty, "none"), empty, file} {
		if _, err := SocketPathOf(d); !errors.Is(err, ErrNotInitialized) {
			t.Errorf("SocketPathOf(%q): %v, want ErrNotInitialized", d, err)
		}
	}
}
