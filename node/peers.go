package node

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"golang.org/x/sync/singleflight"

	"github.com/wats-network/wats/catchup"
	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/p2p"
	"github.com/wats-network/wats/peers"
)

// The node's peers are a peers.Table (ADR 0030, ADR 0046): it owns all
// the node knows of each peer and decides about them; the node carries out
// its verdicts here (tags, bans, closes, metrics, logs) and keeps, per
// peer, only its own plumbing (link).

// peerState is the state of one peer in this run (peers.Peer), with the
// node's plumbing for it.
type peerState = peers.Peer[link]

// link is the node's plumbing for one peer (peers.Peer.Link): its streams
// against the caps of its tier, the hello in flight, the syncs from it and
// the announcer of heads to it. It lives as long as the peer's state.
type link struct {
	// hello is this node's own hello to the peer in flight (greet).
	hello singleflight.Group
	// throttleLogged holds, per request type, the monotonic reading plus
	// one of its last "peer throttled" line: within limits.LogInterval the
	// line is suppressed here, without the LogCap's lock.
	throttleLogged [core.NumRequests]atomic.Int64
	// gap is the state of the syncs from the peer that gossip's gaps
	// start (syncGap).
	gap catchup.Gap
	// announcing: this node's announcer of its heads to the peer runs,
	// until announceStop is called (once the state is dropped: stopped);
	// headsIn is the peer's Heads stream being read, nil for none
	// (heads.go).
	announcing   atomic.Bool
	announceStop atomic.Pointer[context.CancelFunc]
	stopped      atomic.Bool
	headsIn      atomic.Pointer[network.Stream]
}

// mono is the node's monotonic reading at now: nanoseconds since New, from
// now's monotonic clock (time.Now has one, so a step of the wall clock does
// not move it), or from Options.Mono when set.
func (n *Node) mono(now time.Time) time.Duration {
	if n.o.Mono != nil {
		return n.o.Mono()
	}
	return now.Sub(n.epoch)
}

// clock returns the wall clock and the monotonic reading of the moment.
func (n *Node) clock() (time.Time, time.Duration) {
	now := n.now()
	return now, n.mono(now)
}

// peerState returns p's state, creating it on its first connection or
// stream (peers.Table.Connect); dir is the direction of the connection
// that brought it. It carries out the verdict: a stranger evicted to make
// room is banned and closed.
func (n *Node) peerState(p peer.ID, dir network.Direction) *peerState {
	if st := n.run.Get(p); st != nil {
		return st
	}
	remote := ""
	if conns := n.host.Network().ConnsToPeer(p); len(conns) > 0 {
		remote = conns[0].RemoteMultiaddr().String()
	}
	now, mono := n.clock()
	c := n.run.Connect(p, dir, remote, now, mono)
	if !c.Created {
		return c.Peer
	}
	if v := c.Evicted; v != nil {
		t := v.Tier()
		n.m.StrangerEvicted(t)
		n.plog.Debug(v.ID(), "evicted", "stranger evicted to make room for a newcomer", "peer", v.ID(), "tier", t)
		n.ban(v.ID(), c.Ban, 0)
	}
	p2p.TagTier(n.host, p, c.Peer.Tier())
	if !n.linked(p) {
		// A stream's handler ran after the peer's last connection closed
		// (and its notice went by): the state would never be dropped.
		// Leave checks again under the peer's stripe lock.
		n.dropPeerState(p, true)
	}
	return c.Peer
}

// peerOf returns the state of p for a request on one of its streams.
func (n *Node) peerOf(p peer.ID) *peerState {
	if st := n.run.Get(p); st != nil {
		return st
	}
	// A stream can be handled before the connection notice ran.
	return n.peerState(p, p2p.Direction(n.host, p))
}

// helloed reports whether p is connected and completed hello on this stay
// (peers.Peer.Helloed).
func (n *Node) helloed(p peer.ID) bool {
	st := n.run.Get(p)
	return st != nil && st.Helloed()
}

