package node

import (
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/config"
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
			n.m.gossipRejected(err)
			if !errors.Is(err, eventlog.ErrFuture) { // a clock ahead of ours is no abuse
				n.abuse(from, peers.Invalid)
			}
		},
		Ignored:    func(_ peer.ID, reason error) { n.m.gossipIgnored(reason) },
		Graylisted: n.graylisted,
		Missed:     n.syncGap,
		AppScore:   n.appScore,
		Now:        n.now,
		TracePath:  n.gossipTrace,
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

// tierOfPeer is p's tier while connected (TierNew otherwise): an atomic
// read, cheap enough for gossipsub's RPC loop.
func (n *Node) tierOfPeer(p peer.ID) limits.Tier {
	if st := n.run.Get(p); st != nil {
		return st.Tier()
	}
	return limits.TierNew
}

// admitForward is the forwarding peer's budget of envelopes, at the RPC
// (gossip.Options.Admit): limits.gossip_per_min by the forwarder's tier.
// An envelope of an established author takes from the forwarder's own
// bucket only; one of a new author also from the strangers' share
// (limits.stranger_gossip_per_min) when the forwarder is a stranger, and
// only while the new authors' shared budget has a token at all, so that
// spam of fresh keys costs gossipsub no signature check.
//
// A forwarder with standing (ADR 0041: this node dialled it, or it is
// reputed, valued or an established author) takes from its own buckets
// only, for new authors too: what it forwards is bounded by its own
// budget and each author's, not held to the strangers' shares that a
// flood of fresh ids spends, so that its own events and those it admitted
// reach this node whatever strangers do.
func (n *Node) admitForward(p peer.ID, author string) error {
	now := int64(n.mono(n.now()))
	ft := n.tierOfPeer(p)
	at, established := n.authorStanding(author)
	if !established && author != "" && author == p.String() && !n.offered.AllowOwn(author, at, now) {
		// A new author publishing its own envelopes faster than one
		// author may, counted on what it sends: a spammer. One within it
		// whose envelopes found the new authors' share spent by others is
		// not at fault (ADR 0041).
		n.spammed(p, author)
	}
	if established || n.forwarderStanding(p) {
		if !n.gossipBudget.AllowOwn(string(p), ft, now) {
			return gossip.ErrOverPeerBudget
		}
		if !established && author != "" && !n.authorBudget.HasOwn(author, at, now) {
			return gossip.ErrOverAuthorBudget
		}
		return nil
	}
	if author != "" && !n.authorBudget.Has(author, at, now) {
		return gossip.ErrOverAuthorBudget
	}
	if !n.gossipBudget.Allow(string(p), ft, now) {
		return gossip.ErrOverPeerBudget
	}
	return nil
}

// forwarderStanding reports whether p, connected, has standing (ADR
// 0041; node.standing).
func (n *Node) forwarderStanding(p peer.ID) bool {
	st := n.run.Get(p)
	return st != nil && n.standing(st)
}

// authorStanding is the tier whose budget an author's events take from,
// and whether the author is established (ADR 0031): an author whose first
// event this node stored at least limits.new_author_minutes ago (by the
// wall clock, as the log records it), or a valued peer. A peer's record
// alone does not establish it as an author: giving events earns a record
// within seconds (ADR 0030), and a spammer's own events are events. Every
// other author is a new one (TierNew, or TierSuspect for a suspect peer)
// and shares limits.stranger_author_per_min with the others: fresh keys
// cost nothing.
//
// An author established by time stays so (its first event stays stored), so
// the last establishedAuthorsCached of them are remembered: each envelope
// asks for its author's standing three times (at the RPC, before and after
// the signature check), and the log would be read each time.
func (n *Node) authorStanding(author string) (limits.Tier, bool) {
	t := n.authorPeerTier(author)
	switch t {
	case limits.TierValued:
		return t, true
	case limits.TierSuspect:
		return t, false
	}
	if n.establishedAuthors.Contains(author) {
		return limits.TierNormal, true
	}
	u, err := n.events.AuthorUsage(author)
	if err == nil && u.Events > 0 {
		age := time.Duration(n.now().UnixMilli()-u.First) * time.Millisecond
		if age >= time.Duration(n.cfg.Limits.NewAuthorMinutes)*time.Minute {
			n.establishedAuthors.Add(author, struct{}{})
			return limits.TierNormal, true
		}
	}
	return limits.TierNew, false
}

// establishedAuthorsCached bounds Node.establishedAuthors.
const establishedAuthorsCached = 4096

// admitAuthor is the author's budget of new events (limits.author_per_min
// by its standing) for an envelope from forwarded, its event of size
// bytes: looked at before the signature check, taken after. A new
// author's event forwarded by a peer with standing takes from the
// author's own bucket only (admitForward); one forwarded by a stranger
// takes from the new authors' share too, a token per
// limits.EventTokenBytes started (ADR 0041), the first when it is taken
// and the rest charged.
func (n *Node) admitAuthor(from peer.ID, author string, size int, take bool) bool {
	t, _ := n.authorStanding(author)
	now := int64(n.mono(n.now()))
	own := n.forwarderStanding(from)
	switch {
	case take && own:
		return n.authorBudget.AllowOwn(author, t, now)
	case take:
		if !n.authorBudget.Allow(author, t, now) {
			return false
		}
		if t.Stranger() {
			n.authorBudget.ChargeStrangers(limits.EventTokens(size)-1, now)
		}
		return true
	case own:
		return n.authorBudget.HasOwn(author, t, now)
	}
	return n.authorBudget.Has(author, t, now)
}

