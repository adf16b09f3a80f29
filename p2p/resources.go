package p2p

import (
	"fmt"
	"slices"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	"github.com/libp2p/go-libp2p/p2p/protocol/identify"
	"github.com/libp2p/go-libp2p/p2p/protocol/ping"

	"github.com/wats-network/wats/blobs"
	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/proto"
)

// The resource manager's limits (ADR 0030): explicit for every scope a
// stranger reaches, sized so that the streams and memory no number of
// strangers can fill are left for the peers that showed value. The
// arithmetic, with the defaults (p2p.max_conns 256, p2p.max_streams 4096,
// p2p.max_memory_mib 2048), is in the ADR; TestResourceLimitsArithmetic
// checks it. Each yamux stream reserves its 256 KiB receive window in its
// connection's scope (so in the peer's and the system's), whatever it
// carries: that is the memory a held stream costs.

// windowBytes is the receive window yamux reserves per stream.
const windowBytes = 256 << 10

// Per-connection and per-peer bounds.
const (
	// handshakesInFlight bounds the inbound connections in their
	// security and muxer handshakes at once (libp2p's transient scope).
	// Under a flood of dials on two cores (ids the node turned away
	// dialling again, about 1,100 a second) some 250 are in flight, the
	// node's CPU being what queues them; past the bound a dial is refused
	// before its handshake, a newcomer's as well as the flood's. 1,024
	// keeps a newcomer's dial queued instead, for a file descriptor, a
	// goroutine and a few KiB each (no stream, so no window), and libp2p's
	// 15 s accept timeout.
	handshakesInFlight = 1024
	// strangerConnsInbound, strangerConnsOutbound: the connections of a
	// peer without a record. Inbound, one per transport (TCP, QUIC).
	// Outbound, what a hole punch dials at once beside the relayed
	// connection it upgrades: DCUtR dials every address the peer sent at
	// the same moment, and 2 failed every hole punch to a stranger with
	// three addresses before a packet left ("cannot reserve outbound
	// connection"; docs/adr/0047). Outbound connections are this node's
	// own dials: a stranger cannot open them.
	strangerConnsInbound  = 2
	strangerConnsOutbound = 8
	// strangerStreamsInbound, strangerStreamsOutbound: the streams of a
	// peer without a record, all protocols together: enough for identify,
	// gossip both ways, bitswap and a few requests; the caps of its tier
	// (streams.go) come first.
	strangerStreamsInbound  = 40
	strangerStreamsOutbound = 16
	// strangerMemory is a stranger's memory: 64 windows, room for its
	// streams and for a blob it serves at full speed (a bitswap server
	// keeps some MiB of blocks in flight to one peer, 4 MiB for a wats
	// node, each message on a stream of its own).
	strangerMemory = 64 * windowBytes
	// knownStreamsInbound, knownStreamsOutbound, knownMemory: the same for
	// a peer with a record (libp2p's scaled defaults for a peer).
	knownStreamsInbound  = 128
	knownStreamsOutbound = 128
	knownMemory          = 64 << 20
	// bitswapPeerMemory is the memory of one peer's bitswap messages
	// being read: a bitswap server keeps some MiB of blocks in flight to a
	// peer (up to 8 MiB allowed for), and a stranger's reservations may
	// fill 80% of it (high).
	bitswapPeerMemory = 16 << 20
)

// connsPerIPv4 bounds the connections of one IPv4 address at once
// (libp2p's per-subnet limit, 8 by default): the nodes behind one home
// router or carrier-grade NAT share its address, and each may hold a
// connection of each transport, and the dial-backs of AutoNAT come from
// it too (docs/adr/0040). Strangers are bounded by their slots first
// (a quarter of p2p.max_conns, ADR 0030); loopback stays unlimited.
const connsPerIPv4 = 16

// headsStreamsPerPeer bounds one peer's Heads streams each way: one, and
// the one it replaces while that closes.
const headsStreamsPerPeer = 2

// dhtStreamsPerPeer bounds one peer's DHT streams each way: kad-dht
// keeps one to a peer, and a lookup of a new peer may open one more.
const dhtStreamsPerPeer = 4

// PagePoolBytes is the memory of the sync pages being served (limits.Pool,
// outside the resource manager): a sixteenth of p2p.max_memory_mib.
func PagePoolBytes(cfg *config.Config) int64 { return int64(cfg.P2P.MaxMemoryMiB) << 20 / 16 }