// dropPeerState forgets p's state (peers.Table.Leave), whether or not p
// is connected (at Close), or, with gone, only once its last connection
// closed.
func (n *Node) dropPeerState(p peer.ID, gone bool) {
	var linked func(peer.ID) bool
	if gone {
		linked = n.linked
	}
	now, mono := n.clock()
	if st := n.run.Leave(p, linked, now, mono); st != nil {
		n.stopHeads(st)
	}
}

// admitStranger is the gater's check of a secured inbound connection from
// p (peers.Table.AdmitStranger).
func (n *Node) admitStranger(p peer.ID) bool {
	if n.run.AdmitStranger(p, n.mono(n.now())) {
		return true
	}
	n.m.StrangerRefused()
	return false
}

// foldLoop runs foldAll every peers.FoldInterval.
func (n *Node) foldLoop() { n.every(peers.FoldInterval, n.foldAll) }

// foldAll runs peers.Table.Fold and carries out its changes.
func (n *Node) foldAll() {
	now, mono := n.clock()
	for _, c := range n.run.Fold(now, mono) {
		n.changed(c)
	}
}

// every runs f every d until the node closes.
func (n *Node) every(d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// changed carries out a change of a peer (peers.Change): its new tier's
// tag, and its record made or put off counted and logged.
func (n *Node) changed(c peers.Change[link]) {
	st := c.Peer
	if c.Retiered {
		n.tierChanged(st, c.Tier)
	}
	if c.Deferred {
		n.m.RecordDeferred()
	}
	if c.Err != nil {
		n.log.Warn("peer cache write failed", "peer", st.ID(), "err", c.Err)
	}
	if c.Persisted != "" {
		n.m.PeerPersisted(c.Persisted)
		n.plog.Info(st.ID(), "value", "peer showed value; remembered in the peer cache", "peer", st.ID(), "value", c.Persisted)
	}
}

// count adds k to count c of st's history (peers.Peer.Add); a change of
// tier retags the peer. Atomics only, unless the tier changes.
func (n *Node) count(st *peerState, c peers.Counter, k uint64) {
	if t, changed := st.Add(c, k); changed {
		n.tierChanged(st, t)
	}
}

// tierChanged reacts to st's new tier t: the connection manager's tag.
func (n *Node) tierChanged(st *peerState, t limits.Tier) {
	p2p.TagTier(n.host, st.ID(), t)
	n.m.TierChange(t)
}

// gave records that p gave this node events or blob bytes
// (peers.Table.Gave).
func (n *Node) gave(p peer.ID, events, bytes uint64) {
	if p == "" || p == n.host.ID() {
		return
	}
	now, mono := n.clock()
	if c, ok := n.run.Gave(p, events, bytes, now, mono); ok {
		n.changed(c)
	}
}

// showedValue gives st a record if it has none (peers.Table.ShowedValue).
func (n *Node) showedValue(st *peerState, value string) {
	now, mono := n.clock()
	n.changed(n.run.ShowedValue(st, value, now, mono))
}

// abuse counts an abuse signal c of p (an invalid message, a stream held
// past its deadline) in its history.
func (n *Node) abuse(p peer.ID, c peers.Counter) {
	if st := n.run.Get(p); st != nil {
		n.count(st, c, 1)
	}
}

// standing is peers.Table.StandingOf p now: the class of its bytes
// within the bandwidth caps (docs/adr/0048).
func (n *Node) standing(p peer.ID) bool {
	now, mono := n.clock()
	return n.run.StandingOf(p, now, mono)
}

// linked reports whether p has a connection, direct or relayed (network.
// Limited): a peer reached through a relay is a peer like another for
// hello, sync and its run state.
func (n *Node) linked(p peer.ID) bool {
	c := n.host.Network().Connectedness(p)
	return c == network.Connected || c == network.Limited
}
