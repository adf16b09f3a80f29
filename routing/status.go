package routing

import (
	"context"
	"log/slog"
	"sync/atomic"

	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/wats-network/wats/api"
)

// What status shows of routing and NAT traversal (docs/design.md §12), in
// api's types.

// Kind says how p is connected on h (api.Peer.Conn): relayed when every
// connection goes through a relay, hole-punched when the direct one came
// from a hole punch, direct otherwise; "" when not connected.
func (t *PunchTracer) Kind(h host.Host, p peer.ID) string {
	conns := h.Network().ConnsToPeer(p)
	if len(conns) == 0 {
		return ""
	}
	for _, c := range conns {
		if !c.Stat().Limited && !IsRelayed(c.RemoteMultiaddr()) {
			if t.HolePunched(p) {
				return api.ConnHolePunched
			}
			return api.ConnDirect
		}
	}
	return api.ConnRelayed
}

// Status returns the hole punches that succeeded and failed.
func (t *PunchTracer) Status() api.HolePunches {
	ok, failed := t.Counts()
	return api.HolePunches{Succeeded: ok, Failed: failed}
}

// Reachability is the node's reachability as AutoNAT last reported it.
// The zero value is unknown.
type Reachability struct{ r atomic.Int32 }

// Watch keeps the reachability AutoNAT reports on h's event bus, logging
// each change, until ctx ends.
func (r *Reachability) Watch(ctx context.Context, h host.Host, log *slog.Logger) {
	sub, err := h.EventBus().Subscribe(new(event.EvtLocalReachabilityChanged))
	if err != nil {
		log.Warn("cannot follow the node's reachability", "err", err)
		return
	}
	defer sub.Close()
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-sub.Out():
			if !ok {
				return
			}
			r.r.Store(int32(e.(event.EvtLocalReachabilityChanged).Reachability))
			log.Info("reachability changed", "reachability", r.String())
		}
	}
}

// String names the reachability as status shows it: public, private or
// unknown.
func (r *Reachability) String() string {
	switch network.Reachability(r.r.Load()) {
	case network.ReachabilityPublic:
		return "public"
	case network.ReachabilityPrivate:
		return "private"
	default:
		return "unknown"
	}
}

// RelayAddrs returns the relayed addresses among addrs (multiaddrs as
// strings).
func RelayAddrs(addrs []string) []string {
	out := []string{}
	for _, a := range addrs {
		if m, err := ma.NewMultiaddr(a); err == nil && IsRelayed(m) {
			out = append(out, a)
		}
	}
	return out
}

// Status returns the state of the DHT as status shows it; mode is
// p2p.dht. A nil r is a DHT that is off.
func (r *Routing) Status(mode string) api.DHTStatus {
	s := api.DHTStatus{Mode: mode}
	if r != nil {
		s.Server = r.DHT().Mode() == dht.ModeServer
		s.RoutingTable = r.DHT().RoutingTable().Size()
		s.LANRoutingTable = r.LAN().RoutingTable().Size()
		s.ProviderRecords, s.MaxProviderRecords, s.ProviderRecordsRefused = r.Records()
		s.Discovered = r.Discovered()
		s.RequestsGreeted, s.RequestsRefusedStrangers, s.LANRequestsRefusedStrangers = r.Requests()
	}
	return s
}