// resourceLimits returns the explicit limits of every scope, and the
// per-peer limit of the peers with a record (the partial config's
// PeerDefault is the strangers').
func resourceLimits(cfg *config.Config) (rcmgr.PartialLimitConfig, rcmgr.BaseLimit) {
	conns, streams := cfg.P2P.MaxConns, cfg.P2P.MaxStreams
	mem := int64(cfg.P2P.MaxMemoryMiB)<<20 - PagePoolBytes(cfg)
	lv := func(n int) rcmgr.LimitVal { return rcmgr.LimitVal(n) }
	lv64 := func(n int64) rcmgr.LimitVal64 { return rcmgr.LimitVal64(n) }
	limit := func(in, out int, memory int64) rcmgr.ResourceLimits {
		return rcmgr.ResourceLimits{StreamsInbound: lv(in), StreamsOutbound: lv(out), Streams: lv(in + out), Memory: lv64(memory)}
	}
	// Request frames are at most 1 MiB (proto.MaxRequestBytes), bitswap
	// messages a chunk and a little (blobs.MaxMessageBytes): a peer's
	// service memory holds a handful of them at once.
	watsIn, bitswapIn := streams/2, streams/2
	// Connections in their handshakes count in the system scope too: room
	// is kept for them beyond p2p.max_conns, so that a flood of dials
	// that the stranger slots turn away as they complete never takes the
	// room a newcomer needs to handshake.
	p := rcmgr.PartialLimitConfig{
		System: rcmgr.ResourceLimits{
			Conns: lv(conns + handshakesInFlight), ConnsInbound: lv(conns + handshakesInFlight), ConnsOutbound: lv(conns),
			FD:      lv(conns + handshakesInFlight),
			Streams: lv(streams), StreamsInbound: lv(streams), StreamsOutbound: lv(streams),
			Memory: lv64(mem),
		},
		Transient: rcmgr.ResourceLimits{
			Conns: lv(2 * handshakesInFlight), ConnsInbound: lv(handshakesInFlight), ConnsOutbound: lv(handshakesInFlight),
			FD:      lv(handshakesInFlight),
			Streams: lv(streams / 2), StreamsInbound: lv(streams / 2), StreamsOutbound: lv(streams / 2),
			Memory: lv64(64 << 20),
		},
		ServiceDefault:      limit(watsIn, watsIn, 64<<20),
		ServicePeerDefault:  limit(4, 8, 4<<20),
		ProtocolDefault:     limit(watsIn, watsIn, 64<<20),
		ProtocolPeerDefault: limit(4, 8, 4<<20),
		Service: map[string]rcmgr.ResourceLimits{
			proto.ServiceName:    limit(watsIn, streams/4, 128<<20),
			blobs.ServiceName:    limit(bitswapIn, bitswapIn, 128<<20),
			identify.ServiceName: limit(watsIn, watsIn, 16<<20),
			ping.ServiceName:     limit(64, 64, 1<<20),
		},
		ServicePeer: map[string]rcmgr.ResourceLimits{
			proto.ServiceName:    limit(MaxWatsStreamsPerPeer, MaxWatsStreamsPerPeer, 8<<20),
			blobs.ServiceName:    limit(MaxBitswapStreamsPerPeer, MaxBitswapStreamsPerPeer, bitswapPeerMemory),
			identify.ServiceName: limit(4, 4, 1<<20),
			ping.ServiceName:     limit(2, 2, 1<<16),
		},
		Protocol: map[protocol.ID]rcmgr.ResourceLimits{
			proto.ID: limit(watsIn, streams/4, 128<<20),
		},
		ProtocolPeer: map[protocol.ID]rcmgr.ResourceLimits{
			proto.ID: limit(MaxWatsStreamsPerPeer, MaxWatsStreamsPerPeer, 8<<20),
		},
		PeerDefault: rcmgr.ResourceLimits{
			Conns: lv(strangerConnsInbound + strangerConnsOutbound), ConnsInbound: lv(strangerConnsInbound), ConnsOutbound: lv(strangerConnsOutbound),
			Streams: lv(strangerStreamsInbound + strangerStreamsOutbound), StreamsInbound: lv(strangerStreamsInbound),
			StreamsOutbound: lv(strangerStreamsOutbound), Memory: lv64(strangerMemory),
		},
	}
	// The network's DHT (docs/adr/0040): kad-dht keeps one stream to
	// each peer it queries and handles a peer's requests one at a time
	// on it, each message at most 4 MiB (most a few KiB). An eighth of
	// the streams in all, a few per peer.
	// The LAN DHT (docs/adr/0047) has the same bounds, apart.
	for _, id := range []protocol.ID{proto.DHTProtocol(cfg.Network), proto.DHTLANProtocol(cfg.Network)} {
		p.Protocol[id] = limit(streams/8, streams/8, 32<<20)
		p.ProtocolPeer[id] = limit(dhtStreamsPerPeer, dhtStreamsPerPeer, 4<<20)
	}
	// Heads announcements (docs/adr/0041): one long-lived stream each
	// way to each peer (two while one replaces the other), a frame of at
	// most 2 KiB at a time.
	p.Protocol[proto.HeadsID] = limit(streams/8, streams/8, 16<<20)
	p.ProtocolPeer[proto.HeadsID] = limit(headsStreamsPerPeer, headsStreamsPerPeer, 1<<20)
	// wats's block transfer (docs/adr/0053) is held as bitswap is: it
	// carries the same blocks, and its streams share the bitswap service.
	for _, id := range append(slices.Clone(blobs.Protocols), blobs.BlocksProtocol) {
		p.Protocol[id] = limit(bitswapIn, bitswapIn, 128<<20)
		p.ProtocolPeer[id] = limit(MaxBitswapStreamsPerPeer, MaxBitswapStreamsPerPeer, bitswapPeerMemory)
	}
	known := rcmgr.BaseLimit{
		Conns: 8, ConnsInbound: 8, ConnsOutbound: 8,
		Streams: knownStreamsInbound + knownStreamsOutbound, StreamsInbound: knownStreamsInbound,
		StreamsOutbound: knownStreamsOutbound, Memory: knownMemory, FD: 8,
	}
	return p, known
}

