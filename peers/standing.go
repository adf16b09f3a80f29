package peers

import (
	"context"
	"errors"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/limits"
)

// Standing and the budgets of what peers bring outside requests (ADR
// 0031, ADR 0041): the envelopes a peer forwards by gossip and the new
// events an author publishes, the pages pulled on a peer's heads
// announcements, and the new authors' events a sync from a peer without
// standing brings. A peer with standing is held to its own buckets only;
// the others, however many, also share one bucket each, so that a flood
// of fresh ids buys no more than that together.

// ErrOverPeerBudget and ErrOverAuthorBudget are Forward's refusals: the
// forwarder's budget of envelopes (limits.gossip_per_min), or the author's
// of new events (limits.author_per_min), is spent.
var (
	ErrOverPeerBudget   = errors.New("peers: over the forwarder's gossip budget")
	ErrOverAuthorBudget = errors.New("peers: over the author's budget")
)

// The pull budget: pages of a peer's log the node pulls on its
// announcements, on top of the pacer of the peer's advertised sync rate
// that every sync request waits for (ADR 0024).
const (
	// PullPerMin is one peer's pulls a minute: one every 250 ms, a burst
	// of 60. A page is up to 256 events: 61,440 events a minute from one
	// peer, far past what gossip drops from an honest one.
	PullPerMin = 240
	// StrangerPullPerMin is what the peers without standing pull
	// together.
	StrangerPullPerMin = 240
	// PullRetry is how long a check waits for a token it did not get:
	// the emission interval of PullPerMin.
	PullRetry = time.Minute / PullPerMin
)

// The application's part of a peer's gossipsub score (ADR 0031).
const (
	// SpamScore is what each envelope of its own over its own author
	// budget (Spam) takes from a peer's application score, down to
	// -MaxSpamPenalty; the count halves at every Fold (5 s). A peer
	// publishing a few events past the budget drops out of the mesh for a
	// while; one flooding is graylisted (below -1,000), and at the floor
	// disconnected and refused for SpamBanFor: gossipsub would go on
	// reading a graylisted peer's RPCs.
	SpamScore      = 10.0
	MaxSpamPenalty = 2000.0
	// SpamBan is the count at which the penalty reaches its floor (more
	// than 200 envelopes of its own refused within about 5 s).
	SpamBan    = uint64(MaxSpamPenalty / SpamScore)
	SpamBanFor = time.Minute
)

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

// establishedCached bounds the authors remembered as established by time.
const establishedCached = 4096

// budgets are a Table's budgets of what peers bring outside requests.
type budgets struct {
	// gossip is the forwarding peers' budget of envelopes, author the
	// authors' budget of new events; offered is the authors' rate counted
	// on the envelopes of their own they send.
	gossip, author, offered *limits.Budget
	// pull is the budget of pages pulled on announcements.
	pull *limits.Budget
	// strangerSync is the share of new authors' events that syncs from
	// peers without standing bring (limits.stranger_sync_per_min).
	strangerSync *limits.Shared
	// newAuthorAge is limits.new_author_minutes.
	newAuthorAge time.Duration
	// authorFirst is Options.AuthorFirst.
	authorFirst func(author string) (time.Time, bool)
	// established are the last authors found established by time: each
	// envelope asks for its author's standing three times, and the log
	// would be read each time. One established by time stays so (its
	// first event stays stored).
	established *lru.Cache[string, struct{}]
}

// newBudgets returns the budgets of l.
func newBudgets(l limits.Config, authorFirst func(string) (time.Time, bool)) (*budgets, error) {
	b := &budgets{newAuthorAge: time.Duration(l.NewAuthorMinutes) * time.Minute, authorFirst: authorFirst}
	if authorFirst == nil {
		b.authorFirst = func(string) (time.Time, bool) { return time.Time{}, false }
	}
	offered := l.AuthorBudget()
	offered.StrangersPerMin = 0 // each author's own rate only
	var err error
	if b.gossip, err = limits.NewBudget(l.GossipBudget()); err != nil {
		return nil, err
	}
	if b.author, err = limits.NewBudget(l.AuthorBudget()); err != nil {
		return nil, err
	}
	if b.offered, err = limits.NewBudget(offered); err != nil {
		return nil, err
	}
	if b.pull, err = limits.NewBudget(limits.BudgetRate{PerMin: PullPerMin, StrangersPerMin: StrangerPullPerMin,
		SuspectPercent: l.SuspectPercent, ValuedPercent: l.ValuedPercent}); err != nil {
		return nil, err
	}
	share, err := limits.NewRate(l.StrangerSyncPerMin)
	if err != nil {
		return nil, err
	}
	b.strangerSync = limits.NewShared(share)
	b.established, _ = lru.New[string, struct{}](establishedCached) // fails only for a size <= 0
	return b, nil
}

