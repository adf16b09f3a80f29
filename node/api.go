package node

import (
	"context"
	"io"
	"strings"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/blobs"
	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/metrics"
	"github.com/wats-network/wats/p2p"
	"github.com/wats-network/wats/routing"
	"github.com/wats-network/wats/store"
)

// Gatherer returns the node's Prometheus metrics.
func (n *Node) Gatherer() prometheus.Gatherer { return n.m.Registry() }

// Status returns a summary of the node's state.
func (n *Node) Status() api.Status {
	tiers := map[string]int{}
	n.run.Each(func(st *peerState) { tiers[st.Tier().String()]++ })
	issued, solved, failed := n.m.Challenges()
	return api.Status{
		PeerTiers:         tiers,
		StrangerSlots:     p2p.StrangerSlots(n.cfg),
		StrangerSlotsUsed: n.run.Slots().Len(),
		PeerID:            n.host.ID().String(),
		Network:           n.cfg.Network,
		Agent:             n.o.Agent,
		Peers:             len(n.run.Helloed(-1)),
		Events:            uint64(n.events.Head()),
		Head:              uint64(n.events.Head()),
		Gossip:            n.gossip != nil,
		UptimeSeconds:     int64(n.now().Sub(n.started) / time.Second),
		Dropped:           n.m.DroppedTotal(),
		InFlight:          n.inFlight.Load(),
		ChallengeEffort:   n.issuer.Effort(n.mono(n.now())),
		ChallengesIssued:  issued,
		ChallengesSolved:  solved,
		ChallengesFailed:  failed,
		Blobs:             len(n.blobs.List()),
		BlobBytes:         n.blobs.QuotaUsed(),
		BlobQuotaBytes:    uint64(n.cfg.Blobs.QuotaBytes),
		Log:               store.LogUsage(n.events, n.quotas),
		Reachability:      n.reachability.String(),
		RelayAddrs:        routing.RelayAddrs(n.FullAddrs()),
		HolePunches:       n.punches.Status(),
		DHT:               n.run.Greetings(n.routing.Load().Status(n.cfg.P2P.DHT)),
		Disk:              n.db.DiskStatus(),
		Bandwidth:         n.bw.Status(),
	}
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
		n.run.Describe(&ap, p, mono)
		if n.gossip != nil {
			ap.Score, ap.HasScore = n.gossip.Score(p)
		}
		ap.Conn = n.punches.Kind(n.host, p)
		ap.BytesUp, ap.BytesDown = n.bw.Peer(p)
		out = append(out, ap)
	}
	return out
}

// Limits returns the effective rate limits (peers.Table.Limits).
func (n *Node) Limits() api.Limits { return n.run.Limits() }

// Diag returns the admission counters (peers.Table.Diag).
func (n *Node) Diag() api.Diag { return n.run.Diag(n.plog.Cap.Logged()) }

// PeerCache returns every record of the peer cache, most recently seen
// first, with each peer's tier and why.
func (n *Node) PeerCache() []api.CachedPeer {
	now, mono := n.clock()
	return store.CachedPeers(n.peers.All(), now, func(id peer.ID) (limits.History, bool, bool) { return n.run.Live(id, mono) })
}

// BlobList returns the complete blobs of the store (GET api.PathBlobs).
func (n *Node) BlobList() []api.BlobInfo { return store.BlobList(n.blobs, n.events) }

// Blobs returns the node's blob store.
func (n *Node) Blobs() *blobs.Store { return n.blobs }

// ImportBlob stores the bytes of r, size of them or -1 if not known, as a
// blob named name, "" for none (blobs.Store.ImportSized, with its bounds
// and name rule), and counts the import by via and outcome.
func (n *Node) ImportBlob(ctx context.Context, r io.Reader, size int64, name string, via metrics.ImportVia) (cid.Cid, uint64, error) {
	c, got, err := n.blobs.ImportSized(ctx, r, size, name)
	n.m.BlobImport(via, blobs.Outcome(err)) // stored, refused or failed: an import has no content fault
	return c, got, err
}

// Agent returns the agent the node sends in hello (Options.Agent).
func (n *Node) Agent() string { return n.o.Agent }

// RunningConfig returns the configuration the node runs with: its config,
// with log.level as the daemon last set it (Options.LogLevel). The copy is
// shallow; its lists must only be read.
func (n *Node) RunningConfig() config.Config {
	cfg := *n.cfg
	if n.o.LogLevel != nil {
		cfg.Log.Level = strings.ToLower(n.o.LogLevel.Level().String())
	}
	return cfg
}

// ForgetPeer deletes p's peer-cache record; peercache.ErrNotFound if it has
// none.
func (n *Node) ForgetPeer(p peer.ID) error { return n.peers.Forget(p) }

// ResolvePeer reads a peer given by an operator: a peer ID, or a full
// multiaddr, which is dialled (hello included) within 30 s.
func (n *Node) ResolvePeer(ctx context.Context, s string) (peer.ID, error) {
	ai, err := p2p.ParsePeer(s)
	if err != nil || len(ai.Addrs) == 0 {
		return ai.ID, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return n.connectInfo(ctx, ai)
}
