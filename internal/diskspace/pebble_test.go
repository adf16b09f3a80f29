package diskspace

import (
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// fatalLogger fails the test on pebble's Fatalf, which would end the
// process: the goroutine that called it stops there.
type fatalLogger struct{ t *testing.T }

func (fatalLogger) Infof(string, ...any)  {}
func (fatalLogger) Errorf(string, ...any) {}
func (l fatalLogger) Fatalf(format string, args ...any) {
	l.t.Errorf("pebble: fatal: "+format, args...)
	panic(fmt.Sprintf(format, args...))
}

// TestPebbleGetsTheBallast: a WAL write of pebble meets ENOSPC (the disk
// filled behind the guard's back); the guard gives up its ballast from
// vfs.OnDiskFull, the write is retried and succeeds, pebble goes on, and
// the guard refuses writes until the disk has room for the reserve and the
// ballast again.
func TestPebbleGetsTheBallast(t *testing.T) {
	var diskFull atomic.Bool // the disk has no room; freed by the ballast
	var free atomic.Uint64
	free.Store(500 << 20)
	ballast := false
	g, err := New("/repo", "", &Options{
		Statfs:    func(string) (uint64, uint64, error) { return free.Load(), 1 << 30, nil },
		Ballast:   func(uint64) error { ballast = true; return nil },
		Unballast: func() error { ballast = false; diskFull.Store(false); free.Store(40 << 20); return nil },
		Now:       func() time.Time { return time.Unix(0, 0) },
	})
	if err != nil {
		t.Fatal(err)
	}
	inj := errorfs.InjectorFunc(func(op errorfs.Op) error {
		if diskFull.Load() && op.Kind == errorfs.OpFileWrite && strings.HasSuffix(op.Path, ".log") {
			return syscall.ENOSPC
		}
		return nil
	})
	fs := vfs.OnDiskFull(errorfs.Wrap(vfs.NewMem(), inj), g.OnDiskFull)
	db, err := pebble.Open("db", &pebble.Options{FS: fs, Logger: fatalLogger{t}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Set([]byte("before"), []byte("1"), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if !ballast || g.State().Full {
		t.Fatalf("at the start: ballast %v, state %+v", ballast, g.State())
	}

	diskFull.Store(true)
	if err := db.Set([]byte("during"), []byte("2"), pebble.Sync); err != nil {
		t.Fatalf("a write on a full disk with a ballast: %v", err)
	}
	if ballast || !g.State().Full {
		t.Fatalf("after ENOSPC: ballast %v, state %+v; want the ballast given up and writes refused", ballast, g.State())
	}
	if err := g.Room(1); err == nil {
		t.Fatal("Room allows a write after pebble met ENOSPC")
	}
	for _, k := range []string{"before", "during"} {
		if _, closer, err := db.Get([]byte(k)); err != nil {
			t.Fatalf("get %q: %v", k, err)
		} else {
			closer.Close()
		}
	}

	free.Store(500 << 20) // space freed
	if err := g.Room(1); err != nil || !ballast {
		t.Fatalf("once space is freed: %v, ballast %v; want room and the ballast made again", err, ballast)
	}
}

// recordPrealloc is a filesystem whose files record their preallocations.
// Its preallocations take the room of free.
type recordPrealloc struct {
	vfs.FS
	got  *[]int64
	free *uint64
}

func (fs recordPrealloc) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	return preallocFile{File: f, fs: fs}, err
}

type preallocFile struct {
	vfs.File
	fs recordPrealloc
}

func (f preallocFile) Preallocate(_, n int64) error {
	*f.fs.got = append(*f.fs.got, n)
	*f.fs.free -= uint64(n)
	return nil
}

// TestPreallocationAsksTheGuard: a file of the guarded filesystem
// preallocates what the guard has room for, and skips (without an error)
// what it has not, counting what it allowed as written.
func TestPreallocationAsksTheGuard(t *testing.T) {
	free := uint64(100 << 20)
	g, err := New("/repo", "", &Options{Statfs: func(string) (uint64, uint64, error) { return free, 1 << 30, nil }})
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	fs := g.FS(recordPrealloc{FS: vfs.NewMem(), got: &got, free: &free})
	f, err := fs.Create("000002.log", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Preallocate(0, 30<<20); err != nil { // 100 − 30 ≥ 64: allowed
		t.Fatal(err)
	}
	if err := f.Preallocate(30<<20, 30<<20); err != nil { // 70 − 30 < 64: skipped
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != 30<<20 {
		t.Fatalf("preallocated %v; want the first 30 MiB only", got)
	}
	if st := g.State(); st.Free != 70<<20 || st.Full {
		t.Fatalf("the guard counts %d bytes free (full %v), want 70 MiB and not full: a skipped preallocation is no full disk", st.Free, st.Full)
	}
}