// Budgets returns the gossip, author and pull budgets (for the control
// API and tests).
func (t *Table[L]) Budgets() (gossip, author, pull *limits.Budget) {
	return t.b.gossip, t.b.author, t.b.pull
}

// AuthorStanding is the tier whose budget an author's events take from at
// now (mono), and whether the author is established (ADR 0031): an author
// whose first event this node stored at least limits.new_author_minutes
// ago (by the wall clock, as the log records it), or a valued peer. A
// peer's record alone does not establish it as an author: giving events
// earns a record within seconds (ADR 0030), and a spammer's own events are
// events. Every other author is a new one (TierNew, or TierSuspect for a
// suspect peer) and shares limits.stranger_author_per_min with the others:
// fresh keys cost nothing.
func (t *Table[L]) AuthorStanding(author string, now time.Time, mono time.Duration) (limits.Tier, bool) {
	tier := t.AuthorTier(author, now, mono)
	switch tier {
	case limits.TierValued:
		return tier, true
	case limits.TierSuspect:
		return tier, false
	}
	if t.b.established.Contains(author) {
		return limits.TierNormal, true
	}
	if first, ok := t.b.authorFirst(author); ok && now.Sub(first) >= t.b.newAuthorAge {
		t.b.established.Add(author, struct{}{})
		return limits.TierNormal, true
	}
	return limits.TierNew, false
}

// AuthorTier is the tier of author (a peer ID string) as a peer, by its
// history connected or not; TierNew for one the Table knows nothing of or
// that is not a peer ID. It reads no log: the log's quota asks it inside
// its commit.
func (t *Table[L]) AuthorTier(author string, now time.Time, mono time.Duration) limits.Tier {
	p, err := peer.Decode(author)
	if err != nil {
		return limits.TierNew
	}
	if h, ok := t.History(p, now, mono); ok {
		return limits.TierOf(h)
	}
	return limits.TierNew
}

// Standing reports whether st's peer has standing for what it brings at
// now (mono) (ADR 0041): this node chose to dial it (Chosen: a bootstrap
// peer, a peer of its cache, one found by discovery, one the operator
// connected to; not a peer that a DHT query, a fetch's provider search,
// autonat or a relay dialled, whose answers others choose: ADR 0041's
// addendum), it is reputed (ADR 0014: met in an earlier run, or first
// hello ten minutes ago), valued, or an established author. Fresh ids
// that connect to the node, or make it dial them, have none of these,
// whatever they did in their first minutes. A suspect has none.
func (t *Table[L]) Standing(st *Peer[L], now time.Time, mono time.Duration) bool {
	switch tier := st.Tier(); {
	case tier == limits.TierSuspect:
		return false
	case st.Chosen(), tier == limits.TierValued, st.Reputed(mono):
		return true
	}
	_, established := t.AuthorStanding(st.id.String(), now, mono)
	return established
}

// StandingOf is Standing of p at now (mono), false when p is not
// connected: the class of its bytes within the bandwidth caps
// (docs/adr/0048).
func (t *Table[L]) StandingOf(p peer.ID, now time.Time, mono time.Duration) bool {
	st := t.Get(p)
	return st != nil && t.Standing(st, now, mono)
}

