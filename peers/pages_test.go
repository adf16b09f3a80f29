package peers

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/proto"
)

// TestFingerprintCapAtTheBound: a responder counts at most
// proto.MaxFingerprintIDs ids for one fingerprint (ADR 0052), the real
// constant, through Page.Read as the node serves it: a log of exactly
// that many ids is counted whole, its sum the ids' sum, and not "more";
// one id more is counted to the bound and said to be "more". The events
// carry one signature each, not theirs: the log checks only an id's form
// when it appends, and a fingerprint reads only ids.
func TestFingerprintCapAtTheBound(t *testing.T) {
	db, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem(), Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l, err := eventlog.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	e0, err := eventlog.New(key, time.Now(), "note", jsontext.Value(`{}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	var want [32]byte
	add := func(k int) {
		t.Helper()
		evs := make([]*eventlog.Event, k)
		for i := range evs {
			var id [32]byte
			_, _ = rand.Read(id[:])
			e := *e0
			e.ID = hex.EncodeToString(id[:])
			evs[i] = &e
			eventlog.AddID(&want, id)
		}
		if added, err := l.Append(evs); err != nil || len(added) != k {
			t.Fatalf("appended %d of %d: %v", len(added), k, err)
		}
	}
	pool, err := limits.NewPool(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	whole := &proto.SyncRequest{Limit: 256, IDs: &proto.IDRange{From: strings.Repeat("0", proto.IDHexLen)}, Fingerprint: true}
	fingerprint := func() *proto.SyncResponse {
		t.Helper()
		resp, done, err := (&Page{pool: pool, tier: limits.TierNew}).Read(l, whole)
		if err != nil {
			t.Fatal(err)
		}
		done()
		return resp
	}
	add(proto.MaxFingerprintIDs)
	if r := fingerprint(); r.Count != proto.MaxFingerprintIDs || r.More || r.Fingerprint != hex.EncodeToString(want[:]) {
		t.Fatalf("at the bound: count %d, more %v, fingerprint the ids' sum %v", r.Count, r.More,
			r.Fingerprint == hex.EncodeToString(want[:]))
	}
	add(1)
	if r := fingerprint(); r.Count != proto.MaxFingerprintIDs || !r.More {
		t.Fatalf("one past the bound: count %d, more %v", r.Count, r.More)
	}
}

// TestListIDsAtTheBound: a responder lists at most proto.MaxListIDs ids
// for one id list request (ADR 0057), the real constant, through Page.Read
// as the node serves it: a range of exactly that many is listed whole and
// not "more", one id more is listed to the bound and "more"; a page budget
// smaller than the bound's bytes lists what it holds at ListIDBytes an id.
// The answer encodes (ascending, within the proto's bounds).
func TestListIDsAtTheBound(t *testing.T) {
	db, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem(), Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l, err := eventlog.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	e0, err := eventlog.New(key, time.Now(), "note", jsontext.Value(`{}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	add := func(k int) {
		t.Helper()
		evs := make([]*eventlog.Event, k)
		for i := range evs {
			var id [32]byte
			_, _ = rand.Read(id[:])
			e := *e0
			e.ID = hex.EncodeToString(id[:])
			evs[i] = &e
		}
		if added, err := l.Append(evs); err != nil || len(added) != k {
			t.Fatalf("appended %d of %d: %v", len(added), k, err)
		}
	}
	pool, err := limits.NewPool(16 << 20)
	if err != nil {
		t.Fatal(err)
	}
	whole := &proto.SyncRequest{Limit: 256, IDs: &proto.IDRange{From: strings.Repeat("0", proto.IDHexLen)}, IDList: true}
	list := func(budget int) *proto.SyncResponse {
		t.Helper()
		if !pool.Reserve(limits.TierNew, int64(2*budget)) {
			t.Fatal("no room in the pool")
		}
		pg := &Page{pool: pool, tier: limits.TierNew, held: int64(2 * budget), Budget: budget}
		resp, done, err := pg.Read(l, whole)
		if err != nil {
			t.Fatal(err)
		}
		defer done()
		if len(resp.Events) != 0 || resp.Next != l.Head() {
			t.Fatalf("an id list with %d events, next %d", len(resp.Events), resp.Next)
		}
		if _, err := proto.Marshal(resp); err != nil {
			t.Fatalf("the answer does not encode: %v", err)
		}
		return resp
	}
	add(proto.MaxListIDs)
	if r := list(StrangerPageBytes); len(r.IDs) != proto.MaxListIDs || r.More {
		t.Fatalf("at the bound: %d ids, more %v", len(r.IDs), r.More)
	}
	add(1)
	if r := list(StrangerPageBytes); len(r.IDs) != proto.MaxListIDs || !r.More {
		t.Fatalf("one past the bound: %d ids, more %v", len(r.IDs), r.More)
	}
	if r := list(MinPageBytes); len(r.IDs) != MinPageBytes/proto.ListIDBytes || !r.More {
		t.Fatalf("a budget of %d bytes: %d ids, more %v", MinPageBytes, len(r.IDs), r.More)
	}
	if held := pool.Held(limits.TierNew); held != 0 {
		t.Fatalf("%d bytes held after the answers were written", held)
	}
}
