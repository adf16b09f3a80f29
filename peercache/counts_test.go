package peercache

import (
	"errors"
	"fmt"
	"github.com/wats-network/wats/core"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/go-json-experiment/json"
	"github.com/libp2p/go-libp2p/core/peer"
)

var t0 = time.Date(2026, 10, 27, 12, 0, 0, 0, time.UTC)

// hello records p as the node does when p completes hello at now.
func hello(t testing.TB, c *Cache, p peer.ID, now time.Time) {
	t.Helper()
	err := c.Update(p, false, func(r *Record) {
		if r.FirstSeen.IsZero() {
			r.FirstSeen = now
		}
		r.LastSeen, r.LastHello = now, now
	})
	if err != nil {
		t.Error(err) // not Fatal: called from goroutines too
	}
}

// stored reads p's record straight from db, bypassing any Cache.
func stored(t *testing.T, db *pebble.DB, p peer.ID) (Record, bool) {
	t.Helper()
	v, closer, err := db.Get(key(p))
	if errors.Is(err, pebble.ErrNotFound) {
		return Record{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	var r Record
	if err := json.Unmarshal(v, &r); err != nil {
		t.Fatalf("stored record of %s: %v", p, err)
	}
	return r, true
}

// crash returns the database as a kill -9 of the process (all = true: every
// write that reached the OS survives) or a machine crash (all = false: only
// synced writes survive) would leave it, reopened.
func crash(t *testing.T, fs *vfs.MemFS, all bool) *pebble.DB {
	t.Helper()
	cfg := vfs.CrashCloneCfg{}
	if all {
		cfg.UnsyncedDataPercent = 100
		cfg.RNG = rand.New(rand.NewPCG(1, 2)) // required, unused at 100
	}
	db := openDB(t, fs.CrashClone(cfg))
	t.Cleanup(func() { db.Close() })
	return db
}

func TestCountsAreWrittenOnlyByFlushAndClose(t *testing.T) {
	fs := vfs.NewCrashableMem()
	db := openDB(t, fs)
	defer db.Close()
	c, _, err := Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := newID(t)
	hello(t, c, p, t0)
	for range 3 {
		c.Count(p, CountServed)
	}
	c.Count(p, CountRefused)
	c.Count(p, CountChallenged)
	c.Count(p, CountSolved)
	c.Count(p, CountMiss)
	c.Count(p, CountMiss)
	type five struct{ served, refused, challenged, solved, misses uint64 }
	want := five{3, 1, 1, 1, 2}
	counts := func(r Record) five {
		return five{r.Served, r.Refused, r.Challenged, r.Solved, r.Misses}
	}
	if r, _ := c.Get(p); counts(r) != want {
		t.Fatalf("in memory: %+v, want %+v", counts(r), want)
	}

	// Not flushed: nothing was written to pebble (db.Get reads the
	// memtable too), so a kill -9 now loses the counts.
	r, ok := stored(t, db, p)
	if !ok || counts(r) != (five{}) {
		t.Fatalf("before Flush, stored %+v %v: want the record without counts", counts(r), ok)
	}

	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if r, _ := stored(t, db, p); counts(r) != want {
		t.Fatalf("after Flush: %+v, want %+v", counts(r), want)
	}
	// Flush does not sync: a machine crash may lose it (not asserted: the
	// WAL may have been synced by pebble for another reason).

	// Close flushes, synced: the counts survive even a machine crash.
	c.Count(p, CountServed)
	want.served++
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if r, _ := stored(t, crash(t, fs, false), p); counts(r) != want {
		t.Fatalf("after Close and a machine crash: %+v, want %+v", counts(r), want)
	}
	// And they load.
	c2, _, err := Open(crash(t, fs, false), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := c2.Get(p); counts(r) != want {
		t.Fatalf("reopened: %+v, want %+v", counts(r), want)
	}
}

func TestUpdateWritesPendingCounts(t *testing.T) {
	fs := vfs.NewCrashableMem()
	db := openDB(t, fs)
	defer db.Close()
	c, _, _ := Open(db, nil)
	p := newID(t)
	hello(t, c, p, t0)
	c.Count(p, CountServed)
	c.Count(p, CountServed)
	if err := c.Update(p, true, func(r *Record) { r.Cursor = 9 }); err != nil {
		t.Fatal(err)
	}
	r, _ := stored(t, crash(t, fs, false), p)
	if r.Served != 2 || r.Cursor != 9 {
		t.Fatalf("after a durable Update: served %d cursor %d, want 2 and 9", r.Served, r.Cursor)
	}
}

func TestCountUnknownPeerCreatesNothing(t *testing.T) {
	fs := vfs.NewMem()
	db := openDB(t, fs)
	defer db.Close()
	c, _, _ := Open(db, nil)
	known := newID(t)
	hello(t, c, known, t0)
	for range 100 {
		c.Count(newID(t), CountServed)
	}
	c.Count(known, Counter(99)) // not a counter: dropped, no panic
	c.Count(known, Counter(-1))
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if c.Len() != 1 {
		t.Fatalf("%d records after counting unknown peers, want 1", c.Len())
	}
	if r, _ := c.Get(known); fmt.Sprint(r) != fmt.Sprint(Record{FirstSeen: t0, LastSeen: t0, LastHello: t0, V: RecordVersion}) {
		t.Fatalf("a bad counter changed the record: %+v", r)
	}
	c2, _, _ := Open(db, nil)
	if c2.Len() != 1 {
		t.Fatalf("%d records stored, want 1", c2.Len())
	}
}

func TestCountAfterCloseIsDropped(t *testing.T) {
	db := openDB(t, vfs.NewMem())
	defer db.Close()
	c, _, _ := Open(db, nil)
	p := newID(t)
	hello(t, c, p, t0)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c.Count(p, CountServed)
	if r, _ := c.Get(p); r.Served != 0 {
		t.Fatalf("counted after Close: %d", r.Served)
	}
	if err := c.Flush(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Flush after Close: %v, want ErrClosed", err)
	}
	if err := c.Forget(p); !errors.Is(err, ErrClosed) {
		t.Fatalf("Forget after Close: %v, want ErrClosed", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	c.Start(time.Second) // after Close: does nothing, does not block
}

func TestBackgroundFlusher(t *testing.T) {
	db := openDB(t, vfs.NewMem())
	defer db.Close()
	var flushErrs []error
	c, _, _ := Open(db, &Options{FlushErrors: func(err error) { flushErrs = append(flushErrs, err) }})
	p := newID(t)
	hello(t, c, p, t0)
	// The loop Start runs, driven by hand: a tick flushes.
	tick := make(chan time.Time)
	flushed := make(chan struct{})
	c.startOnce.Do(func() { go c.flushLoop(tick, func() { flushed <- struct{}{} }) })
	c.Start(time.Millisecond) // a second Start does nothing
	c.Count(p, CountMiss)
	if r, _ := stored(t, db, p); r.Misses != 0 {
		t.Fatalf("flushed before a tick: misses %d", r.Misses)
	}
	tick <- t0
	<-flushed
	if r, _ := stored(t, db, p); r.Misses != 1 {
		t.Fatalf("not flushed at a tick: misses %d", r.Misses)
	}
	c.Count(p, CountMiss)
	if err := c.Close(); err != nil { // stops the loop, then flushes
		t.Fatal(err)
	}
	if r, _ := stored(t, db, p); r.Misses != 2 {
		t.Fatalf("Close did not flush: misses %d", r.Misses)
	}
	if len(flushErrs) != 0 {
		t.Fatalf("flush errors: %v", flushErrs)
	}
}

func TestStartAndCloseWithRealTicker(t *testing.T) {
	db := openDB(t, vfs.NewMem())
	defer db.Close()
	c, _, _ := Open(db, nil)
	p := newID(t)
	hello(t, c, p, t0)
	c.Start(0) // DefaultFlushInterval: never fires in this test
	c.Count(p, CountSolved)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if r, _ := stored(t, db, p); r.Solved != 1 {
		t.Fatalf("Close after Start did not flush: solved %d", r.Solved)
	}
}

// seen records peers with the given LastSeen offsets (in minutes after
// t0), FirstSeen an hour before t0.
func seen(t testing.TB, c *Cache, ids []peer.ID, minutes ...int) {
	t.Helper()
	for i, m := range minutes {
		err := c.Update(ids[i], false, func(r *Record) {
			r.FirstSeen = t0.Add(-time.Hour)
			r.LastSeen = t0.Add(time.Duration(m) * time.Minute)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func ids(t testing.TB, n int) []peer.ID {
	out := make([]peer.ID, n)
	for i := range out {
		out[i] = newID(t)
	}
	return out
}

func TestEvictionAtCapacity(t *testing.T) {
	db := openDB(t, vfs.NewMem())
	defer db.Close()
	c, _, err := Open(db, &Options{MaxPeers: 3})
	if err != nil {
		t.Fatal(err)
	}
	p := ids(t, 6)
	seen(t, c, p, 2, 1, 3) // p[1] is the least recently seen
	if c.Len() != 3 || c.Evicted() != 0 {
		t.Fatalf("at the bound: len %d, evicted %d, want 3 and 0", c.Len(), c.Evicted())
	}
	seen(t, c, p[3:], 4) // one past
	if c.Len() != 3 || c.Evicted() != 1 {
		t.Fatalf("one past the bound: len %d, evicted %d, want 3 and 1", c.Len(), c.Evicted())
	}
	if _, ok := c.Get(p[1]); ok {
		t.Fatal("the least recently seen peer was not evicted")
	}
	if _, ok := stored(t, db, p[1]); ok {
		t.Fatal("the evicted record is still in the database")
	}
	// Seeing p[0] again makes p[2] the least recently seen.
	seen(t, c, p, 5)
	c.Count(p[2], CountServed) // dirty when evicted: a flush must not bring it back
	seen(t, c, p[4:], 6)
	if _, ok := c.Get(p[2]); ok {
		t.Fatal("p[2] was not evicted after p[0] was seen again")
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, ok := stored(t, db, p[2]); ok {
		t.Fatal("a flush wrote an evicted record back")
	}
	// A tie on LastSeen is broken by FirstSeen.
	err = c.Update(p[5], false, func(r *Record) { r.FirstSeen, r.LastSeen = t0.Add(-2*time.Hour), t0.Add(5*time.Minute) })
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get(p[3]); ok {
		t.Fatal("p[3] (LastSeen +4) was not evicted")
	}
	seen(t, c, ids(t, 1), 7)
	if _, ok := c.Get(p[5]); ok {
		t.Fatal("of two records seen last at the same time, the one first seen earlier was not evicted")
	}
	if _, ok := c.Get(p[0]); !ok {
		t.Fatal("p[0] evicted instead of p[5]")
	}
}

func TestNewRecordIsNeverItsOwnVictim(t *testing.T) {
	db := openDB(t, vfs.NewMem())
	defer db.Close()
	c, _, _ := Open(db, &Options{MaxPeers: 1})
	p := ids(t, 2)
	seen(t, c, p, 10)
	// p[1] has a zero LastSeen, older than p[0]'s; it still replaces it.
	if err := c.Update(p[1], false, func(r *Record) { r.Cursor = 1 }); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get(p[1]); !ok || c.Len() != 1 {
		t.Fatalf("the new record was not kept: len %d", c.Len())
	}
}

func TestOpenOverCapacityEvicts(t *testing.T) {
	db := openDB(t, vfs.NewMem())
	defer db.Close()
	c, _, _ := Open(db, nil)
	p := ids(t, 5)
	seen(t, c, p, 3, 5, 1, 4, 2)
	c.Close()

	c, _, err := Open(db, &Options{MaxPeers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if c.Len() != 2 || c.Evicted() != 3 {
		t.Fatalf("len %d, evicted %d, want 2 and 3", c.Len(), c.Evicted())
	}
	for _, i := range []int{1, 3} {
		if !c.MetInEarlierRun(p[i]) {
			t.Fatalf("p[%d], among the two most recently seen, was evicted", i)
		}
	}
	c, _, _ = Open(db, nil)
	if c.Len() != 2 {
		t.Fatalf("the evictions at open were not written: %d records stored", c.Len())
	}
}

func TestOptionsBounds(t *testing.T) {
	db := openDB(t, vfs.NewMem())
	defer db.Close()
	for _, tc := range []struct {
		max int
		ok  bool
	}{{-1, false}, {0, true}, {1, true}, {MaxMaxPeers, true}, {MaxMaxPeers + 1, false}} {
		_, _, err := Open(db, &Options{MaxPeers: tc.max})
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("MaxPeers %d: %v, want ok=%v", tc.max, err, tc.ok)
		}
	}
	c, _, _ := Open(db, nil)
	if c.opts.MaxPeers != DefaultMaxPeers {
		t.Fatalf("default capacity %d, want %d", c.opts.MaxPeers, DefaultMaxPeers)
	}
}

func TestForget(t *testing.T) {
	fs := vfs.NewCrashableMem()
	db := openDB(t, fs)
	defer db.Close()
	c, _, _ := Open(db, nil)
	a, b := newID(t), newID(t)
	hello(t, c, a, t0)
	hello(t, c, b, t0)
	c.Close()
	c, _, _ = Open(db, nil)
	if !c.MetInEarlierRun(a) {
		t.Fatal("a peer from an earlier run is not met in an earlier run")
	}
	c.Count(a, CountServed) // dirty: Flush must not resurrect it
	if err := c.Forget(a); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get(a); ok || c.MetInEarlierRun(a) || c.Len() != 1 {
		t.Fatal("a forgotten peer is still in memory, or met in an earlier run")
	}
	if _, ok := stored(t, crash(t, fs, false), a); ok {
		t.Fatal("a forgotten peer's record is in the database after a machine crash")
	}
	if err := c.Forget(a); !errors.Is(err, ErrNotFound) {
		t.Fatalf("forgetting twice: %v, want ErrNotFound", err)
	}
	// A damaged record (not in memory) can be forgotten.
	bad := newID(t)
	if err := db.Set(key(bad), []byte(`{`), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := c.Forget(bad); err != nil {
		t.Fatalf("forgetting a damaged record: %v", err)
	}
	if _, _, err := db.Get(key(bad)); !errors.Is(err, pebble.ErrNotFound) {
		t.Fatalf("the damaged record is still there: %v", err)
	}
	if _, ok := c.Get(b); !ok {
		t.Fatal("Forget removed another peer")
	}
}

func TestAllAndKnownMostRecentFirst(t *testing.T) {
	db := openDB(t, vfs.NewMem())
	defer db.Close()
	c, _, _ := Open(db, nil)
	p := ids(t, 4)
	seen(t, c, p, 2, 4, 1, 3)
	for i, addrs := range [][]string{
		{"/ip4/10.0.0.1/tcp/4001"},
		{"not an addr", "/ip4/10.0.0.2/tcp/4001"},
		nil,                    // no address: not in Known
		{"/still/not/an/addr"}, // none parses: not in Known
	} {
		if err := c.Update(p[i], false, func(r *Record) { r.MergeAddrs(addrs) }); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	c, _, _ = Open(db, nil)
	seen(t, c, ids(t, 1), 0) // a new peer, least recently seen
	all := c.All()
	var order []peer.ID
	for _, e := range all {
		order = append(order, e.ID)
	}
	want := []peer.ID{p[1], p[3], p[0], p[2]}
	if len(all) != 5 || fmt.Sprint(order[:4]) != fmt.Sprint(want) {
		t.Fatalf("All order %v, want %v then the new peer", order, want)
	}
	if !all[0].MetInEarlierRun || all[4].MetInEarlierRun {
		t.Fatal("All: MetInEarlierRun is wrong")
	}
	known := c.Known()
	if len(known) != 2 || known[0].ID != p[1] || known[1].ID != p[0] {
		t.Fatalf("Known: %v, want p[1] then p[0]", known)
	}
	if len(known[0].Addrs) != 1 || known[0].Addrs[0].String() != "/ip4/10.0.0.2/tcp/4001" {
		t.Fatalf("Known addrs of p[1]: %v", known[0].Addrs)
	}
	// An Entry encodes flat, for `wats peers cache --json`.
	enc, err := json.Marshal(all[0])
	if err != nil {
		t.Fatal(err)
	}
	var flat map[string]any
	if err := json.Unmarshal(enc, &flat); err != nil || flat["id"] != p[1].String() || flat["served"] != 0.0 || flat["met_in_earlier_run"] != true {
		t.Fatalf("Entry JSON %s (%v)", enc, err)
	}
	// All returns copies.
	all[0].Addrs[0] = "changed"
	if r, _ := c.Get(p[1]); r.Addrs[0] == "changed" {
		t.Fatal("All shares the record's slices")
	}
}

func TestOlderRecordsLoad(t *testing.T) {
	db := openDB(t, vfs.NewMem())
	defer db.Close()
	p := newID(t)
	// A record as the first version wrote it (no counts), with a field a
	// version since then dropped, and too many addresses.
	addrs := ""
	for i := range MaxAddrs + 1 {
		addrs += fmt.Sprintf(`"/ip4/10.0.0.1/tcp/%d",`, 4000+i)
	}
	old := `{"addrs":[` + addrs[:len(addrs)-1] + `],"first_seen":"2026-01-02T03:04:05Z","last_seen":"2026-01-02T03:04:05Z",` +
		`"last_hello":"0001-01-01T00:00:00Z","agent":"wats/0.1","cursor":"42","retired_field":{"x":1}}`
	if err := db.Set(key(p), []byte(old), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	c, damaged, err := Open(db, nil)
	if err != nil || len(damaged) != 0 {
		t.Fatalf("open: %v, damaged %v", err, damaged)
	}
	r, ok := c.Get(p)
	if !ok || r.Cursor != 42 || r.Agent != "wats/0.1" || r.Served != 0 || len(r.Addrs) != MaxAddrs {
		t.Fatalf("old record loaded as %+v (%d addrs)", r, len(r.Addrs))
	}
}

// TestConcurrentUse runs every operation at once; under -race it checks the
// locking, and the final count checks that no increment is lost.
func TestConcurrentUse(t *testing.T) {
	db := openDB(t, vfs.NewMem())
	defer db.Close()
	c, _, _ := Open(db, &Options{MaxPeers: 8})
	kept := newID(t)
	hello(t, c, kept, t0.Add(time.Hour)) // the most recently seen: never evicted
	others := ids(t, 16)
	const workers, per = 4, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range per {
				c.Count(kept, CountServed)
				o := others[(w*per+i)%len(others)]
				c.Count(o, CountRefused)
				switch i % 50 {
				case 0:
					hello(t, c, o, t0.Add(time.Duration(i)*time.Second))
				case 10:
					if err := c.Flush(); err != nil {
						t.Error(err)
					}
				case 20:
					if err := c.Forget(o); err != nil && !errors.Is(err, ErrNotFound) {
						t.Error(err)
					}
				case 30:
					_ = c.All()
					_ = c.Known()
					_ = c.MetInEarlierRun(o)
					c.Add(o, core.Counts{Events: 1}, t0)
				case 40:
					if err := c.Update(kept, i%100 == 40, func(r *Record) { r.Cursor++ }); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c, _, _ = Open(db, nil)
	r, _ := c.Get(kept)
	if r.Served != workers*per || r.Cursor != workers*per/50 {
		t.Fatalf("served %d cursor %d, want %d and %d", r.Served, r.Cursor, workers*per, workers*per/50)
	}
	if c.Len() > 8 {
		t.Fatalf("%d records over the capacity of 8", c.Len())
	}
}

// TestCrashDuringWritesNeverCorrupts takes crash images of the database
// while writers run, keeping a random part of what was not synced; every
// image must open with no damaged record.
func TestCrashDuringWritesNeverCorrupts(t *testing.T) {
	fs := vfs.NewCrashableMem()
	db := openDB(t, fs)
	defer db.Close()
	c, _, _ := Open(db, &Options{MaxPeers: 32})
	p := ids(t, 48)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			hello(t, c, p[i%len(p)], t0.Add(time.Duration(i)*time.Second))
			c.Count(p[(i*7)%len(p)], CountServed)
			if i%10 == 0 {
				if err := c.Flush(); err != nil {
					t.Error(err)
				}
			}
		}
	})
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10 {
		time.Sleep(2 * time.Millisecond) // let the writer run; what it reaches does not matter
		img := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rng})
		cdb := openDB(t, img)
		cc, damaged, err := Open(cdb, nil)
		if err != nil || len(damaged) != 0 {
			t.Fatalf("crash image: %v, damaged %v", err, damaged)
		}
		if cc.Len() > 32 {
			t.Fatalf("crash image holds %d records, over the capacity", cc.Len())
		}
		cdb.Close()
	}
	close(stop)
	wg.Wait()
	c.Close()
}

func BenchmarkCount(b *testing.B) {
	db := openDB(b, vfs.NewMem())
	defer db.Close()
	c, _, _ := Open(db, nil)
	p := newID(b)
	hello(b, c, p, t0)
	b.ReportAllocs()
	for b.Loop() {
		c.Count(p, CountServed)
	}
}

func BenchmarkCountParallel(b *testing.B) {
	db := openDB(b, vfs.NewMem())
	defer db.Close()
	c, _, _ := Open(db, nil)
	p := ids(b, 64)
	for _, id := range p {
		hello(b, c, id, t0)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			c.Count(p[i%len(p)], CountServed)
			i++
		}
	})
}

func BenchmarkFlush10000(b *testing.B) {
	db := openDB(b, vfs.NewMem())
	defer db.Close()
	c, _, _ := Open(db, nil)
	p := ids(b, DefaultMaxPeers)
	for _, id := range p {
		hello(b, c, id, t0)
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		for _, id := range p {
			c.Count(id, CountServed)
		}
		b.StartTimer()
		if err := c.Flush(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUpdateNewAtCapacity adds a new record to a full cache of
// DefaultMaxPeers: one eviction and one write each.
func BenchmarkUpdateNewAtCapacity(b *testing.B) {
	db := openDB(b, vfs.NewMem())
	defer db.Close()
	c, _, _ := Open(db, nil)
	p := ids(b, DefaultMaxPeers+1024)
	for i, id := range p[:DefaultMaxPeers] {
		hello(b, c, id, t0.Add(time.Duration(i)*time.Second))
	}
	b.ReportAllocs()
	i := DefaultMaxPeers
	for b.Loop() {
		hello(b, c, p[i%len(p)], t0.Add(time.Duration(i)*time.Second))
		i++
	}
}

// TestRoomRefusesAWrite: while Options.Room refuses (a full disk), Update
// and Flush fail with its error and write nothing; the counts stay dirty,
// and the first Flush once room is back writes them.
func TestRoomRefusesAWrite(t *testing.T) {
	db := openDB(t, vfs.NewMem())
	defer db.Close()
	full := errors.New("disk full")
	refuse := false
	c, _, err := Open(db, &Options{Room: func(n int) error {
		if n <= 0 {
			t.Errorf("Room asked for %d bytes", n)
		}
		if refuse {
			return full
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	p := newID(t)
	hello(t, c, p, t0)
	refuse = true
	c.Count(p, CountServed)
	if err := c.Flush(); !errors.Is(err, full) {
		t.Fatalf("Flush while full: %v, want %v", err, full)
	}
	if r, _ := stored(t, db, p); r.Served != 0 {
		t.Fatalf("a refused Flush wrote %d served", r.Served)
	}
	if err := c.Update(p, true, func(r *Record) { r.Refused++ }); !errors.Is(err, full) {
		t.Fatalf("Update while full: %v, want %v", err, full)
	}
	refuse = false
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if r, _ := stored(t, db, p); r.Served != 1 || r.Refused != 1 {
		t.Fatalf("after room came back: served %d refused %d, want 1 and 1", r.Served, r.Refused)
	}
}
