package node

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"

	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/peercache"
	"github.com/wats-network/wats/proto"
)

// ErrWrongNetwork is returned by Connect and greet when the peer is on
// another network; the peer is then disconnected.
var ErrWrongNetwork = errors.New("node: peer is on another network")

// greet sends this node's hello to p and records the peer's answer. It runs
// once per new connection; a peer of another network is disconnected.
func (n *Node) greet(ctx context.Context, p peer.ID) error {
	n.mu.Lock()
	st, ok := n.mu.peers[p]
	if !ok {
		st = &peerState{}
		n.mu.peers[p] = st
	}
	if g := st.greeting; g != nil {
		// A hello to p is in flight: wait for its outcome.
		n.mu.Unlock()
		select {
		case <-g.done:
			return g.err
		case <-ctx.Done():
			return fmt.Errorf("node: waiting for hello with %s: %w", p, ctx.Err())
		}
	}
	g := &greeting{done: make(chan struct{})}
	st.greeting = g
	n.mu.Unlock()
	g.err = n.sendHello(ctx, p)
	n.mu.Lock()
	st.greeting = nil
	n.mu.Unlock()
	close(g.done)
	return g.err
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
	return nil
}

// recordHello stores a peer's completed hello: in the run state, in the
// peerstore (its listen addresses, for redials) and in the peer cache. If
// the peer's head is past the cursor synced so far, a sync starts.
func (n *Node) recordHello(p peer.ID, h *proto.Hello) {
	now := n.now()
	n.mu.Lock()
	st, ok := n.mu.peers[p]
	if !ok {
		st = &peerState{}
		n.mu.peers[p] = st
	}
	first := st.hello == nil
	st.hello, st.helloAt = h, now
	if rate := peerSyncRate(h); st.pacer == nil || st.pacer.Rate().PerMin() != rate {
		st.pacer = limits.NewPacer(rate)
	}
	n.mu.Unlock()
	if first {
		n.log.Info("peer completed hello", "peer", p, "agent", h.Agent, "head", h.Head)
	}

	n.host.Peerstore().AddAddrs(p, parseAddrs(h.Listen), peerstore.RecentlyConnectedAddrTTL)
	// A peer's first record is synced at once: that the node met it is
	// what gives it a reputation after a restart (ADR 0014), and it happens
	// once per peer, not per request. Later hellos ride on batched writes.
	_, known := n.peers.Get(p)
	err := n.peers.Update(p, !known, func(r *peercache.Record) {
		if r.FirstSeen.IsZero() {
			r.FirstSeen = now.UTC()
		}
		r.LastSeen, r.LastHello = now.UTC(), now.UTC()
		r.Agent, r.Features = h.Agent, cacheableFeatures(h.Features)
		r.MergeAddrs(cacheableAddrs(h.Listen))
	})
	if err != nil {
		n.log.Warn("peer cache write failed", "peer", p, "err", err)
	}
	if head := headOf(h); head > n.peers.Cursor(p) {
		n.triggerSync(p)
	}
}

// headOf returns the head cursor of a hello; 0 if it is not a decimal
// uint64 (the decoder already refuses such hellos).
func headOf(h *proto.Hello) uint64 {
	v, err := strconv.ParseUint(h.Head, 10, 64)
	if err != nil {
		return 0
	}
	return v
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
	n.mu.Lock()
	defer n.mu.Unlock()
	if st, ok := n.mu.peers[p]; ok && st.pacer != nil {
		return st.pacer
	}
	return limits.NewPacer(0)
}