// spammed counts an envelope of a new author that its forwarder wrote
// itself (author == forwarder) past the rate one author may publish
// (limits.author_per_min, counted on what it sends: Node.offered): a peer
// publishing fresh events faster than one author may. It lowers the
// peer's gossipsub score (appScore), so that the mesh keeps the peers that
// relay over those that spam. An author within that rate whose envelopes
// found the new authors' share spent by others is not counted (ADR 0041):
// that is a flood of strangers, and the honest new author's events come
// by the pull of its heads instead.
func (n *Node) spammed(p peer.ID, author string) {
	if author != p.String() {
		return // a relay of someone else's events: the relay is not at fault
	}
	n.addSpam(p, 1)
}

// graylisted counts the envelopes of an RPC that gossip dropped whole, its
// sender being graylisted (gossip.Options.Graylisted), as spam: a peer
// whose score fell below the graylist threshold and goes on publishing
// is flooding, and at the floor it is disconnected as spammed says.
// Without it, a flood graylisted before the floor (its first envelopes
// within its own budget, ADR 0041) would be read and dropped for as long
// as it lasts.
func (n *Node) graylisted(p peer.ID, envelopes int) { n.addSpam(p, uint64(envelopes)) }

// addSpam adds k to p's spam count; at spamBan, the score's floor, p is
// disconnected and refused for spamBanFor, unless it has standing.
func (n *Node) addSpam(p peer.ID, k uint64) {
	st := n.run.Get(p)
	if st == nil || k == 0 {
		return
	}
	if before, after := st.Spam(k); after < spamBan || before >= spamBan {
		return // below the floor, or past it already (banned once)
	}
	if n.standing(st) {
		// A peer this node dialled, or has known for a while, is descored
		// (its envelopes dropped while it is graylisted) but not cut off:
		// its heads and its sync still carry what it holds (ADR 0041).
		return
	}
	// At the score's floor: a flood, not a burst. Gossipsub would go on
	// reading (and ignoring) its RPCs; the connection is closed and the
	// peer refused for a while, as for a stream flood (ADR 0030).
	n.m.peerBanned("gossip spam")
	n.count(st, peers.Invalid, limits.SuspectMinBad)
	n.plog.Info(st.ID(), "gossip spam", "peer disconnected: it kept publishing events of its own past its budget",
		"peer", st.ID(), "ban", spamBanFor)
	n.gater.Ban(st.ID(), spamBanFor)
	n.go_(func() { _ = n.host.Network().ClosePeer(st.ID()) })
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
		return errAlreadyHeld
	}
	n.m.eventsStored("gossip", 1)
	n.gave(d.From, 1, 0)
	n.hintGossiped(d)
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
	st := n.run.Get(p)
	if st == nil || !st.Helloed() {
		return // no sync without hello; the hello's head starts one
	}
	n.m.syncGaps.Inc()
	if st.Link.gap.Swap(true) {
		return // a run is coming that will see it
	}
	n.go_(func() {
		for st.Link.gap.Swap(false) {
			if _, err := n.syncFrom(n.ctx, p, syncRun{}); err != nil && n.ctx.Err() == nil {
				n.log.Debug("gap sync failed", "peer", p, "err", err)
			}
		}
	})
}

// appScores is the application's part of a peer's gossipsub score, by
// tier, for a reputed peer (ADR 0014's: met in an earlier run, or first
// hello at least 10 minutes ago; ADR 0031): a suspect is never grafted (a
// negative score) but still heard; a reputed peer with a record may give
// peer exchange (at least gossip's acceptPXThreshold, 5). A peer that is
// not reputed scores 0 at best: a record is earned in seconds (ADR 0030),
// and a mesh must not prefer a Sybil that earned one to an honest peer
// that only listens.
var appScores = [limits.NumTiers]float64{
	limits.TierSuspect: -20,
	limits.TierNew:     0,
	limits.TierNormal:  5,
	limits.TierValued:  10,
}

// spamScore is what each envelope of its own over its own author budget
// (spammed) takes from a peer's application score, down to
// -maxSpamPenalty; the count halves at every fold (5 s). A peer publishing
// a few events past the budget drops out of the mesh for a while; one
// flooding is graylisted (below -1,000), and at the floor disconnected and
// refused for a minute: gossipsub would go on reading a graylisted peer's
// RPCs.
const (
	spamScore      = 10.0
	maxSpamPenalty = 2000.0
	// spamBan is the count at which the penalty reaches its floor (more
	// than 200 envelopes of its own refused within about 5 s): the peer
	// is disconnected and refused for spamBanFor.
	spamBan    = uint64(maxSpamPenalty / spamScore)
	spamBanFor = time.Minute
)

func (n *Node) appScore(p peer.ID) float64 {
	st := n.run.Get(p)
	if st == nil {
		return 0
	}
	score := appScores[st.Tier()]
	if score > 0 && !st.Reputed(n.mono(n.now())) {
		score = 0
	}
	return score - min(float64(st.Spammed())*spamScore, maxSpamPenalty)
}

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
	return n.authorPeerTier(author) == limits.TierValued
}

// authorPeerTier is the tier of author (a peer ID string) as a peer, by
// its history connected or not; TierNew for one the node knows nothing of
// or that is not a peer ID.
func (n *Node) authorPeerTier(author string) limits.Tier {
	p, err := peer.Decode(author)
	if err != nil {
		return limits.TierNew
	}
	if h, ok := n.historyOf(p); ok {
		return limits.TierOf(h)
	}
	return limits.TierNew
}
