package node

import (
	"testing"
	"time"

	"github.com/wats-network/wats/config"
)

// TestMDNSFindsPeersOfTheSameNetwork: two nodes with p2p.mdns on find each
// other on the LAN and complete hello; each chose to dial the other, so
// each has standing at the other, whichever connection they kept (ADR
// 0041's addendum); a node of another network is not dialled.
func TestMDNSFindsPeersOfTheSameNetwork(t *testing.T) {
	if testing.Short() {
		t.Skip("mDNS waits for multicast announcements")
	}
	cfg := func(network string) *config.Config {
		c := testConfig(false, time.Hour)
		c.Network = network
		c.P2P.MDNS = true
		return c
	}
	a := startNode(t, cfg("mdns-test"))
	b := startNode(t, cfg("mdns-test"))
	other := startNode(t, cfg("mdns-other"))
	deadline := time.Now().Add(20 * time.Second)
	for len(a.run.Helloed(-1)) == 0 || len(b.run.Helloed(-1)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("mDNS: a has %d hello peers, b %d, after 20 s", len(a.run.Helloed(-1)), len(b.run.Helloed(-1)))
		}
		time.Sleep(50 * time.Millisecond) // waiting on the network
	}
	if ok := a.helloed(b.ID()); !ok {
		t.Fatalf("a's hello peers %v do not include b", a.run.Helloed(-1))
	}
	waitFor(t, 10*time.Second, "standing both ways", func() bool { return a.standing(b.ID()) && b.standing(a.ID()) })
	if len(other.run.Helloed(-1)) != 0 {
		t.Fatalf("the node of another network completed hello with %d peers", len(other.run.Helloed(-1)))
	}
}
