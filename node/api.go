package node

import (
	"net/http"
	"time"

	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/p2p"
	"github.com/wats-network/wats/routing"
	"github.com/wats-network/wats/store"
)

// MetricsHandler serves the node's Prometheus metrics.
func (n *Node) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(n.m.Registry(), promhttp.HandlerOpts{})
}

// Status returns a summary of the node's state.
func (n *Node) Status() api.Status {
	tiers := map[string]int{}
	n.run.Each(func(st *peerState) { tiers[st.Tier().String()]++ })
	issued, solved, failed := n.m.Challenges()
	return api.Status{
		PeerTiers:         tiers,
		StrangerSlots:     p2p.StrangerSlots(n.cfg),
		StrangerSlotsUsed: n.run.Slots().Len(),

		PeerID:        n.host.ID().String(),
		Network:       n.cfg.Network,
		Agent:         n.agent,
		Peers:         len(n.helloPeers()),
		Events:        uint64(n.events.Head()),
		Head:          uint64(n.events.Head()),
		Gossip:        n.gossip != nil,
		UptimeSeconds: int64(n.now().Sub(n.started) / time.Second),
		Dropped:       n.m.DroppedTotal(),
		InFlight:      n.inFlight.Load(),

		ChallengeEffort:  n.issuer.Effort(n.mono(n.now())),
		ChallengesIssued: issued,
		ChallengesSolved: solved,
		ChallengesFailed: failed,

		Blobs:          len(n.blobs.List()),
		BlobBytes:      n.blobs.QuotaUsed(),
		BlobQuotaBytes: uint64(n.cfg.Blobs.QuotaBytes),
		Log:            n.logUsage(),

		Reachability: reachabilityName(network.Reachability(n.reachability.Load())),
		RelayAddrs:   n.relayAddrs(),
		HolePunches:  n.holePunches(),
		DHT:          n.dhtStatus(),
		Disk:         n.diskStatus(),
	}
}

// relayAddrs are the node's relayed addresses, with /p2p/<id>.
func (n *Node) relayAddrs() []string {
	out := []string{}
	for _, a := range n.FullAddrs() {
		if ma, err := multiaddr.NewMultiaddr(a); err == nil && routing.IsRelayed(ma) {
			out = append(out, a)
		}
	}
	return out
}

func (n *Node) holePunches() api.HolePunches {
	ok, failed := n.punches.Counts()
	return api.HolePunches{Succeeded: ok, Failed: failed}
}

// dhtStatus is the state of the DHT, as status shows it.
func (n *Node) dhtStatus() api.DHTStatus {
	s := api.DHTStatus{Mode: n.cfg.P2P.DHT}
	if r := n.routing.Load(); r != nil {
		s.Server = r.DHT().Mode() == dht.ModeServer
		s.RoutingTable = r.DHT().RoutingTable().Size()
		s.ProviderRecords, s.MaxProviderRecords, s.ProviderRecordsRefused = r.Records()
		s.Discovered = r.Discovered()
	}
	return s
}

// logUsage is what the event log holds against its quotas.
func (n *Node) logUsage() api.LogUsage {
	u, authors := n.events.Usage()
	q := n.cfg.Events
	return api.LogUsage{Events: u.Events, Bytes: u.Bytes, Authors: authors,
		MaxEvents: uint64(q.MaxEvents), MaxBytes: uint64(q.MaxBytes),
		MaxEventsPerAuthor: uint64(q.MaxEventsPerAuthor), MaxBytesPerAuthor: uint64(q.MaxBytesPerAuthor),
		Commits: n.events.Commits()}
}

