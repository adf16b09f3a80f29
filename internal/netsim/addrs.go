package netsim

import (
	"net"
	"os"
	"slices"

	"github.com/libp2p/go-libp2p/p2p/host/observedaddrs"
	manet "github.com/multiformats/go-multiaddr/net"
)

// EnvAddrs is the environment variable that makes a daemon take the
// simulated internet's addresses for what they stand for (UseSimAddrs):
// the harness sets it for the daemons it runs, and nothing else does.
const EnvAddrs = "WATS_NETSIM"

// The address ranges of the simulated internet, inside 198.18.0.0/15, the
// range RFC 2544 sets aside for benchmarks such as this one.
var (
	// PublicNet is the "internet": the public nodes and the WAN side of
	// every home router.
	PublicNet = mustCIDR("198.18.0.0/16")
	// PrivateNet holds the LANs behind the routers, a /24 each.
	PrivateNet = mustCIDR("198.19.0.0/16")
)

func mustCIDR(s string) *net.IPNet {
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err)
	}
	return n
}

// SimObservers is how many peers must report the same observed address
// of a node before it believes it, in the simulated internet: its public
// nodes are few, where libp2p's default (4) assumes the internet's many.
const SimObservers = 2

// UseSimAddrs, when EnvAddrs is "1", makes this process's libp2p treat
// PublicNet as public addresses and PrivateNet as private ones (both are
// unroutable to go-multiaddr, so AutoNAT, relays and hole punching would
// ignore them), and believe an observed address after SimObservers
// observers. It must run before any libp2p host is built; it reports
// whether it did anything.
func UseSimAddrs() bool {
	if os.Getenv(EnvAddrs) != "1" {
		return false
	}
	manet.Unroutable4 = slices.DeleteFunc(slices.Clone(manet.Unroutable4), func(n *net.IPNet) bool {
		return n.Contains(PublicNet.IP) || n.Contains(PrivateNet.IP)
	})
	manet.Private4 = append(slices.Clone(manet.Private4), PrivateNet)
	observedaddrs.ActivationThresh = SimObservers
	return true
}
