package p2p

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/control"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	"github.com/libp2p/go-libp2p/p2p/net/connmgr"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	noise "github.com/libp2p/go-libp2p/p2p/security/noise"
	libp2ptls "github.com/libp2p/go-libp2p/p2p/security/tls"
	quic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"

	"github.com/wats-network/wats/config"
)

// NewHost builds the node's libp2p host from the config: TCP and QUIC,
// Noise and TLS, yamux, the resource manager with explicit limits for every
// scope (resources.go; known reports the peers with a peer-cache record,
// which get the larger per-peer limits), the connection manager, and the
// gater; extra are more options (NAT traversal, package routing). It
// listens on p2p.listen: an address it cannot listen on is a
// *ListenError.
func NewHost(cfg *config.Config, key crypto.PrivKey, agent string, g *Gater, known func(peer.ID) bool, extra ...libp2p.Option) (host.Host, error) {
	cm, err := connmgr.NewConnManager(cfg.P2P.ConnsLow, cfg.P2P.ConnsHigh,
		connmgr.WithGracePeriod(cfg.P2P.ConnsGrace.Duration))
	if err != nil {
		return nil, fmt.Errorf("p2p: connection manager: %w", err)
	}
	rm, err := newResourceManager(cfg, known)
	if err != nil {
		return nil, err
	}
	h, err := libp2p.New(
		libp2p.Identity(key),
		// The host starts without listeners; listen below opens them, so
		// that a failure to listen is told apart from any other.
		libp2p.NoListenAddrs,
		// With SO_REUSEPORT, outbound TCP connections leave from the
		// listening port, so that peers observe the port a NAT maps for
		// it and hole punching works over TCP as over QUIC (docs/adr/0040).
		// listen first checks that no other process holds a port, so a
		// second daemon on the same port still fails to start.
		libp2p.Transport(tcp.NewTCPTransport),
		libp2p.Transport(quic.NewTransport),
		libp2p.Security(noise.ID, noise.New),
		libp2p.Security(libp2ptls.ID, libp2ptls.New),
		libp2p.Muxer(yamux.ID, yamux.DefaultTransport),
		libp2p.ResourceManager(rm),
		libp2p.ConnectionManager(cm),
		libp2p.ConnectionGater(g),
		libp2p.UserAgent(agent),
		libp2p.DialRanker(tcpFirstDialRanker),
		// libp2p's metrics go to Prometheus's global registry, which the
		// node does not serve: they would cost every connection and stream
		// for nothing.
		libp2p.DisableMetrics(),
		libp2p.ChainOptions(extra...),
	)
	if err != nil {
		rm.Close()
		return nil, fmt.Errorf("p2p: start libp2p host: %w", err)
	}
	if err := listen(h.Network(), cfg.P2P.Listen); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// ErrListen is returned (wrapped in a *ListenError) by NewHost, and so by
// node.New and daemon.Run, when the node cannot listen on every address of
// p2p.listen.
var ErrListen = errors.New("p2p: cannot listen")

// ListenError says which addresses of p2p.listen the node could not listen
// on, and why. Its message names the key to change.
type ListenError struct {
	// Failed are the addresses of p2p.listen with no listener, as
	// configured.
	Failed []string
	// Err is the first address's reason (its transport's error, such as
	// "bind: address already in use").
	Err error
}

func (e *ListenError) Error() string {
	return fmt.Sprintf("p2p: cannot listen on %s: %v; set p2p.listen in config.toml to free addresses, "+
		"or to port 0 for any free port (as wats init --profile local does)", strings.Join(e.Failed, ", "), e.Err)
}

func (e *ListenError) Unwrap() []error { return []error{ErrListen, e.Err} }

// listen opens a listener on every address of addrs (p2p.listen), one by
// one. libp2p's own Listen succeeds as long as one address works; the node
// insists on all, so that a port already in use is an error at start
// rather than a transport silently missing. A TCP port is first bound
// without SO_REUSEPORT (portFree), since libp2p's listener, which sets it,
// would share the port with another daemon. It returns a *ListenError
// naming the addresses that have none.
func listen(nw network.Network, addrs []string) error {
	l, ok := nw.(interface{ AddListenAddr(ma.Multiaddr) error })
	if !ok {
		return fmt.Errorf("p2p: %T cannot add listen addresses", nw)
	}
	var failed []string
	var first error
	for _, s := range addrs {
		err := errors.New("not a multiaddr")
		if a, perr := ma.NewMultiaddr(s); perr == nil {
			if err = portFree(a); err == nil {
				err = l.AddListenAddr(a)
			}
		}
		if err != nil {
			failed = append(failed, s)
			if first == nil {
				first = err
			}
		}
	}
	if len(failed) > 0 {
		return &ListenError{Failed: failed, Err: first}
	}
	return nil
}

// portFree checks that a plain TCP address (not port 0) can be bound
// without SO_REUSEPORT, that is, that no other socket holds its port; nil
// for any other address.
func portFree(a ma.Multiaddr) error {
	if port, err := a.ValueForProtocol(ma.P_TCP); err != nil || port == "0" || !isTCP(a) {
		return nil
	}
	network, host, err := manet.DialArgs(a)
	if err != nil {
		return nil
	}
	l, err := net.Listen(network, host)
	if err != nil {
		return err
	}
	return l.Close()
}

// quicHeadStart is how long a dial waits for TCP before it also tries
// the peer's other addresses (QUIC): libp2p's default ranking, reversed.
const quicHeadStart = 250 * time.Millisecond

// tcpFirstDialRanker ranks a peer's addresses as libp2p's default ranker
// does, except that TCP goes first and every other transport (QUIC) waits
// quicHeadStart more (ADR 0029): with Go's QUIC stack a blob transfer costs
// about 1.5 times the CPU of TCP with yamux on both ends (docs/performance.md),
// and blobs are the node's largest traffic. A peer reachable only over QUIC
// is dialled after the head start.
func tcpFirstDialRanker(addrs []ma.Multiaddr) []network.AddrDelay {
	ranked := swarm.DefaultDialRanker(addrs)
	first := time.Duration(-1)
	for _, r := range ranked {
		if isTCP(r.Addr) && (first < 0 || r.Delay < first) {
			first = r.Delay
		}
	}
	if first < 0 {
		return ranked // no TCP address
	}
	for i := range ranked {
		if isTCP(ranked[i].Addr) {
			ranked[i].Delay -= first
		} else {
			ranked[i].Delay += quicHeadStart
		}
	}
	return ranked
}

// isTCP reports whether a is a TCP address (not a WebSocket or other
// protocol over TCP).
func isTCP(a ma.Multiaddr) bool {
	for i := len(a) - 1; i >= 0; i-- {
		if code := a[i].Protocol().Code; code != ma.P_P2P {
			return code == ma.P_TCP
		}
	}
	return false
}

// Gater is the host's connection gater: it refuses peers whose key is not
// Ed25519 (docs/design.md §3), and peers banned for a while (Ban: found on
// another network, evicted, flooding streams). Make one with NewGater.
type Gater struct {
	mu struct {
		sync.Mutex
		// banned maps a peer to the time its ban ends; pruned is when
		// the ended ones were last dropped.
		banned map[peer.ID]time.Time
		pruned time.Time
	}
	now func() time.Time
	// Secured, if set, decides the secured inbound connections the bans
	// let through (the node's stranger slots).
	Secured func(peer.ID) bool
}

// NewGater returns a gater that reads the time from now.
func NewGater(now func() time.Time) *Gater {
	g := &Gater{now: now}
	g.mu.banned = make(map[peer.ID]time.Time)
	return g
}

// banPruneEvery is how often ban drops the bans that ended: at most once
// a second, so that a flood of bans (evicted strangers, stream floods)
// costs one pass a second over the map, not one per ban.
const banPruneEvery = time.Second

// Ban refuses p until now+d.
func (g *Gater) Ban(p peer.ID, d time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	g.mu.banned[p] = now.Add(d)
	if now.Sub(g.mu.pruned) < banPruneEvery && !now.Before(g.mu.pruned) {
		return
	}
	g.mu.pruned = now
	for id, until := range g.mu.banned { // keep the map small
		if !until.After(now) {
			delete(g.mu.banned, id)
		}
	}
}

// Banned reports whether p is refused now.
func (g *Gater) Banned(p peer.ID) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	until, ok := g.mu.banned[p]
	return ok && until.After(g.now())
}

// isEd25519 reports whether p is the peer ID of an Ed25519 key.
func isEd25519(p peer.ID) bool {
	pk, err := p.ExtractPublicKey()
	return err == nil && pk.Type() == crypto.Ed25519
}

// InterceptPeerDial, InterceptAddrDial, InterceptAccept, InterceptSecured
// and InterceptUpgraded are the gater's answers to libp2p
// (connmgr.ConnectionGater).
func (g *Gater) InterceptPeerDial(p peer.ID) bool                 { return isEd25519(p) && !g.Banned(p) }
func (g *Gater) InterceptAddrDial(p peer.ID, _ ma.Multiaddr) bool { return true }
func (g *Gater) InterceptAccept(network.ConnMultiaddrs) bool      { return true }
func (g *Gater) InterceptSecured(dir network.Direction, p peer.ID, _ network.ConnMultiaddrs) bool {
	if !isEd25519(p) || g.Banned(p) {
		return false
	}
	return dir != network.DirInbound || g.Secured == nil || g.Secured(p)
}
func (g *Gater) InterceptUpgraded(network.Conn) (bool, control.DisconnectReason) { return true, 0 }
