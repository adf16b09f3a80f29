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