// newResourceManager builds the resource manager: libp2p's defaults scaled
// to p2p.max_memory_mib for what resourceLimits leaves out (file
// descriptors, libp2p's other services), then resourceLimits on top, and a
// limiter that gives the peers with a record (known) their larger per-peer
// limit. libp2p's per-IP limits stay on, at connsPerIPv4 for an IPv4
// address (loopback exempt).
func newResourceManager(cfg *config.Config, known func(peer.ID) bool) (network.ResourceManager, error) {
	scaling := rcmgr.DefaultLimits
	libp2p.SetDefaultServiceLimits(&scaling)
	defaults := scaling.Scale(int64(cfg.P2P.MaxMemoryMiB)<<20, 4096)
	partial, knownLimit := resourceLimits(cfg)
	lim := &tierLimiter{Limiter: rcmgr.NewFixedLimiter(partial.Build(defaults)), known: known, knownLimit: knownLimit}
	// WithMetricsDisabled: libp2p's own Prometheus reporter of the resource
	// manager takes a global lock and formats a timestamp for every scope
	// event (13% of the daemon's CPU under a stream flood), into a registry
	// the node does not serve; the node's metrics are its own.
	rm, err := rcmgr.NewResourceManager(lim, rcmgr.WithMetricsDisabled(),
		rcmgr.WithLimitPerSubnet([]rcmgr.ConnLimitPerSubnet{{PrefixLength: 32, ConnCount: connsPerIPv4}}, nil))
	if err != nil {
		return nil, fmt.Errorf("p2p: resource manager: %w", err)
	}
	return rm, nil
}

// tierLimiter is the fixed limiter of resourceLimits, except that a peer
// with a peer-cache record gets knownLimit for its peer scope. The scope is
// built when the peer's first connection is secured, so a stranger that
// earns a record gets the larger limit from its next connection on.
type tierLimiter struct {
	rcmgr.Limiter
	known      func(peer.ID) bool
	knownLimit rcmgr.BaseLimit
}

// GetPeerLimits returns knownLimit for a peer with a record, else the
// strangers' limit.
func (l *tierLimiter) GetPeerLimits(p peer.ID) rcmgr.Limit {
	if l.known != nil && l.known(p) {
		return &l.knownLimit
	}
	return l.Limiter.GetPeerLimits(p)
}
