package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"

	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/peercache"
	"github.com/wats-network/wats/proto"

	"github.com/wats-network/wats/core"
)

// ErrWrongNetwork is returned by Connect and greet when the peer is on
// another network; the peer is then disconnected.
var ErrWrongNetwork = errors.New("node: peer is on another network")

// greet sends this node's hello to p and records the peer's answer. It runs
// once per new connection (a second caller waits for the hello in flight);
// a peer of another network is disconnected.
func (n *Node) greet(ctx context.Context, p peer.ID) error {
	st := n.peerOf(p)
	g, mine := st.greet()
	if !mine {
		// A hello to p is in flight: wait for its outcome.
		select {
		case <-g.done:
			return g.err
		case <-ctx.Done():
			return fmt.Errorf("node: waiting for hello with %s: %w", p, ctx.Err())
		}
	}
	err := n.sendHello(ctx, p)
	st.endGreeting(g, err)
	return err
}

// greeting is a hello in flight; err is valid once done is closed.
type greeting struct {
	done chan struct{}
	err  error
}

// sendHello sends this node's hello to p and records the answer.
func (n *Node) sendHello(ctx context.Context, p peer.ID) error {
	resp, err := n.call(ctx, p, n.ownHello())
	var perr *proto.Error
	switch {
	case errors.As(err, &perr) && perr.Code == proto.CodeWrongNetwork:
		n.m.wrongNetwork()
		n.dropWrongNetwork(p)
		return fmt.Errorf("%w: %s answered: %s (this node is on %q; to join that network, set network in config.toml)",
			ErrWrongNetwork, p, perr.Message, n.cfg.Network)
	case err != nil:
		return fmt.Errorf("node: hello to %s: %w", p, err)
	case resp.Hello == nil:
		return fmt.Errorf("node: hello to %s: answered with %q", p, resp.Type)
	case resp.Hello.Network != n.cfg.Network:
		n.m.wrongNetwork()
		n.dropWrongNetwork(p)
		return fmt.Errorf("%w: %s is on network %q, this node on %q (to join that network, set network in config.toml)",
			ErrWrongNetwork, p, resp.Hello.Network, n.cfg.Network)
	}
	n.recordHello(p, resp.Hello)
	n.peerOf(p).heardUs.Store(true)
	return nil
}

// recordHello stores a peer's completed hello: in its run state (its
// features, its first hello of this run for ADR 0014's ten minutes, the
// pacer of its advertised sync rate), in the peerstore (its listen
// addresses, for redials) and, if it has a record, in the peer cache. A
// hello alone earns no record (ADR 0030). If the peer's head is past the
// cursor synced so far, a sync starts.
func (n *Node) recordHello(p peer.ID, h *proto.Hello) {
	now := n.now()
	st, first := n.setLiveHello(n.peerOf(p), h, n.mono(now))
	if first {
		n.plog.Info(p, "hello", "peer completed hello", "peer", p, "agent", proto.TruncateText(h.Agent), "head", h.Head)
	}

	n.host.Peerstore().AddAddrs(p, parseAddrs(h.Listen), peerstore.RecentlyConnectedAddrTTL)
	if st.persisted.Load() {
		// Batched: the record exists; its first write was synced.
		err := n.peers.Update(p, false, func(r *peercache.Record) {
			r.LastSeen, r.LastHello = now.UTC(), now.UTC()
			r.Agent, r.Features = h.Agent, cacheableFeatures(h.Features)
			r.MergeAddrs(cacheableAddrs(h.Listen))
		})
		if err != nil {
			n.log.Warn("peer cache write failed", "peer", p, "err", err)
		}
	}
	if head := h.Head; head > n.cursorOf(p) {
		n.triggerSync(p)
	}
	n.announceHeads(st, h)
}

// setLiveHello records h (peerState.setHello) in the live state of st's
// peer, st or the one that replaced it, and returns that state. It is set
// under the peer's stripe lock, in the state published then: st, got
// before a late disconnection notice dropped it (dropGonePeerState), is
// not the one the node reads any more, and a hello recorded there would be
// lost (the peer served as one that never said hello). A peer that is not
// connected keeps the hello in st, which no one reads.
func (n *Node) setLiveHello(st *peerState, h *proto.Hello, mono time.Duration) (live *peerState, first bool) {
	for range maxHelloRetries {
		if first, ok := n.setHelloIfLive(st, h, mono); ok {
			return st, first
		}
		st = n.peerOf(st.id)
	}
	return st, st.setHello(h, peerSyncRate(h), mono)
}

// maxHelloRetries bounds setLiveHello's tries: each retry follows a
// disconnection and a reconnection of the peer within one hello.
const maxHelloRetries = 4

// setHelloIfLive sets h in st if st is p's published state, under p's
// stripe lock; ok is false if st was dropped and p is connected again
// (another state is the live one). A peer that is not connected is set in
// st alone.
func (n *Node) setHelloIfLive(st *peerState, h *proto.Hello, mono time.Duration) (first, ok bool) {
	mu := n.run.stripe(st.id)
	mu.Lock()
	defer mu.Unlock()
	if n.run.get(st.id) != st && n.linked(st.id) {
		return false, false
	}
	return st.setHello(h, peerSyncRate(h), mono), true
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
	for _, a := range parseAddrs(ss) {
		if s := a.String(); len(s) <= maxCachedAddrBytes {
			out = append(out, s)
		}
	}
	return out
}

// peerSyncRate is the sync rate a peer advertised in hello, in requests a
// minute, clamped to what the limits package handles; 0 (unlimited, or not
// said by an older peer) when absent.
func peerSyncRate(h *proto.Hello) int {
	if h.Limits == nil || h.Limits.SyncPerMin <= 0 {
		return 0
	}
	return int(min(h.Limits.SyncPerMin, limits.MaxPerMin))
}

// pacerFor returns the pacer of p's sync requests; an unlimited one if p has
// not completed hello.
func (n *Node) pacerFor(p peer.ID) *limits.Pacer {
	if st := n.run.get(p); st != nil {
		if pc := st.pacer(); pc != nil {
			return pc
		}
	}
	return limits.NewPacer(0)
}

// cursorOf returns the sync cursor into p's log: its record's, else its run
// state's (a peer without a record), else 0.
func (n *Node) cursorOf(p peer.ID) core.Cursor {
	if st := n.run.get(p); st != nil && !st.persisted.Load() {
		return st.runCursor()
	}
	return n.peers.Cursor(p)
}

// saveCursor stores the sync cursor into p's log: in its record (synced when
// durable, docs/design.md §10), or, for a peer without one, in its run state.
func (n *Node) saveCursor(p peer.ID, cursor core.Cursor, durable bool) error {
	if st := n.run.get(p); st != nil && !st.persisted.Load() {
		st.setRunCursor(cursor)
		return nil
	}
	if !n.peers.Has(p) {
		return nil // disconnected without a record: nothing to keep it in
	}
	return n.peers.Update(p, durable, func(r *peercache.Record) { r.Cursor = cursor })
}
