package peers

import (
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/peercache"
	"github.com/wats-network/wats/proto"
)

// HelloLimits are the rates of l that this node's hello advertises, so
// that peers pace themselves (ADR 0024): requests a minute by type.
func HelloLimits(l limits.Config) *proto.HelloLimits {
	return &proto.HelloLimits{HelloPerMin: int64(l.HelloPerMin), SyncPerMin: int64(l.SyncPerMin),
		ReplicatePerMin: int64(l.ReplicatePerMin), ReportPerMin: int64(l.ReportPerMin)}
}

// maxHelloRetries bounds SetHello's tries: each retry follows a
// disconnection and a reconnection of the peer within one hello.
const maxHelloRetries = 4

// SetHello records p's completed hello h at now (mono): in its live state
// (its features, its first hello of this run for ADR 0014's ten minutes,
// the pacer of its advertised sync rate) and, if it has a record, in the
// peer cache (batched: its first write was synced). A hello alone earns no
// record (ADR 0030). It returns the state it was recorded in and whether
// it is p's first hello of this stay; err is a failed write of the record,
// the hello recorded all the same.
//
// The hello is set under p's stripe lock, in the state published then:
// one got before a late disconnection notice dropped it is not the one the
// node reads any more, and a hello recorded there would be lost (the peer
// served as one that never said hello). connect returns p's state (Connect
// on a stream's arrival); linked reports whether p is connected. A peer
// that is not connected keeps the hello in a state no one reads.
func (t *Table[L]) SetHello(p peer.ID, h *proto.Hello, connect func() *Peer[L], linked func(peer.ID) bool,
	now time.Time, mono time.Duration) (st *Peer[L], first bool, err error) {
	st = connect()
	set := false
	for range maxHelloRetries {
		if first, set = t.setHelloIfLive(st, h, linked, mono); set {
			break
		}
		st = connect()
	}
	if !set {
		first = st.setHello(h, mono)
	}
	if st.persisted.Load() {
		err = t.cache.Update(p, false, func(r *peercache.Record) {
			r.LastSeen, r.LastHello = now.UTC(), now.UTC()
			r.Agent, r.Features = h.Agent, cacheableFeatures(h.Features)
			r.MergeAddrs(cacheableAddrs(h.Listen))
		})
	}
	return st, first, err
}

// setHelloIfLive sets h in st if st is its peer's published state, under
// the peer's stripe lock; ok is false if st was dropped and the peer is
// connected again (another state is the live one). A peer that is not
// connected is set in st alone.
func (t *Table[L]) setHelloIfLive(st *Peer[L], h *proto.Hello, linked func(peer.ID) bool, mono time.Duration) (first, ok bool) {
	mu := t.stripe(st.id)
	mu.Lock()
	defer mu.Unlock()
	if t.Get(st.id) != st && linked(st.id) {
		return false, false
	}
	return st.setHello(h, mono), true
}

// Pacer returns the pacer of this node's sync requests to p; an unlimited
// one if p is not connected or has not completed hello.
func (t *Table[L]) Pacer(p peer.ID) *limits.Pacer {
	if st := t.Get(p); st != nil {
		if pc := st.Pacer(); pc != nil {
			return pc
		}
	}
	return limits.NewPacer(0)
}

// Cursor returns the sync cursor into p's log (the one owner of it): its
// record's, else its state's (a connected peer without a record), else 0.
func (t *Table[L]) Cursor(p peer.ID) core.Cursor {
	if st := t.Get(p); st != nil && !st.persisted.Load() {
		return st.runCursor()
	}
	return t.cache.Cursor(p)
}

// SaveCursor stores the sync cursor into p's log: in its record (synced when
// durable, docs/design.md §10), or, for a connected peer without one, in
// its state, from which the record it earns takes it. A disconnected peer
// without a record has nothing to keep it in.
func (t *Table[L]) SaveCursor(p peer.ID, cursor core.Cursor, durable bool) error {
	// Set in the state even when the peer has a record: a record being
	// written (Table.Value) reads the state's cursor as it is written.
	if st := t.Get(p); st != nil && st.setRunCursor(cursor) {
		return nil
	}
	if !t.cache.Has(p) {
		return nil
	}
	return t.cache.Update(p, durable, func(r *peercache.Record) { r.Cursor = cursor })
}

// Bounds on what the peer cache keeps of a hello, so that a record costs at
// most a few KiB whatever a peer sends (proto allows 32 features of 256
// bytes and 16 addresses of 1 KiB).
const (
	maxCachedFeatures     = 16
	maxCachedFeatureBytes = 64
	maxCachedAddrBytes    = 256
)

// cacheableFeatures returns the features worth remembering: at most
// maxCachedFeatures, each at most maxCachedFeatureBytes.
func cacheableFeatures(fs []string) []string {
	var out []string
	for _, f := range fs {
		if len(out) == maxCachedFeatures {
			break
		}
		if len(f) <= maxCachedFeatureBytes {
			out = append(out, f)
		}
	}
	return out
}

// cacheableAddrs returns the listen addresses that parse as multiaddrs of
// at most maxCachedAddrBytes, in their canonical form.
func cacheableAddrs(ss []string) []string {
	var out []string
	for _, s := range ss {
		a, err := ma.NewMultiaddr(s)
		if err != nil {
			continue
		}
		if s := a.String(); len(s) <= maxCachedAddrBytes {
			out = append(out, s)
		}
	}
	return out
}

// Serves reports whether connected peer p advertised feature in its hello
// (proto.FeatureSyncIDs, say); false before a hello.
func (t *Table[L]) Serves(p peer.ID, feature string) bool {
	if st := t.Get(p); st != nil {
		if h := st.Hello(); h != nil {
			return slices.Contains(h.Features, feature)
		}
	}
	return false
}
