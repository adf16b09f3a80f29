package fileio

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteAtomic: the file gets the data and the mode, replaces what was
// there, and no temporary file is left.
func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.json")
	for _, data := range []string{"old", "new"} {
		if err := WriteAtomic(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(p); err != nil || string(b) != data {
			t.Fatalf("read %q, %v; want %q", b, err, data)
		}
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v", fi.Mode(), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("%d entries left, want the file alone", len(entries))
	}
	if err := WriteAtomic(filepath.Join(dir, "none", "f"), nil, 0o600); err == nil {
		t.Fatal("a write into a missing directory worked")
	}
}

// TestReadCapped: a file of max bytes is read, one of max+1 refused; "-"
// reads stdin.
func TestReadCapped(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("12345"), 0o600)
	if b, err := ReadCapped(p, nil, 5); err != nil || string(b) != "12345" {
		t.Fatalf("at the cap: %q, %v", b, err)
	}
	if _, err := ReadCapped(p, nil, 4); err == nil || !strings.Contains(err.Error(), "is larger than 4 bytes") {
		t.Fatalf("over the cap: %v", err)
	}
	if b, err := ReadCapped("-", strings.NewReader("in"), 5); err != nil || string(b) != "in" {
		t.Fatalf("stdin: %q, %v", b, err)
	}
}

// TestWriteAtomicRemovesLeftovers: the temporary files of a writer that
// was killed (held by nobody) are removed by the next write, and by
// RemoveLeftovers; one a live writer holds stays, as do other files.
func TestWriteAtomicRemovesLeftovers(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.toml")
	mk := func(name string) string {
		name = filepath.Join(dir, name)
		if err := os.WriteFile(name, []byte("half"), 0o600); err != nil {
			t.Fatal(err)
		}
		return name
	}
	dead1, dead2 := mk(".config.toml.tmp123"), mk(".config.toml.tmp456")
	other := mk(".other.toml.tmp789")
	live := mk(".config.toml.tmp999")
	f, err := os.Open(live)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := lock(f, false); err != nil {
		t.Fatal(err)
	}
	if err := WriteAtomic(p, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{dead1: false, dead2: false, other: true, live: true, p: true} {
		if _, err := os.Stat(name); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", filepath.Base(name), err == nil, want)
		}
	}
	f.Close() // the live writer dies
	if n := RemoveLeftovers(p); n != 1 {
		t.Errorf("RemoveLeftovers removed %d, want the one its writer no longer holds", n)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("%d entries left, want config.toml and the other file's", len(entries))
	}
}
