package node

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/host/autorelay"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	"github.com/libp2p/go-libp2p/p2p/protocol/holepunch"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/config"
)

// NAT traversal (docs/adr/0040): AutoNAT v1 and v2 tell the node whether
// it is publicly reachable; a node that is not keeps reservations on
// circuit relay v2 relays (AutoRelay) and is reached through them, and a
// relayed connection is upgraded to a direct one by hole punching (DCUtR).
// A relayed connection carries hello and sync (small, resumable at the
// cursor), never blobs.

// relayResources are the limits of this node's relay service
// (p2p.relay_service), explicit rather than libp2p's defaults that may
// change: reservations of peers behind NATs, and the circuits through
// them. A circuit lives at most relayCircuitDuration and carries at most
// relayCircuitBytes each way, room for hello and a sync page of a few
// thousand events, not for blobs; the two ends meanwhile punch a hole.
var relayResources = relay.Resources{
	Limit:           &relay.RelayLimit{Duration: relayCircuitDuration, Data: relayCircuitBytes},
	ReservationTTL:  time.Hour,
	MaxReservations: 128,
	MaxCircuits:     16,
	BufferSize:      2048,
	// One reservation per peer; up to 16 peers behind one home router
	// (one IP), 32 of one ASN.
	MaxReservationsPerPeer: 1,
	MaxReservationsPerIP:   16,
	MaxReservationsPerASN:  32,
}

const (
	relayCircuitDuration = 2 * time.Minute
	relayCircuitBytes    = 1 << 20
)

// Bounds of the AutoNAT v1 service (dial-backs this node makes for peers
// asking whether they are reachable): libp2p's defaults, explicit.
const (
	autonatPerMin        = 30
	autonatPerPeerPerMin = 3
)

// relayCandidates bounds the relays AutoRelay is handed at once from the
// DHT's routing table (autorelay.PeerSource's num bounds it further).
const relayCandidates = 32

// natOptions are the host's options of NAT traversal for cfg: the relay
// transport, the AutoNAT service and client v2, hole punching (traced into
// punches), a port mapping with p2p.nat_port_map, and AutoRelay over
// p2p.relays and the DHT's peers. The relay service is startRelayService's.
func (n *Node) natOptions(cfg *config.Config) ([]libp2p.Option, error) {
	opts := []libp2p.Option{
		// The circuit relay v2 client transport: dial and be dialled
		// through relays.
		libp2p.EnableRelay(),
		libp2p.EnableNATService(),
		libp2p.AutoNATServiceRateLimit(autonatPerMin, autonatPerPeerPerMin, time.Minute),
		libp2p.EnableAutoNATv2(),
		libp2p.EnableHolePunching(holepunch.WithTracer(n.punches)),
	}
	if cfg.P2P.NATPortMap {
		opts = append(opts, libp2p.NATPortMap())
	}

	var static []peer.AddrInfo
	for _, s := range cfg.P2P.Relays {
		ai, err := peer.AddrInfoFromString(s)
		if err != nil {
			return nil, fmt.Errorf("node: p2p.relays: %q: %w", s, err)
		}
		static = append(static, *ai)
	}
	if len(static) > 0 || cfg.P2P.DHT != config.DHTOff {
		// One candidate is enough to reserve a slot at once: AutoRelay's
		// default waits up to 3 minutes for 4 of them, and a network has
		// few relays (p2p.relay_service is opt-in).
		opts = append(opts, libp2p.EnableAutoRelayWithPeerSource(n.relaySource(static),
			autorelay.WithMinInterval(10*time.Second), autorelay.WithMinCandidates(1)))
	}
	return opts, nil
}

// startRelayService serves as a circuit relay v2 relay when
// p2p.relay_service is on: from the start, not once AutoNAT finds the node
// public as libp2p's own option does, since the operator who turns it on
// declares the node public, and AutoNAT's answer can flap (a peer's
// dial-back refused by a per-address limit reads as "private").
func (n *Node) startRelayService() error {
	if !n.cfg.P2P.RelayService {
		return nil
	}
	r, err := relay.New(n.host, relay.WithResources(relayResources))
	if err != nil {
		return fmt.Errorf("node: relay service: %w", err)
	}
	n.relay = r
	return nil
}

