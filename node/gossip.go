package node

import (
	"errors"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/gossip"
	"github.com/wats-network/wats/internal/diskspace"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/peers"
)

// Gossip under attack (ADR 0031): the budgets of what peers forward and of
// what authors publish, the log's quotas, the store of gossiped events (a
// group commit per batch of concurrent validations) and the recovery of
// what gossip missed.

// gossipOptions are the callbacks gossip.Join gets.
func (n *Node) gossipOptions() *gossip.Options {
	return &gossip.Options{
		Admit:  n.admitForward,
		Author: n.admitAuthor,
		Store:  n.storeGossiped,
		Has:    n.gossipHas,
		Reject: func(from peer.ID, err error) {
			n.m.GossipRejected(err)
			if !errors.Is(err, eventlog.ErrFuture) { // a clock ahead of ours is no abuse
				n.abuse(from, peers.Invalid)
			}
		},
		Ignored:    func(_ peer.ID, reason error) { n.m.GossipIgnored(gossip.IgnoredReason(reason)) },
		Graylisted: n.graylisted,
		Missed:     n.syncGap,
		AppScore:   n.appScore,
		Now:        n.now,
		TracePath:  n.o.GossipTrace,
	}
}

// gossipHas is gossip's duplicate check (gossip.Options.Has): whether the
// log holds the event, or a test's dropGossip says to drop it unseen.
func (n *Node) gossipHas(id string) bool {
	if drop := n.dropGossip.Load(); drop != nil && (*drop)(id) {
		return true // ignored as held: not stored, not forwarded, no gap
	}
	return n.has(id)
}

// admitForward is the forwarding peer's budget of envelopes, at the RPC
// (gossip.Options.Admit; peers.Table.Forward).
func (n *Node) admitForward(p peer.ID, author string) error {
	now, mono := n.clock()
	err, spammed := n.run.Forward(p, author, now, mono)
	if spammed {
		n.spam(p, 1)
	}
	switch {
	case errors.Is(err, peers.ErrOverPeerBudget):
		return gossip.ErrOverPeerBudget
	case errors.Is(err, peers.ErrOverAuthorBudget):
		return gossip.ErrOverAuthorBudget
	}
	return err
}

// admitAuthor is the author's budget of new events (gossip.Options.Author;
// peers.Table.AdmitAuthor).
func (n *Node) admitAuthor(from peer.ID, author string, size int, take bool) bool {
	now, mono := n.clock()
	return n.run.AdmitAuthor(from, author, size, take, now, mono)
}

// graylisted counts the envelopes of an RPC that gossip dropped whole, its
// sender being graylisted (gossip.Options.Graylisted), as spam: a peer
// whose score fell below the graylist threshold and goes on publishing
// is flooding. Without it, a flood graylisted before the floor (its first
// envelopes within its own budget, ADR 0041) would be read and dropped
// for as long as it lasts.
func (n *Node) graylisted(p peer.ID, envelopes int) { n.spam(p, uint64(envelopes)) }

// spam adds k to p's spam count (peers.Table.Spam) and carries out the
// ban at the score's floor: the connection closed, the peer refused for
// peers.SpamBanFor, as for a stream flood (ADR 0030).
func (n *Node) spam(p peer.ID, k uint64) {
	now, mono := n.clock()
	st, ban, t, retiered := n.run.Spam(p, k, now, mono)
	if retiered {
		n.tierChanged(st, t)
	}
	if !ban {
		return
	}
	n.m.PeerBanned("gossip spam")
	n.plog.Info(st.ID(), "gossip spam", "peer disconnected: it kept publishing events of its own past its budget",
		"peer", st.ID(), "ban", peers.SpamBanFor)
	n.ban(st.ID(), peers.SpamBanFor, 0)
}

// storeGossiped stores an event received by gossip, durably, before
// gossipsub forwards it (gossip.Options.Store), and records the provider
// hints of its blobs. Concurrent calls share one synced batch (eventlog's
// group commit).
func (n *Node) storeGossiped(d gossip.Delivery) error {
	added, err := n.events.Add(d.Event)
	if err != nil {
		// Over a quota, or on a full disk (the guard says so once, and sync
		// brings the event once there is room): nothing to log.
		if !errors.Is(err, eventlog.ErrQuota) && !errors.Is(err, diskspace.ErrFull) {
			n.log.Error("store gossiped event", "event", d.Event.ID, "err", err)
		}
		return err
	}
	if !added {
		return gossip.ErrHeld
	}
	n.m.EventsStored("gossip", 1)
	n.gave(d.From, 1, 0)
	if n.fetch != nil {
		n.fetch.Hint(d.Event.Blobs, d.Providers)
		n.fetch.Queue([]*eventlog.Event{d.Event}, d.From, "gossip")
	}
	return nil
}

// syncGap syncs from p at once, not at the next sync.interval
// (catchup.Client.Again): gossip dropped an envelope p forwarded for want
// of room, so an event may be missing here (ADR 0031).
func (n *Node) syncGap(p peer.ID) {
	st := n.run.Get(p)
	if st == nil || !st.Helloed() {
		return // no sync without hello; the hello's head starts one
	}
	n.m.SyncGap()
	n.sync.Again(n.ctx, p, &st.Link.gap)
}

// appScore is the application's part of p's gossipsub score
// (gossip.Options.AppScore; peers.Table.AppScore).
func (n *Node) appScore(p peer.ID) float64 { return n.run.AppScore(p, n.mono(n.now())) }

// valuedAuthor reports whether author is a valued peer (limits.TierValued)
// by its run state or its record. It does not read the log: it runs inside
// the log's commit.
func (n *Node) valuedAuthor(author string) bool {
	now, mono := n.clock()
	return n.run.AuthorTier(author, now, mono) == limits.TierValued
}

// authorFirst is when the log stored author's first event
// (peers.Options.AuthorFirst).
func (n *Node) authorFirst(author string) (time.Time, bool) {
	u, err := n.events.AuthorUsage(author)
	if err != nil || u.Events == 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(u.First), true
}