// Forward decides, at gossip's RPC and before any signature check,
// whether to take an envelope of author forwarded by p: nil, or
// ErrOverPeerBudget or ErrOverAuthorBudget. limits.gossip_per_min is held
// by the forwarder's tier; an envelope of an established author takes
// from the forwarder's own bucket only; one of a new author also from the
// strangers' share (limits.stranger_gossip_per_min) when the forwarder has
// no standing, and only while the new authors' shared budget has a token
// at all, so that spam of fresh keys costs gossipsub no signature check.
// A forwarder with standing takes from its own buckets only, for new
// authors too: what it forwards is bounded by its own budget and each
// author's, not held to the shares that a flood of fresh ids spends.
//
// spammed reports a new author publishing its own envelopes faster than
// one author may, counted on what it sends (the node calls Spam). One
// within it whose envelopes found the new authors' share spent by others
// is not at fault (ADR 0041).
func (t *Table[L]) Forward(p peer.ID, author string, now time.Time, mono time.Duration) (err error, spammed bool) {
	m := int64(mono)
	ft := limits.TierNew
	if st := t.Get(p); st != nil {
		ft = st.Tier()
	}
	at, established := t.AuthorStanding(author, now, mono)
	spammed = !established && author != "" && author == p.String() && !t.b.offered.AllowOwn(author, at, m)
	if established || t.StandingOf(p, now, mono) {
		if !t.b.gossip.AllowOwn(string(p), ft, m) {
			return ErrOverPeerBudget, spammed
		}
		if !established && author != "" && !t.b.author.HasOwn(author, at, m) {
			return ErrOverAuthorBudget, spammed
		}
		return nil, spammed
	}
	if author != "" && !t.b.author.Has(author, at, m) {
		return ErrOverAuthorBudget, spammed
	}
	if !t.b.gossip.Allow(string(p), ft, m) {
		return ErrOverPeerBudget, spammed
	}
	return nil, spammed
}

// AdmitAuthor is the author's budget of new events (limits.author_per_min
// by its standing) for an envelope from forwarder from, its event of size
// bytes: looked at before the signature check (take false), taken after.
// A new author's event forwarded by a peer with standing takes from the
// author's own bucket only; one forwarded by a stranger takes from the
// new authors' share too, a token per limits.EventTokenBytes started (ADR
// 0041), the first when it is taken and the rest charged.
func (t *Table[L]) AdmitAuthor(from peer.ID, author string, size int, take bool, now time.Time, mono time.Duration) bool {
	tier, _ := t.AuthorStanding(author, now, mono)
	m := int64(mono)
	own := t.StandingOf(from, now, mono)
	switch {
	case take && own:
		return t.b.author.AllowOwn(author, tier, m)
	case take:
		if !t.b.author.Allow(author, tier, m) {
			return false
		}
		if tier.Stranger() {
			t.b.author.ChargeStrangers(limits.EventTokens(size)-1, m)
		}
		return true
	case own:
		return t.b.author.HasOwn(author, tier, m)
	}
	return t.b.author.Has(author, tier, m)
}

// Spam adds k to p's spam count (envelopes of its own past its author
// budget, or of an RPC gossip dropped whole while p was graylisted) at now
// (mono); ban reports the count crossing SpamBan, the score's floor, for a
// peer without standing: a flood, not a burst, counted in its history as
// limits.SuspectMinBad invalid messages, which the node answers by
// disconnecting and refusing it for SpamBanFor. A peer with standing is
// descored (its envelopes dropped while it is graylisted) but not cut off:
// its heads and its sync still carry what it holds (ADR 0041).
func (t *Table[L]) Spam(p peer.ID, k uint64, now time.Time, mono time.Duration) (st *Peer[L], ban bool, tier limits.Tier, retiered bool) {
	st = t.Get(p)
	if st == nil || k == 0 {
		return nil, false, 0, false
	}
	if before, after := st.Spam(k); after < SpamBan || before >= SpamBan {
		return st, false, st.Tier(), false // below the floor, or past it already (banned once)
	}
	if t.Standing(st, now, mono) {
		return st, false, st.Tier(), false
	}
	tier, retiered = st.Add(Invalid, limits.SuspectMinBad)
	return st, true, tier, retiered
}

// AppScore is the application's part of p's gossipsub score at mono: its
// tier's (appScores) once it is reputed, less SpamScore for each envelope
// of its spam count, down to -MaxSpamPenalty; 0 for a peer not connected.
func (t *Table[L]) AppScore(p peer.ID, mono time.Duration) float64 {
	st := t.Get(p)
	if st == nil {
		return 0
	}
	score := appScores[st.Tier()]
	if score > 0 && !st.Reputed(mono) {
		score = 0
	}
	return score - min(float64(st.Spammed())*SpamScore, MaxSpamPenalty)
}

