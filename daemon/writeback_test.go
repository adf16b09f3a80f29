package daemon

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestProgressWriterWritesBehind: a blob get's file has the writeback of
// each writeBehindBytes started as they are written, in order and each
// byte once; the tail shorter than that is left to the CLI's fsync.
func TestProgressWriterWritesBehind(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ranges [][2]int64
	old := writeback
	writeback = func(_ *os.File, off, n int64) { ranges = append(ranges, [2]int64{off, n}) }
	t.Cleanup(func() { writeback = old })
	p := &progressWriter{w: f, report: func(uint64) {}, behind: f}
	chunk := bytes.Repeat([]byte{7}, 3<<20)
	for range 6 { // 18 MiB: two ranges of 9 MiB, none for the tail
		if _, err := p.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	want := [][2]int64{{0, 9 << 20}, {9 << 20, 9 << 20}}
	if !slices.Equal(ranges, want) {
		t.Fatalf("writeback of %v, want %v", ranges, want)
	}
	startWriteback(f, 0, 18<<20) // the real call: a hint, nothing to check but that it returns
}
