package blobs

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"
)

// TestFileCacheDrops: on a file of the system's, the drop-behind's system
// calls do what it counts on: a range synced is written back, and once
// dropped it leaves the page cache while the range after it stays; a
// file in memory has no page cache to ask.
func TestFileCacheDrops(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "data"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pc := newFileCache(f.Fd())
	if pc == nil {
		t.Skip("this kernel has no cachestat (Linux 6.5 and later): the drop-behind is off here")
	}
	chunk := bytes.Repeat([]byte{7}, partialSyncBytes)
	for range 2 {
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	pc.startWriteback(0, 2*partialSyncBytes)
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		t.Fatal(err)
	}
	if !pc.writtenBack(0, partialSyncBytes) {
		t.Fatal("a range synced is not written back")
	}
	pc.drop(0, partialSyncBytes)
	cached := func(off int64) uint64 {
		var st unix.Cachestat_t
		if err := unix.Cachestat(uint(f.Fd()), &unix.CachestatRange{Off: uint64(off), Len: partialSyncBytes}, &st, 0); err != nil {
			t.Fatal(err)
		}
		return st.Cache
	}
	if n := cached(0); n != 0 {
		t.Errorf("%d pages of the dropped range still cached", n)
	}
	if n := cached(partialSyncBytes); n == 0 {
		t.Error("the range after the dropped one left the page cache too")
	}
	mem, err := vfs.NewMem().Create("data", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if pc := newFileCache(mem.Fd()); pc != nil {
		t.Error("a file in memory has a page cache to ask")
	}
}

// TestDataFilesDropBehind: a fetch's data file drops behind (ADR 0053,
// addendum), an import's does not (ADR 0037), on the system's files.
func TestDataFilesDropBehind(t *testing.T) {
	s, _, _ := newStore(t, StoreOptions{})
	for _, fetch := range []bool{true, false} {
		d, err := s.newDataFile(fetch)
		if err != nil {
			t.Fatal(err)
		}
		if newFileCache(d.f.Fd()) == nil {
			t.Skip("this kernel has no cachestat (Linux 6.5 and later): the drop-behind is off here")
		}
		if d.behind.on != fetch {
			t.Errorf("a data file for a fetch (%v) drops behind: %v", fetch, d.behind.on)
		}
		if err := d.discard(); err != nil {
			t.Fatal(err)
		}
	}
}
