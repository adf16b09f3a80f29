package peers

import (
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/limits"
)

// What the control API shows of the table (docs/design.md §12), in api's
// types.

// Limits returns the effective limits (GET api.PathLimits): the config's,
// each tier's rates, and each request type's bucket with its burst and
// interval.
func (t *Table[L]) Limits() api.Limits {
	l := t.lim
	out := api.Limits{
		BlobFetchesPerPeer: l.BlobFetchesPerPeer,
		Challenge:          l.Challenge, ChallengeBaseBits: l.ChallengeBaseBits, ChallengeMaxBits: l.ChallengeMaxBits,
		OverloadInFlight: l.OverloadInFlight, SolvedPerMin: l.SolvedPerMin,
		MaxTrackedPeers: t.adm.MaxPeers(),
		MissPerMin:      l.MissPerMin, SuspectPercent: l.SuspectPercent, ValuedPercent: l.ValuedPercent,
		StrangerReportPerMin: l.StrangerReportPerMin,
		Gossip: api.GossipLimits{PerPeer: l.GossipPerMin, Strangers: l.StrangerGossipPerMin,
			PerAuthor: l.AuthorPerMin, NewAuthors: l.StrangerAuthorPerMin, NewAuthorMinutes: l.NewAuthorMinutes,
			NewAuthorsBySync: l.StrangerSyncPerMin},
	}
	pl := t.adm.Policy()
	for tier := range limits.Tier(limits.NumTiers) {
		tl := api.TierLimits{Tier: tier.String(), PerMin: map[string]int{"miss": pl.MissRate(tier).PerMin()}}
		for _, k := range core.Requests() {
			tl.PerMin[k.String()] = pl.Rate(tier, k).PerMin()
		}
		out.Tiers = append(out.Tiers, tl)
	}
	for _, k := range core.Requests() {
		r := t.adm.Rate(k)
		rl := api.RequestLimit{Type: k.String(), Key: limits.RateKey(k), PerMin: r.PerMin()}
		if !r.Unlimited() {
			rl.Burst, rl.IntervalNs = r.Burst(), int64(r.Interval())
		}
		out.Requests = append(out.Requests, rl)
	}
	return out
}

// Diag returns the admission counters (GET api.PathDiag); logged is how
// many peer-caused log lines went through their cap.
func (t *Table[L]) Diag(logged uint64) api.Diag {
	s := t.adm.Snapshot()
	d := api.Diag{SharedAtCap: s.SharedAtCap, TrackedPeers: s.TrackedPeers, PeerLinesLogged: logged}
	for _, k := range core.Requests() {
		c := s.Of(k)
		d.Requests = append(d.Requests, api.RequestCounts{Type: k.String(), Accepted: c.Accepted, Refused: c.Refused})
	}
	return d
}

// Describe fills in what the table knows of connected peer p at the
// monotonic reading mono (GET api.PathPeers): its hello, the direction of
// the connection that brought it, whether it speaks /wats/1, its tier and
// why, its reputation; its head is the hello's or ap.Cursor, if further (a
// log only grows). A peer the table does not hold is left as it is.
func (t *Table[L]) Describe(ap *api.Peer, p peer.ID, mono time.Duration) {
	st := t.Get(p)
	if st == nil {
		return
	}
	h, dir := st.HelloAndDirection()
	if dir == network.DirInbound {
		ap.Direction = api.DirectionInbound
	}
	if h != nil {
		ap.Hello, ap.Agent, ap.Head = true, h.Agent, uint64(h.Head)
	}
	ap.Head = max(ap.Head, ap.Cursor)
	ap.NotWats = st.NotWats()
	hist := st.History()
	ap.Tier, ap.TierReason, ap.Reputed = limits.TierOf(hist).String(), limits.Explain(hist), st.Reputed(mono)
	ap.Served, ap.Challenged, ap.Refused = uint64(st.servedHere.Load()), uint64(st.challengedHere.Load()), uint64(st.refusedHere.Load())
}
