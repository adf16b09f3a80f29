package node

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/gossip"
	"github.com/wats-network/wats/limits"
)

// Gossip under attack (ADR 0031): the budgets of what peers forward and of
// what authors publish, the log's quotas, the store of gossiped events (a
// group commit per batch of concurrent validations) and the recovery of
// what gossip missed.

// gossipOptions are the callbacks gossip.Join gets.
func (n *Node) gossipOptions() gossip.Options {
	return gossip.Options{
		Admit:  n.admitForward,
		Author: n.admitAuthor,
		Store:  n.storeGossiped,
		Has:    n.has,
		Reject: func(from peer.ID, err error) {
			n.m.gossipRejected(err)
			if !errors.Is(err, eventlog.ErrFuture) { // a clock ahead of ours is no abuse
				n.abuse(from, func(c *counts) *atomic.Uint64 { return &c.invalid })
			}
		},
		Ignored:  func(_ peer.ID, reason error) { n.m.gossipIgnored(reason) },
		Missed:   n.syncGap,
		AppScore: n.appScore,
		Now:      n.now,
	}
}

// tierOfPeer is p's tier while connected (TierNew otherwise): an atomic
// read, cheap enough for gossipsub's RPC loop.
func (n *Node) tierOfPeer(p peer.ID) limits.Tier {
	if st := n.run.get(p); st != nil {
		return st.Tier()
	}
	return limits.TierNew
}

// admitForward is the forwarding peer's budget of envelopes
// (limits.gossip_per_min by tier, strangers sharing
// limits.stranger_gossip_per_min).
func (n *Node) admitForward(p peer.ID) bool {
	return n.gossipBudget.Allow(string(p), n.tierOfPeer(p), int64(n.mono(n.now())))
}

// authorTier is the tier whose budget an author's events take from: the
// author's own as a peer when the node knows its history, raised to normal
// when the log holds events of it (a known author); otherwise new, so the
// never-seen authors share limits.stranger_author_per_min.
func (n *Node) authorTier(author string) limits.Tier {
	t := limits.TierNew
	if p, err := peer.Decode(author); err == nil {
		if h, ok := n.historyOf(p); ok {
			t = limits.TierOf(h)
		}
	}
	if t == limits.TierNew {
		if u, err := n.events.AuthorUsage(author); err == nil && u.Events > 0 {
			t = limits.TierNormal
		}
	}
	return t
}

// admitAuthor is the author's budget of new events (limits.author_per_min
// by tier): looked at before the signature check, taken after.
func (n *Node) admitAuthor(author string, take bool) bool {
	t, now := n.authorTier(author), int64(n.mono(n.now()))
	if take {
		return n.authorBudget.Allow(author, t, now)
	}
	return n.authorBudget.Has(author, t, now)
}

// storeGossiped stores an event received by gossip, durably, before
// gossipsub forwards it (gossip.Options.Store), and records the provider
// hints of its blobs. Concurrent calls share one synced batch (eventlog's
// group commit).
func (n *Node) storeGossiped(d gossip.Delivery) error {
	added, err := n.events.Add(d.Event)
	if err != nil {
		if !errors.Is(err, eventlog.ErrQuota) {
			n.log.Error("store gossiped event", "event", d.Event.ID, "err", err)
		}
		return err
	}
	if !added {
		return errAlreadyHeld
	}
	n.m.eventsStored("gossip", 1)
	n.gave(d.From, 1, 0)
	for _, b := range d.Event.Blobs {
		n.hints.Add(b.CID, d.Providers)
	}
	n.autoFetch([]*eventlog.Event{d.Event}, d.From, "gossip")
	return nil
}

// errAlreadyHeld ignores an envelope whose event another path stored
// between the duplicate check and the write.
var errAlreadyHeld = errors.New("node: event already held")

// syncGap syncs from p at once, not at the next sync.interval: gossip
// dropped an envelope p forwarded for want of room, so an event may be
// missing here (ADR 0031). A sync already running from p is waited for
// and followed by one more, so that what it had passed is looked at
// again; more gaps meanwhile add no further runs.
func (n *Node) syncGap(p peer.ID) {
	st := n.run.get(p)
	if st == nil || !st.helloDone.Load() {
		return // no sync without hello; the hello's head starts one
	}
	n.m.syncGaps.Inc()
	if st.gap.Swap(true) {
		return // a run is coming that will see it
	}
	n.go_(func() {
		for st.gap.Swap(false) {
			if _, err := n.syncFrom(n.ctx, p, false, nil); err != nil && n.ctx.Err() == nil {
				n.log.Debug("gap sync failed", "peer", p, "err", err)
			}
		}
	})
}

// appScores is the application's part of a peer's gossipsub score, by
// tier (ADR 0031): a suspect is never grafted (a negative score) but still
// heard; a peer with a record may give peer exchange (at least
// gossip's acceptPXThreshold, 5).
var appScores = [limits.NumTiers]float64{
	limits.TierSuspect: -20,
	limits.TierNew:     0,
	limits.TierNormal:  5,
	limits.TierValued:  10,
}

func (n *Node) appScore(p peer.ID) float64 { return appScores[n.tierOfPeer(p)] }

// quotaFor returns the log's quota policy of cfg (ADR 0031; the [events]
// keys): self is this node's author id, whose events are held to nothing;
// valued tells whether an author is a valued peer, which is held to the
// totals only. Past 90% of a total, an author new to the log is refused.
func quotaFor(cfg config.EventsConfig, self string, valued func(author string) bool) eventlog.QuotaFunc {
	over := func(used, add, limit uint64) bool { return limit > 0 && used+add > limit }
	reserve := func(used, add, limit uint64) bool { return limit > 0 && used+add > limit/10*9 }
	maxEv, maxB := uint64(cfg.MaxEvents), uint64(cfg.MaxBytes)
	perEv, perB := uint64(cfg.MaxEventsPerAuthor), uint64(cfg.MaxBytesPerAuthor)
	return func(author string, size int, a, total eventlog.Usage) error {
		if author == self {
			return nil
		}
		sz := uint64(size)
		switch {
		case over(total.Events, 1, maxEv) || over(total.Bytes, sz, maxB):
			return fmt.Errorf("%w: the log is full (events.max_events %d, events.max_bytes %d)", eventlog.ErrQuota, maxEv, maxB)
		case a.Events == 0 && (reserve(total.Events, 1, maxEv) || reserve(total.Bytes, sz, maxB)):
			return fmt.Errorf("%w: the log is 90%% full: no new authors", eventlog.ErrQuota)
		case (over(a.Events, 1, perEv) || over(a.Bytes, sz, perB)) && !valued(author):
			return fmt.Errorf("%w: author %s is at events.max_events_per_author %d or events.max_bytes_per_author %d", eventlog.ErrQuota, author, perEv, perB)
		}
		return nil
	}
}

// valuedAuthor reports whether author is a valued peer (limits.TierValued)
// by its run state or its record. It does not read the log: it runs inside
// the log's commit.
func (n *Node) valuedAuthor(author string) bool {
	p, err := peer.Decode(author)
	if err != nil {
		return false
	}
	h, ok := n.historyOf(p)
	return ok && limits.TierOf(h) == limits.TierValued
}
