package p2p

import (
	"testing"

	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"

	"github.com/wats-network/wats/blobs"
	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/peers"
	"github.com/wats-network/wats/proto"
)

// TestResourceLimitsArithmetic checks ADR 0030's arithmetic on the default
// config: what every stranger the slots admit can hold, together, stays
// below each scope's limit, and below half the memory; the per-peer scopes
// hold what the per-tier caps let a peer hold; handshakes have room of
// their own.
func TestResourceLimitsArithmetic(t *testing.T) {
	cfg := config.Default()
	p, known := resourceLimits(cfg)
	c := p.Build(rcmgr.InfiniteLimits).ToPartialLimitConfig()
	slots := peers.NewSlots[int](StrangerSlots(cfg), nil)
	strangers := slots.N() + slots.Slack() // in the slots and still closing
	newTier := limits.TierNew
	v := func(l rcmgr.LimitVal) int { return int(l) }

	// The values are the ones set (a limit left to Build's defaults would be
	// unlimited here, and every check below would pass for nothing).
	if c.System.Memory != rcmgr.LimitVal64(1920<<20) || v(c.Transient.StreamsInbound) != 2048 || v(c.System.ConnsInbound) != 1280 ||
		v(c.PeerDefault.StreamsInbound) != strangerStreamsInbound {
		t.Fatalf("limits not as set: system %+v, transient %+v, peer %+v", c.System, c.Transient, c.PeerDefault)
	}
	checks := []struct {
		what        string
		used, limit int
	}{
		{"transient inbound streams: strangers' un-negotiated", strangers * int(UnnegotiatedCap[newTier]), v(c.Transient.StreamsInbound)},
		{"/wats inbound streams: strangers'", strangers * int(WatsStreamCap[newTier]), v(c.Service[proto.ServiceName].StreamsInbound)},
		{"bitswap inbound streams: strangers'", strangers * int(BitswapStreamCap[newTier]), v(c.Service[blobs.ServiceName].StreamsInbound)},
		{"system inbound streams: strangers' at their peer limit", strangers * strangerStreamsInbound, v(c.System.StreamsInbound)},
		{"a stranger's caps within its peer limit", int(UnnegotiatedCap[newTier]+WatsStreamCap[newTier]+BitswapStreamCap[newTier]) + headsStreamsPerPeer, strangerStreamsInbound},
		{"strangers' heads streams within the protocol's", strangers * headsStreamsPerPeer, v(c.Protocol[proto.HeadsID].StreamsInbound)},
		{"a stranger's windows within its memory", strangerStreamsInbound * windowBytes, strangerMemory},
		{"strangers' memory within the system's", strangers * strangerMemory, int(c.System.Memory)},
		{"a valued peer's /wats streams within its protocol-peer limit", int(WatsStreamCap[limits.TierValued]), v(c.ProtocolPeer[proto.ID].StreamsInbound)},
		{"a valued peer's bitswap streams within its protocol-peer limit", int(BitswapStreamCap[limits.TierValued]), v(c.ProtocolPeer[blobs.Protocols[0]].StreamsInbound)},
		{"a known peer's caps within its peer limit", int(UnnegotiatedCap[limits.TierValued]+WatsStreamCap[limits.TierValued]+BitswapStreamCap[limits.TierValued]) + headsStreamsPerPeer, known.StreamsInbound},
		{"handshakes beyond the connections", cfg.P2P.MaxConns + handshakesInFlight, v(c.System.ConnsInbound)},
		{"handshakes within the transient scope", handshakesInFlight, v(c.Transient.ConnsInbound)},
		{"stranger slots within the connections", slots.N(), cfg.P2P.MaxConns},
	}
	for _, ck := range checks {
		if ck.used > ck.limit {
			t.Errorf("%s: %d > %d", ck.what, ck.used, ck.limit)
		}
	}
	// The strangers take at most 80% of the system memory, in the worst
	// case: the peers with records keep the rest.
	if worst, sys := int64(strangers)*strangerMemory, int64(c.System.Memory); worst*5 > sys*4 {
		t.Errorf("strangers' worst case %d MiB is over 80%% of %d MiB", worst>>20, sys>>20)
	}
	// Explicit, not libp2p's scaled defaults: the system limit on inbound
	// streams is the config's, and at least what the /wats service allows.
	if v(c.System.StreamsInbound) != cfg.P2P.MaxStreams || v(c.Service[proto.ServiceName].StreamsInbound) > v(c.System.StreamsInbound) {
		t.Errorf("system inbound streams %d, /wats %d", v(c.System.StreamsInbound), v(c.Service[proto.ServiceName].StreamsInbound))
	}
	if pool := PagePoolBytes(cfg); pool+int64(c.System.Memory) != int64(cfg.P2P.MaxMemoryMiB)<<20 {
		t.Errorf("page pool %d + resource manager %d != max_memory_mib", pool, c.System.Memory)
	}
}
