package peercache

import (
	"fmt"
	"github.com/wats-network/wats/core"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/libp2p/go-libp2p/core/peer"
)

// fakeID is a cheap distinct peer id for tests that need many: the cache
// keys records by the id's bytes and never parses them.
func fakeID(prefix string, i int) peer.ID { return peer.ID(fmt.Sprintf("%s-%07d", prefix, i)) }

// TestEvictionKeepsValuedPeers: a cache of 64 holds 16 real peers, each
// strong on one trait only (known longest, most useful, most recently
// useful, alone in its address group); 8,000 Sybil records, each seen
// more recently than any real peer and each having given one event from
// one address group, pass through it. Every real peer is still there.
// (The node gives no record for a hello: ADR 0030. These Sybils each gave
// an event, the cheapest value an id can show.)
func TestEvictionKeepsValuedPeers(t *testing.T) {
	db := openDB(t, vfs.NewMem())
	defer db.Close()
	c, _, err := Open(db, &Options{MaxPeers: 64})
	if err != nil {
		t.Fatal(err)
	}
	real := make([]peer.ID, 16)
	for i := range real {
		real[i] = fakeID("real", i)
		err := c.Update(real[i], false, func(r *Record) {
			r.FirstSeen = t0.Add(-time.Hour)
			r.LastSeen = t0
			r.Addrs = []string{"/ip4/10.1.0.1/tcp/4001"} // the Sybils' group
			r.Events = 1
			switch i / 4 {
			case 0: // known longest
				r.FirstSeen = t0.Add(-time.Duration(100+i) * 24 * time.Hour)
			case 1: // most useful
				r.Events, r.LastUseful = 1000, t0.Add(-time.Hour)
			case 2: // most recently useful: later than any Sybil
				r.LastUseful = t0.Add(24 * time.Hour)
			case 3: // its own address group
				r.Addrs = []string{fmt.Sprintf("/ip4/192.%d.0.1/tcp/4001", 100+i)}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range 8_000 {
		now := t0.Add(time.Duration(i+1) * time.Second)
		err := c.Update(fakeID("sybil", i), false, func(r *Record) {
			r.FirstSeen, r.LastSeen, r.LastUseful = now, now, now
			r.Addrs = []string{fmt.Sprintf("/ip4/10.1.%d.%d/tcp/4001", i>>8&255, i&255)}
			r.Events = 1
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if c.Len() > 64 {
		t.Fatalf("%d records, cap 64", c.Len())
	}
	for i, p := range real {
		if _, ok := c.Get(p); !ok {
			t.Errorf("real peer %d (trait %d) was evicted", i, i/4)
		}
	}
	if c.Evicted() < 8_000-64+16 {
		t.Errorf("only %d evicted", c.Evicted())
	}
}

// TestChooseEvictions: each trait protects its best n; the others go least
// recently seen first; with too few unprotected, the protected make up the
// rest, least recently seen first.
func TestChooseEvictions(t *testing.T) {
	mk := func(name string, lastSeenMin int, edit func(*Record)) *entry {
		e := &entry{id: peer.ID(name)}
		e.rec.FirstSeen = t0
		e.rec.LastSeen = t0.Add(time.Duration(lastSeenMin) * time.Minute)
		e.rec.Addrs = []string{"/ip4/10.0.0.1/tcp/1"}
		if edit != nil {
			edit(&e.rec)
		}
		return e
	}
	old := mk("old", 1, func(r *Record) { r.FirstSeen = t0.Add(-time.Hour) })
	useful := mk("useful", 2, func(r *Record) { r.Bytes = 1 << 20 })
	recent := mk("recent", 3, func(r *Record) { r.LastUseful = t0 })
	group := mk("group", 4, func(r *Record) { r.Addrs = []string{"/ip6/2001:db8::1/tcp/1"} })
	a, b, c := mk("a", 5, nil), mk("b", 6, nil), mk("c", 7, nil) // c: the latest in 10.0/16
	all := []*entry{c, a, useful, group, b, recent, old}
	names := func(es []*entry) string {
		s := ""
		for _, e := range es {
			s += string(e.id) + " "
		}
		return s
	}
	for _, tc := range []struct {
		k, n int
		want string
	}{
		{2, 1, "group a "},                       // one group protected: c, the latest of 10.0/16
		{3, 1, "group a b "},                     // old, useful, recent and c are protected
		{1, 2, "b "},                             // two of each: a (by id) is old too, the v6 group has its own
		{2, 2, "b old "},                         // then the protected, least recently seen first
		{3, 0, "old useful recent "},             // nothing protected: least recently seen
		{0, 1, ""},                               // nothing to evict
		{7, 1, "old useful recent group a b c "}, // everything
	} {
		got := names(chooseEvictions(append([]*entry(nil), all...), tc.k, tc.n))
		if tc.k == 7 {
			if len(got) != len(tc.want) {
				t.Errorf("k=%d n=%d: %q, want all", tc.k, tc.n, got)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("k=%d n=%d: %q, want %q", tc.k, tc.n, got, tc.want)
		}
	}
	if g := addrGroup([]string{"not an addr", "/dns4/example.com/tcp/1", "/ip4/203.0.113.9/tcp/1"}); g != "203.0.0.0/16" {
		t.Errorf("addrGroup: %q", g)
	}
	if g := addrGroup([]string{"/dns4/example.com/tcp/1"}); g != "" {
		t.Errorf("addrGroup without an IP: %q", g)
	}
	// The observed address wins over what the hello claims.
	claimed := &Record{Addrs: []string{"/ip4/198.18.7.1/tcp/1"}, RemoteAddr: "/ip4/10.1.2.3/tcp/9"}
	if g := recordGroup(claimed); g != "10.1.0.0/16" {
		t.Errorf("recordGroup with a remote address: %q, want its group", g)
	}
	claimed.RemoteAddr = ""
	if g := recordGroup(claimed); g != "198.18.0.0/16" {
		t.Errorf("recordGroup without one: %q, want the claimed address's group", g)
	}
}

// TestClaimedAddrsProtectNothing: ids that claim addresses in many groups
// but connect from one share one group's protection; a real peer seen from
// its own group keeps its record.
func TestClaimedAddrsProtectNothing(t *testing.T) {
	sybils := make([]*entry, 0, 40)
	for i := range 40 {
		e := &entry{id: peer.ID(fmt.Sprintf("sybil-%02d", i))}
		e.rec.FirstSeen, e.rec.LastSeen = t0, t0.Add(time.Hour+time.Duration(i)*time.Second)
		e.rec.Addrs = []string{fmt.Sprintf("/ip4/198.%d.0.1/tcp/1", 18+i)} // 40 claimed groups
		e.rec.RemoteAddr = "/ip4/10.9.9.9/tcp/4001"
		sybils = append(sybils, e)
	}
	real := &entry{id: "real"}
	// Known for less long and seen less recently than every sybil: only
	// its address group protects it.
	real.rec.FirstSeen, real.rec.LastSeen = t0.Add(time.Second), t0.Add(time.Second)
	real.rec.RemoteAddr = "/ip4/192.0.2.7/tcp/4001"
	all := append([]*entry{real}, sybils...)
	evicted := chooseEvictions(all, 30, 8)
	for _, e := range evicted {
		if e == real {
			t.Fatal("the real peer's record was evicted; the sybils' claimed groups protected them")
		}
	}
	if len(evicted) != 30 {
		t.Fatalf("%d evicted, want 30", len(evicted))
	}
}

// TestOlderRecordsMigrate: records written before value history are kept
// only if they hold a sync cursor or solved challenges (marked "migrated",
// rewritten in this version's format); the rest, a hello's worth, are
// deleted at open and counted.
func TestOlderRecordsMigrate(t *testing.T) {
	db := openDB(t, vfs.NewMem())
	defer db.Close()
	cursor, solved, helloOnly := newID(t), newID(t), newID(t)
	for p, v := range map[peer.ID]string{
		cursor:    `{"first_seen":"2026-01-02T03:04:05Z","last_seen":"2026-01-02T03:04:05Z","cursor":"7"}`,
		solved:    `{"first_seen":"2026-01-02T03:04:05Z","last_seen":"2026-01-02T03:04:05Z","solved":2}`,
		helloOnly: `{"first_seen":"2026-01-02T03:04:05Z","last_seen":"2026-01-02T03:04:05Z","served":40}`,
	} {
		if err := db.Set(key(p), []byte(v), pebble.Sync); err != nil {
			t.Fatal(err)
		}
	}
	c, _, err := Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Len() != 2 || c.Migrated() != 1 || c.Has(helloOnly) {
		t.Fatalf("len %d, migrated %d, hello-only kept %v", c.Len(), c.Migrated(), c.Has(helloOnly))
	}
	if _, ok := stored(t, db, helloOnly); ok {
		t.Fatal("the hello-only record is still stored")
	}
	for _, p := range []peer.ID{cursor, solved} {
		if r, _ := c.Get(p); r.Value != ValueMigrated || r.V != RecordVersion || !c.MetInEarlierRun(p) {
			t.Fatalf("migrated record %+v", r)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if r, ok := stored(t, db, cursor); !ok || r.V != RecordVersion || r.Cursor != 7 {
		t.Fatalf("migrated record not rewritten: %+v", r)
	}
	c, _, _ = Open(db, nil)
	if c.Len() != 2 || c.Migrated() != 0 {
		t.Fatalf("second open: len %d, migrated %d", c.Len(), c.Migrated())
	}
}

// TestAdd: Add adds every count and marks the record useful; a peer without
// a record gets none.
func TestAdd(t *testing.T) {
	db := openDB(t, vfs.NewMem())
	defer db.Close()
	c, _, _ := Open(db, nil)
	p := newID(t)
	hello(t, c, p, t0)
	c.Add(p, core.Counts{Served: 1, Refused: 2, Challenged: 3, Solved: 4, Misses: 5, Invalid: 6, Failed: 7, Timeouts: 8, Events: 9, Bytes: 10}, t0.Add(time.Minute))
	c.Add(p, core.Counts{Served: 1}, t0.Add(time.Hour)) // not useful: LastUseful stays
	r, _ := c.Get(p)
	if r.Served != 2 || r.Refused != 2 || r.Challenged != 3 || r.Solved != 4 || r.Misses != 5 || r.Invalid != 6 ||
		r.Failed != 7 || r.Timeouts != 8 || r.Events != 9 || r.Bytes != 10 || !r.LastUseful.Equal(t0.Add(time.Minute)) {
		t.Fatalf("after Add: %+v", r)
	}
	stranger := newID(t)
	c.Add(stranger, core.Counts{Events: 100}, t0)
	if c.Has(stranger) || c.Len() != 1 {
		t.Fatal("Add created a record")
	}
}