// PullTier is the tier whose pull budget st's announcements take from: a
// suspect's or a valued peer's own; normal (its own bucket only) for a
// peer with standing; new, sharing StrangerPullPerMin, for the others.
func (t *Table[L]) PullTier(st *Peer[L], now time.Time, mono time.Duration) limits.Tier {
	switch tier := st.Tier(); {
	case tier == limits.TierSuspect || tier == limits.TierValued:
		return tier
	case t.Standing(st, now, mono):
		return limits.TierNormal
	}
	return limits.TierNew
}

// AllowPull takes a token of p's pull budget at now (mono), or says how
// long to wait (PullRetry). A peer that is not connected or has not
// completed hello is not pulled from.
func (t *Table[L]) AllowPull(p peer.ID, now time.Time, mono time.Duration) (bool, time.Duration) {
	st := t.Get(p)
	if st == nil || !st.Helloed() || !t.b.pull.Allow(string(p), t.PullTier(st, now, mono), int64(mono)) {
		return false, PullRetry
	}
	return true, 0
}

// ErrPeerGone ends a sync run whose share waited for a peer that
// disconnected.
var ErrPeerGone = errors.New("peers: the peer disconnected")

// shareRecheck bounds one wait of a NewAuthorShare, so that a run whose
// peer left ends within it.
const shareRecheck = time.Second

// NewAuthorShare holds one sync run from p, a peer without standing, to
// the share of new authors' events such peers bring by sync
// (limits.stranger_sync_per_min, ADR 0041): each page waits for a token
// (Wait) and is charged, as it comes, the events of new authors in it
// (Charge), so that ids which complete hello cannot make the node store
// their own events past the share, however many they are. clock gives the
// wall clock and the monotonic reading; linked reports whether p is still
// connected. It is a catchup.Share.
func (t *Table[L]) NewAuthorShare(p peer.ID, clock func() (time.Time, time.Duration), linked func(peer.ID) bool) *NewAuthorShare {
	return &NewAuthorShare{share: t.b.strangerSync, p: p, clock: clock, linked: linked,
		established: func(author string) bool {
			now, mono := clock()
			_, ok := t.AuthorStanding(author, now, mono)
			return ok
		}}
}

// NewAuthorShare is Table.NewAuthorShare's.
type NewAuthorShare struct {
	share       *limits.Shared
	p           peer.ID
	clock       func() (time.Time, time.Duration)
	linked      func(peer.ID) bool
	established func(author string) bool
	// taken: Wait took a token for the page on its way, which Charge
	// counts as one of its events.
	taken bool
}

// Wait takes a token of the share, waiting until it has one, or until the
// peer is gone (ErrPeerGone: the run ends rather than wait for a peer that
// left). The token is the page's first event's, so that runs asking at
// once get a token each, not a page each for one token.
func (s *NewAuthorShare) Wait(ctx context.Context) error {
	for {
		_, mono := s.clock()
		ok, wait := s.share.Allow(int64(mono))
		if ok {
			s.taken = true
			return nil
		}
		if !s.linked(s.p) {
			return ErrPeerGone
		}
		timer := time.NewTimer(min(max(wait, time.Millisecond), shareRecheck))
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
	}
}

// Charge charges the share for the events of page whose author is new
// here (AuthorStanding), stored or not: what the page made the node decode
// and verify, each a token per limits.EventTokenBytes started
// (limits.EventTokens). Events that do not decode count as new.
func (s *NewAuthorShare) Charge(page []jsontext.Value) {
	k := 0
	established := make(map[string]bool)
	for _, raw := range page {
		ev, err := eventlog.Decode(raw)
		if err != nil {
			k += limits.EventTokens(len(raw))
			continue
		}
		est, ok := established[ev.Author]
		if !ok {
			est = s.established(ev.Author)
			established[ev.Author] = est
		}
		if !est {
			k += limits.EventTokens(len(raw))
		}
	}
	if s.taken && k > 0 {
		k-- // the token Wait took
	}
	s.taken = false
	_, mono := s.clock()
	s.share.Charge(k, int64(mono))
}
