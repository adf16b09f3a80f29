package routing

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/host/autorelay"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	"github.com/libp2p/go-libp2p/p2p/protocol/holepunch"

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

// directDialTimeout bounds the direct dial that hole punching tries first
// on a relayed connection, and each of its punches (libp2p's default is
// 10 s). The direct dial succeeds within a round trip or two when the
// peer is reachable, and behind a NAT that drops it it only waits: in the
// simulation every relayed pair of port-keeping NATs waited 5 s for it
// before a punch that took milliseconds (docs/adr/0047).
const directDialTimeout = 3 * time.Second

// relayCandidates bounds the relays AutoRelay is handed at once from the
// DHT's routing table (autorelay.PeerSource's num bounds it further).
const relayCandidates = 32

// NATOptions are a host's options of NAT traversal for cfg: the relay
// transport, the AutoNAT service and client v2, hole punching (traced into
// punches), a port mapping with p2p.nat_port_map, and AutoRelay over
// p2p.relays and the peers of the routing table of the Routing that dht
// returns (nil while there is none: before New, or with p2p.dht off). The
// relay service is StartRelayService's.
func NATOptions(cfg *config.Config, punches *PunchTracer, dht func() *Routing) ([]libp2p.Option, error) {
	opts := []libp2p.Option{
		// The circuit relay v2 client transport: dial and be dialled
		// through relays.
		libp2p.EnableRelay(),
		libp2p.EnableNATService(),
		libp2p.AutoNATServiceRateLimit(autonatPerMin, autonatPerPeerPerMin, time.Minute),
		libp2p.EnableAutoNATv2(),
		libp2p.EnableHolePunching(holepunch.WithTracer(punches), holepunch.DirectDialTimeout(directDialTimeout)),
	}
	if cfg.P2P.NATPortMap {
		opts = append(opts, libp2p.NATPortMap())
	}

	var static []peer.AddrInfo
	for _, s := range cfg.P2P.Relays {
		ai, err := peer.AddrInfoFromString(s)
		if err != nil {
			return nil, fmt.Errorf("routing: p2p.relays: %q: %w", s, err)
		}
		static = append(static, *ai)
	}
	if len(static) > 0 || cfg.P2P.DHT != config.DHTOff {
		// One candidate is enough to reserve a slot at once: AutoRelay's
		// default waits up to 3 minutes for 4 of them, and a network has
		// few relays (p2p.relay_service is opt-in).
		opts = append(opts, libp2p.EnableAutoRelayWithPeerSource(relaySource(static, dht),
			autorelay.WithMinInterval(10*time.Second), autorelay.WithMinCandidates(1)))
	}
	return opts, nil
}

// StartRelayService serves as a circuit relay v2 relay on h (for
// p2p.relay_service): from the start, not once AutoNAT finds the node
// public as libp2p's own option does, since the operator who turns it on
// declares the node public, and AutoNAT's answer can flap (a peer's
// dial-back refused by a per-address limit reads as "private"). Close the
// relay it returns.
func StartRelayService(h host.Host) (*relay.Relay, error) {
	r, err := relay.New(h, relay.WithResources(relayResources))
	if err != nil {
		return nil, fmt.Errorf("routing: relay service: %w", err)
	}
	return r, nil
}

// relaySource hands AutoRelay its relay candidates: the configured ones
// (p2p.relays) first, then the peers of the DHT's routing table, which
// AutoRelay asks whether they serve as relays.
func relaySource(static []peer.AddrInfo, dht func() *Routing) autorelay.PeerSource {
	return func(ctx context.Context, num int) <-chan peer.AddrInfo {
		out := make(chan peer.AddrInfo, min(num, len(static)+relayCandidates))
		defer close(out)
		for _, ai := range static {
			if len(out) == cap(out) {
				return out
			}
			out <- ai
		}
		r := dht()
		if r == nil {
			return out
		}
		for _, p := range r.dht.RoutingTable().ListPeers() {
			if len(out) == cap(out) {
				break
			}
			if addrs := r.opts.Host.Peerstore().Addrs(p); len(addrs) > 0 {
				out <- peer.AddrInfo{ID: p, Addrs: addrs}
			}
		}
		return out
	}
}

// PunchTracer remembers the peers a hole punch connected directly, for
// the connection kinds of status (holepunch.EventTracer). Make one with
// NewPunchTracer.
type PunchTracer struct {
	mu      sync.Mutex
	punched map[peer.ID]bool
	// succeeded and failed count the hole punches that ended.
	succeeded, failed uint64
}

// NewPunchTracer returns a tracer that remembers no hole punch yet.
func NewPunchTracer() *PunchTracer { return &PunchTracer{punched: make(map[peer.ID]bool)} }

// Trace records the end of a hole punch.
func (t *PunchTracer) Trace(evt *holepunch.Event) {
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

// HolePunched reports whether p's direct connection came from a hole
// punch.
func (t *PunchTracer) HolePunched(p peer.ID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.punched[p]
}

// Forget drops p, gone.
func (t *PunchTracer) Forget(p peer.ID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.punched, p)
}

// Counts returns the hole punches that succeeded and failed.
func (t *PunchTracer) Counts() (succeeded, failed uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.succeeded, t.failed
}
