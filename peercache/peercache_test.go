package peercache

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

func newID(t testing.TB) peer.ID {
	t.Helper()
	k, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func openDB(t testing.TB, fs vfs.FS) *pebble.DB {
	t.Helper()
	db, err := pebble.Open("db", &pebble.Options{FS: fs, Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func TestCursorSurvivesReopen(t *testing.T) {
	fs := vfs.NewMem()
	db := openDB(t, fs)
	c, damaged, err := Open(db, nil)
	if err != nil || len(damaged) != 0 {
		t.Fatalf("open: %v, damaged %v", err, damaged)
	}
	a, b := newID(t), newID(t)
	if c.MetInEarlierRun(a) {
		t.Fatal("a fresh cache says it met a peer")
	}
	if err := c.Update(a, true, func(r *Record) { r.Cursor = 600; r.Agent = "wats/x" }); err != nil {
		t.Fatal(err)
	}
	if got := c.Cursor(a); got != 600 {
		t.Fatalf("cursor %d, want 600", got)
	}
	if got := c.Cursor(b); got != 0 {
		t.Fatalf("unknown peer's cursor %d, want 0", got)
	}
	c.Close()
	if err := c.Update(a, true, func(r *Record) { r.Cursor = 1 }); err != ErrClosed {
		t.Fatalf("update after close: %v, want ErrClosed", err)
	}
	db.Close()

	db = openDB(t, fs)
	defer db.Close()
	c, _, err = Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := c.Get(a)
	if !ok || r.Cursor != 600 || r.Agent != "wats/x" {
		t.Fatalf("after reopen: %+v %v, want cursor 600 and agent", r, ok)
	}
	if !c.MetInEarlierRun(a) || c.MetInEarlierRun(b) {
		t.Fatal("MetInEarlierRun is wrong after reopen")
	}
}

func TestDamagedRecordIsSkippedAndReported(t *testing.T) {
	fs := vfs.NewMem()
	db := openDB(t, fs)
	defer db.Close()
	good := newID(t)
	c, _, _ := Open(db, nil)
	if err := c.Update(good, true, func(r *Record) { r.Cursor = 7 }); err != nil {
		t.Fatal(err)
	}
	bad := newID(t)
	if err := db.Set(key(bad), []byte(`{"cursor":`), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte(keyPrefix+"not a peer id"), []byte(`{}`), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	c, damaged, err := Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(damaged) != 2 {
		t.Fatalf("%d damaged records reported, want 2: %v", len(damaged), damaged)
	}
	if c.Len() != 1 || c.Cursor(good) != 7 {
		t.Fatalf("the good record was not kept: len %d, cursor %d", c.Len(), c.Cursor(good))
	}
}

func TestMergeAddrsKeepsNewest16(t *testing.T) {
	addrs := func(from, to int) []string {
		var out []string
		for i := from; i < to; i++ {
			out = append(out, fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", 4000+i))
		}
		return out
	}
	var r Record
	r.MergeAddrs(addrs(0, MaxAddrs))
	if len(r.Addrs) != MaxAddrs {
		t.Fatalf("%d addrs at the bound, want %d", len(r.Addrs), MaxAddrs)
	}
	r.MergeAddrs(addrs(MaxAddrs, MaxAddrs+1)) // one past the bound
	if len(r.Addrs) != MaxAddrs || r.Addrs[0] != addrs(MaxAddrs, MaxAddrs+1)[0] {
		t.Fatalf("after one more: %d addrs, first %s", len(r.Addrs), r.Addrs[0])
	}
	if r.Addrs[MaxAddrs-1] != addrs(0, MaxAddrs)[MaxAddrs-2] {
		t.Fatalf("the oldest address was not the one dropped: last is %s", r.Addrs[MaxAddrs-1])
	}
	r.MergeAddrs(addrs(3, 4)) // a known one moves to the front, no duplicate
	if r.Addrs[0] != addrs(3, 4)[0] || len(r.Addrs) != MaxAddrs {
		t.Fatalf("re-merged address: first %s, %d addrs", r.Addrs[0], len(r.Addrs))
	}
}

// quietLogger keeps pebble's recovery messages out of the test output.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}