// Peers returns the connected peers.
func (n *Node) Peers() []api.Peer {
	conns := n.host.Network().Peers()
	mono := n.mono(n.now())
	out := make([]api.Peer, 0, len(conns))
	for _, p := range conns {
		ap := api.Peer{PeerID: p.String(), Cursor: uint64(n.run.Cursor(p)), Addrs: []string{}, Direction: api.DirectionOutbound}
		for _, c := range n.host.Network().ConnsToPeer(p) {
			ap.Addrs = append(ap.Addrs, c.RemoteMultiaddr().String())
		}
		if st := n.run.Get(p); st != nil {
			h, dir := st.HelloAndDirection()
			if dir == network.DirInbound {
				ap.Direction = api.DirectionInbound
			}
			if h != nil {
				ap.Hello, ap.Agent, ap.Head = true, h.Agent, uint64(h.Head)
			}
			ap.NotWats = st.NotWats()
			hist := st.History()
			ap.Tier, ap.TierReason, ap.Reputed = limits.TierOf(hist).String(), limits.Explain(hist), st.Reputed(mono)
		}
		if n.gossip != nil {
			ap.Score, ap.HasScore = n.gossip.Score(p)
		}
		ap.Conn = n.connKind(p)
		out = append(out, ap)
	}
	return out
}

// Limits returns the effective rate limits.
func (n *Node) Limits() api.Limits {
	l := n.cfg.Limits
	out := api.Limits{
		BlobFetchesPerPeer: l.BlobFetchesPerPeer,
		Challenge:          l.Challenge, ChallengeBaseBits: l.ChallengeBaseBits, ChallengeMaxBits: l.ChallengeMaxBits,
		OverloadInFlight: l.OverloadInFlight, SolvedPerMin: l.SolvedPerMin,
		MaxTrackedPeers: n.run.Admission().MaxPeers(),
		MissPerMin:      l.MissPerMin, SuspectPercent: l.SuspectPercent, ValuedPercent: l.ValuedPercent,
		StrangerReportPerMin: l.StrangerReportPerMin,
		Gossip: api.GossipLimits{PerPeer: l.GossipPerMin, Strangers: l.StrangerGossipPerMin,
			PerAuthor: l.AuthorPerMin, NewAuthors: l.StrangerAuthorPerMin, NewAuthorMinutes: l.NewAuthorMinutes,
			NewAuthorsBySync: l.StrangerSyncPerMin},
	}
	pl := n.run.Admission().Policy()
	for t := range limits.Tier(limits.NumTiers) {
		tl := api.TierLimits{Tier: t.String(), PerMin: map[string]int{"miss": pl.MissRate(t).PerMin()}}
		for _, k := range core.Requests() {
			tl.PerMin[k.String()] = pl.Rate(t, k).PerMin()
		}
		out.Tiers = append(out.Tiers, tl)
	}
	for _, k := range core.Requests() {
		r := n.run.Admission().Rate(k)
		rl := api.RequestLimit{Type: k.String(), Key: limits.RateKey(k), PerMin: r.PerMin()}
		if !r.Unlimited() {
			rl.Burst, rl.IntervalNs = r.Burst(), int64(r.Interval())
		}
		out.Requests = append(out.Requests, rl)
	}
	return out
}

// Diag returns the admission counters.
func (n *Node) Diag() api.Diag {
	s := n.run.Admission().Snapshot()
	d := api.Diag{SharedAtCap: s.SharedAtCap, TrackedPeers: s.TrackedPeers, PeerLinesLogged: n.plog.Cap.Logged()}
	for _, k := range core.Requests() {
		c := s.Of(k)
		d.Requests = append(d.Requests, api.RequestCounts{Type: k.String(), Accepted: c.Accepted, Refused: c.Refused})
	}
	return d
}

// PeerCache returns every record of the peer cache, most recently seen
// first, with each peer's tier and why.
func (n *Node) PeerCache() []api.CachedPeer {
	now, mono := n.clock()
	return store.CachedPeers(n.peers.All(), now, func(id peer.ID) (limits.History, bool, bool) {
		if st := n.run.Get(id); st != nil {
			return st.History(), st.Reputed(mono), true // with this run's counts not folded yet
		}
		return limits.History{}, false, false
	})
}

// BlobList returns the complete blobs of the store (GET api.PathBlobs).
func (n *Node) BlobList() []api.BlobInfo { return store.BlobList(n.blobs) }