// relaySource hands AutoRelay its relay candidates: the configured ones
// (p2p.relays) first, then the peers of the DHT's routing table, which
// AutoRelay asks whether they serve as relays.
func (n *Node) relaySource(static []peer.AddrInfo) autorelay.PeerSource {
	return func(ctx context.Context, num int) <-chan peer.AddrInfo {
		out := make(chan peer.AddrInfo, min(num, len(static)+relayCandidates))
		defer close(out)
		for _, ai := range static {
			if len(out) == cap(out) {
				return out
			}
			out <- ai
		}
		r := n.routing.Load()
		if r == nil {
			return out
		}
		for _, p := range r.dht.RoutingTable().ListPeers() {
			if len(out) == cap(out) {
				break
			}
			if addrs := n.host.Peerstore().Addrs(p); len(addrs) > 0 {
				out <- peer.AddrInfo{ID: p, Addrs: addrs}
			}
		}
		return out
	}
}

// punchTracer remembers the peers a hole punch connected directly, for
// the connection kinds of status (holepunch.EventTracer).
type punchTracer struct {
	mu      sync.Mutex
	punched map[peer.ID]bool
	// succeeded and failed count the hole punches that ended.
	succeeded, failed uint64
}

func newPunchTracer() *punchTracer { return &punchTracer{punched: make(map[peer.ID]bool)} }

// Trace records the end of a hole punch.
func (t *punchTracer) Trace(evt *holepunch.Event) {
	end, ok := evt.Evt.(*holepunch.EndHolePunchEvt)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if end.Success {
		t.succeeded++
		t.punched[evt.Remote] = true
	} else {
		t.failed++
	}
}

// holePunched reports whether p's direct connection came from a hole
// punch.
func (t *punchTracer) holePunched(p peer.ID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.punched[p]
}

// forget drops p, gone.
func (t *punchTracer) forget(p peer.ID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.punched, p)
}

// counts returns the hole punches that succeeded and failed.
func (t *punchTracer) counts() (succeeded, failed uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.succeeded, t.failed
}

// linked reports whether p has a connection, direct or relayed (network.
// Limited): a peer reached through a relay is a peer like another for
// hello, sync and its run state.
func (n *Node) linked(p peer.ID) bool {
	c := n.host.Network().Connectedness(p)
	return c == network.Connected || c == network.Limited
}

// connKind says how p is connected (api.Peer.Conn): relayed when every connection goes
// through a relay, hole-punched when the direct one came from a hole
// punch, direct otherwise; "" when not connected.
func (n *Node) connKind(p peer.ID) string {
	conns := n.host.Network().ConnsToPeer(p)
	if len(conns) == 0 {
		return ""
	}
	for _, c := range conns {
		if !c.Stat().Limited && !isRelayed(c.RemoteMultiaddr()) {
			if n.punches.holePunched(p) {
				return api.ConnHolePunched
			}
			return api.ConnDirect
		}
	}
	return api.ConnRelayed
}

// watchReachability keeps the reachability AutoNAT last reported
// (n.reachability) until the node closes.
func (n *Node) watchReachability() {
	sub, err := n.host.EventBus().Subscribe(new(event.EvtLocalReachabilityChanged))
	if err != nil {
		n.log.Warn("cannot follow the node's reachability", "err", err)
		return
	}
	defer sub.Close()
	for {
		select {
		case <-n.ctx.Done():
			return
		case e, ok := <-sub.Out():
			if !ok {
				return
			}
			r := e.(event.EvtLocalReachabilityChanged).Reachability
			n.reachability.Store(int32(r))
			n.log.Info("reachability changed", "reachability", reachabilityName(r))
		}
	}
}

// reachabilityName names r as status shows it: public, private or
// unknown.
func reachabilityName(r network.Reachability) string {
	switch r {
	case network.ReachabilityPublic:
		return "public"
	case network.ReachabilityPrivate:
		return "private"
	default:
		return "unknown"
	}
}
