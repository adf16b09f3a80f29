package routing

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ipfs/boxo/provider"
	"github.com/ipfs/go-cid"
	ds "github.com/ipfs/go-datastore"
	"github.com/ipfs/go-datastore/namespace"
	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p-kad-dht/dual"
	pb "github.com/libp2p/go-libp2p-kad-dht/pb"
	kb "github.com/libp2p/go-libp2p-kbucket"
	"github.com/libp2p/go-libp2p-kbucket/peerdiversity"
	"github.com/libp2p/go-libp2p/core/discovery"
	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	corerouting "github.com/libp2p/go-libp2p/core/routing"
	drouting "github.com/libp2p/go-libp2p/p2p/discovery/routing"
	routedhost "github.com/libp2p/go-libp2p/p2p/host/routed"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"

	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/proto"
)

// The DHT of the network and its bounds (docs/adr/0040). Its own traffic
// is bounded by kad-dht's query parameters, by the resource manager's
// scope of its protocol (p2p/resources.go), and by a budget of requests per
// peer (request); the provider records other peers store here, by
// maxProviderRecords.
const (
	// dhtBucketSize is k, the peers of each bucket of the routing table
	// and the closest peers a lookup ends with (kad-dht's default, 20):
	// a table holds at most k peers per shared-prefix length, so at most
	// some 20*log2(N) peers for a network of N nodes.
	dhtBucketSize = 20
	// dhtConcurrency is alpha, the requests one lookup has in flight at
	// once (kad-dht's default, 10).
	dhtConcurrency = 10
	// dhtMaxPerCpl and dhtMaxPerTable bound the peers of one IP group (a
	// /16 of IPv4, an ASN of IPv6) in the routing table: per bucket and in
	// all, so that one network's addresses never fill a table. Peers at
	// non-public addresses (loopback, private
	// and test ranges) are exempt: a network on one machine or one LAN
	// would otherwise keep 3 peers in its table.
	dhtMaxPerCpl   = 2
	dhtMaxPerTable = 3

	// dhtRequestsPerMin is each peer's budget of DHT requests a minute,
	// before its tier's percentage (limits.Budget): an honest lookup
	// sends one request to each peer it asks, and an honest provider a
	// record a blob a day (22 h) to the 20 peers closest to its CID.
	dhtRequestsPerMin = 600

	// lanRecordsShare: the LAN DHT's records are bounded by a
	// lanRecordsShare-th of maxProviderRecords (of Options.MaxRecords)
	// beside them (docs/adr/0047): a LAN holds far fewer nodes.
	lanRecordsShare = 4

	// maxProviderRecords bounds the provider records other peers store
	// here (about 150 bytes each on disk, so some 40 MB); past it a new
	// record is refused until records expire (48 h after their last
	// provide, amino.DefaultProvideValidity).
	maxProviderRecords = 1 << 18

	// strangersRecordShare is the strangers' share of maxProviderRecords,
	// in quarters: three quarters, the last quarter kept for the records
	// of peers that showed value (ADR 0030's tiers).
	strangersRecordShare = 3

	// reprovideInterval is how often every complete blob is provided
	// again: well within the records' 48 h validity, so that a provide
	// that fails once is made again before the records it renews expire.
	reprovideInterval = 22 * time.Hour
	// provideWorkers bounds the provides running at once, each a lookup
	// and 20 ADD_PROVIDER messages.
	provideWorkers = 8

	// findProvidersTimeout bounds the search for a blob's providers.
	findProvidersTimeout = 30 * time.Second
	// routingTableWait bounds how long a search for providers waits for
	// a first peer in the routing table (a node just started, before its
	// bootstrap dials): a node whose table stays empty (no DHT server
	// around) fails its fetches that soon, not after findProvidersTimeout.
	routingTableWait = 5 * time.Second
	// providersGrace is how long a search for providers goes on after
	// the first one came, for others that come close behind.
	providersGrace = time.Second
	// findPeerTimeout bounds the search for a peer's addresses.
	findPeerTimeout = 30 * time.Second

	// discoverLimit bounds the peers one look returns (dialled by
	// Discover's dial, the node's, a few at once).
	discoverLimit = 64
	// advertiseTTL is how long the node's rendezvous record is asked to
	// live; it is put again at 7/8 of it (Discover). The DHT servers
	// keep a record 48 h whatever it says, so a node that left is found
	// there for up to 2 days (a dial then fails).
	advertiseTTL = 3 * time.Hour
)

// discoverEvery is how often the node looks for peers of its network
// under the rendezvous key while it has fewer than p2p.conns_low;
// discoverFirst is the first look, after the bootstrap dials, and the
// looks between are twice as far apart each time (5 s, 10 s, 20 s, 40 s,
// then every minute): the nodes that start together advertise within
// those first seconds. Variables so that tests can shorten them.
var (
	discoverEvery = time.Minute
	discoverFirst = 5 * time.Second
)

// Nodes looks for the nodes of the network under its rendezvous key, at
// most discoverLimit of them (this node among them, if it advertised).
func (r *Routing) Nodes(ctx context.Context) (<-chan peer.AddrInfo, error) {
	return r.disc.FindPeers(ctx, rendezvous(r.opts.Network), discovery.Limit(discoverLimit))
}

// rendezvous is the key under which the nodes of a network advertise
// themselves on its DHT (docs/adr/0040).
func rendezvous(network string) string { return "/wats/" + network + "/nodes" }

// Routing is a node's DHT and what uses it: a routed host for dials by
// peer ID, the discovery of the network's nodes, the providing of
// complete blobs, and the bounds on what peers ask of it (a budget of
// requests per peer, the store of the provider records they put). Built
// by New; Close it.
type Routing struct {
	opts Options
	// dual is the network's DHT and its LAN DHT (docs/adr/0047); dht is
	// the network's, dual.WAN.
	dual   *dual.DHT
	dht    *dht.IpfsDHT
	routed *routedhost.RoutedHost
	disc   *drouting.RoutingDiscovery
	prov   provider.System
	// wan and lan are the bounds of what peers ask of the network's DHT
	// and of the LAN DHT: each its own, as each DHT's provider manager
	// caches the records it stored and an honest lookup asks each peer
	// once on each DHT.
	wan, lan bounds
	// budget is each peer's budget of DHT requests (request).
	// discovered is how many other nodes the last look under the
	// rendezvous key found (at most discoverLimit).
	discovered atomic.Int64
	// recheck emits the event that makes the DHTs look at a greeted peer
	// again (Greeted).
	recheck event.Emitter
	// ctx ends with New's or at Close: boxo's reprovides run on a context
	// of their own.
	ctx    context.Context
	cancel context.CancelFunc
}

// Options are what a Routing takes of its node.
type Options struct {
	// Host is the node's host.
	Host host.Host
	// Network is the node's network: the DHT's protocol prefix
	// (proto.DHTPrefix) and the rendezvous key of its nodes.
	Network string
	// Mode is p2p.dht: config.DHTServer, DHTClient or DHTAuto.
	Mode string
	// Datastore is the node's database; the DHT keeps its keys under
	// /dht (dhtKeyPrefix).
	Datastore ds.Batching
	// Limits gives the tier percentages of the request budget.
	Limits limits.Config
	// MaxRecords bounds the provider records peers put here; 0 means
	// maxProviderRecords.
	MaxRecords int
	// Room, if set, is asked before a record of n bytes is written (ADR
	// 0044: a full disk refuses new records as a full store does).
	Room func(n int) error
	// Bootstrap returns the peers the DHT may bootstrap from when its
	// routing table is empty (kad-dht picks among them at random).
	Bootstrap func() []peer.AddrInfo
	// Blobs returns the CIDs of the complete blobs, provided again every
	// reprovideInterval.
	Blobs func() []cid.Cid
	// Tier returns a peer's tier, for its budget of requests.
	Tier func(peer.ID) limits.Tier
	// Mono returns the node's monotonic clock, in nanoseconds.
	Mono func() int64
	// Greeted, if set, takes one request of p's greeted allowance at the
	// monotonic reading mono (peers.Table.TakeGreeted), reporting whether
	// it had one: what a stranger that completed hello draws before the
	// strangers' shared budget (ADR 0059).
	Greeted func(p peer.ID, mono time.Duration) bool
	// Refused, if set, is told of each request refused and why.
	Refused func(p peer.ID, typ pb.Message_MessageType, why string)
	// Log is the node's logger; nil discards.
	Log *slog.Logger
}

// dhtMode maps p2p.dht to kad-dht's mode.
func dhtMode(mode string) dht.ModeOpt {
	switch mode {
	case config.DHTServer:
		return dht.ModeServer
	case config.DHTClient:
		return dht.ModeClient
	default:
		return dht.ModeAuto
	}
}

// New builds and starts the DHT of opts.Network (the node calls it when
// p2p.dht is not off): its records in the node's database under /dht/,
// bootstrapped from opts.Bootstrap, and the provider system that provides
// each complete blob and provides them all again every reprovideInterval.
// ctx bounds the background work that outlives a call (a reprovide's list
// of blobs); Close stops the rest. A required option left nil (Host,
// Datastore, Bootstrap, Blobs, Tier, Mono) is an error.
func New(ctx context.Context, opts Options) (_ *Routing, err error) {
	if opts.Host == nil || opts.Datastore == nil || opts.Bootstrap == nil || opts.Blobs == nil || opts.Tier == nil || opts.Mono == nil {
		return nil, errors.New("routing: Options need Host, Datastore, Bootstrap, Blobs, Tier and Mono")
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.MaxRecords == 0 {
		opts.MaxRecords = maxProviderRecords
	}
	r := &Routing{opts: opts}
	dstore := namespace.Wrap(opts.Datastore, ds.NewKey(dhtKeyPrefix))
	lanStore := namespace.Wrap(dstore, ds.NewKey("lan"))
	if r.wan, err = newBounds(dstore, opts.MaxRecords, opts); err != nil {
		return nil, fmt.Errorf("routing: DHT: %w", err)
	}
	if r.lan, err = newBounds(lanStore, max(1, opts.MaxRecords/lanRecordsShare), opts); err != nil {
		return nil, fmt.Errorf("routing: LAN DHT: %w", err)
	}
	r.dual, err = dual.New(opts.Host,
		dual.DHTOption(
			dht.BootstrapPeersFunc(opts.Bootstrap),
			// The network stores no values (public keys, IPNS): nothing a
			// peer can write beyond provider records.
			dht.DisableValues(),
			dht.BucketSize(dhtBucketSize),
			dht.Concurrency(dhtConcurrency),
			dht.OnRequestHook(r.request),
		),
		dual.WanDHTOption(
			dht.ProtocolPrefix(proto.DHTPrefix(opts.Network)),
			dht.Mode(dhtMode(opts.Mode)),
			dht.Datastore(dstore),
			dht.ProviderDatastore(r.wan.records),
			// The network's DHT takes any peer and address, as it did
			// alone: the dual DHT's public-only filters would leave the
			// network of a LAN that runs p2p.dht = "server" with an empty
			// table. Its diversity filter bounds an IP group's peers.
			dht.QueryFilter(func(any, peer.AddrInfo) bool { return true }),
			dht.RoutingTableFilter(func(any, peer.ID) bool { return true }),
			dht.AddressFilter(nil),
			dht.RoutingTablePeerDiversityFilter(newDiversityFilter(opts.Host)),
		),
		dual.LanDHTOption(
			dht.ProtocolPrefix(proto.DHTLANPrefix(opts.Network)),
			dht.Mode(lanMode(opts.Mode)),
			dht.Datastore(lanStore),
			dht.ProviderDatastore(r.lan.records),
			dht.AddressFilter(lanAddrFilter(opts.Host.Addrs)),
		),
	)
	if err != nil {
		return nil, fmt.Errorf("routing: start the DHT: %w", err)
	}
	r.dht = r.dual.WAN
	if r.recheck, err = opts.Host.EventBus().Emitter(new(event.EvtPeerProtocolsUpdated)); err != nil {
		r.dual.Close()
		return nil, fmt.Errorf("routing: %w", err)
	}
	r.ctx, r.cancel = context.WithCancel(ctx)
	r.routed = routedhost.Wrap(opts.Host, r.dual)
	r.disc = drouting.NewRoutingDiscovery(dualRouter{r.dual})
	r.prov, err = provider.New(dstore,
		provider.Online(readyProvider{r.dual, opts.Log}),
		provider.KeyProvider(r.completeBlobs),
		provider.ReproviderInterval(reprovideInterval),
		provider.ProvideWorkerCount(provideWorkers),
	)
	if err != nil {
		r.cancel()
		r.recheck.Close()
		r.dual.Close()
		return nil, fmt.Errorf("routing: start providing: %w", err)
	}
	return r, nil
}

// readyProvider provides on the DHTs once a routing table has a peer: a
// blob imported in the first seconds after start, before the bootstrap
// dials, is provided when they succeed, rather than failing for want of
// a peer and waiting for the next reprovide (a day later). It provides on
// each DHT whose table has peers, the network's and the LAN's at once,
// so that a node a LAN finds it on is found on the network too. A
// provide that fails is logged here, at info, and not returned: boxo's
// provider would only log it again, at error level, on the daemon's
// stderr.
type readyProvider struct {
	d   *dual.DHT
	log *slog.Logger
}

// dualRouter is the dual DHT as a router that provides on each DHT whose
// routing table has peers, at once (kad-dht's dual DHT provides on the
// network's DHT alone once it has a peer): what the node provides, a
// blob or its rendezvous record, is found on both.
type dualRouter struct{ *dual.DHT }

func (d dualRouter) Provide(ctx context.Context, c cid.Cid, announce bool) error {
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, t := range []*dht.IpfsDHT{d.WAN, d.LAN} {
		if t.RoutingTable().Size() > 0 {
			wg.Go(func() { errs[i] = t.Provide(ctx, c, announce) })
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// readyPoll is how often waitRoutingTable looks at the routing tables
// while they are empty.
const readyPoll = 250 * time.Millisecond

func (p readyProvider) Provide(ctx context.Context, c cid.Cid, announce bool) error {
	err := waitRoutingTable(ctx, p.d)
	if err == nil {
		err = dualRouter{p.d}.Provide(ctx, c, announce)
	}
	if err != nil && ctx.Err() == nil {
		p.log.Info("cannot provide a blob on the DHT; it is provided again at the next reprovide", "cid", c, "err", err)
	}
	return nil
}

// waitRoutingTable returns once a routing table of d has a peer, or
// ctx's error: a lookup with empty tables fails at once.
func waitRoutingTable(ctx context.Context, d *dual.DHT) error {
	for d.WAN.RoutingTable().Size() == 0 && d.LAN.RoutingTable().Size() == 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(readyPoll):
		}
	}
	return nil
}

// lanMode is the LAN DHT's mode for p2p.dht (docs/adr/0047): kad-dht's
// dual DHT makes it a server whenever the network's DHT is not a client
// (auto and server), and leaves it to this option otherwise: a node in
// client mode answers no DHT requests, not even its LAN's.
func lanMode(mode string) dht.ModeOpt {
	if mode == config.DHTClient {
		return dht.ModeClient
	}
	return dht.ModeServer
}

// lanAddrFilter is the LAN DHT's filter of the addresses it tells and
// keeps: every address but loopback ones, as kad-dht's dual DHT filters
// (another machine's loopback address is no way to reach it), except
// while the node's own addresses are loopback alone: then its network is on one machine
// (a devnet) and loopback is how its nodes reach each other.
func lanAddrFilter(own func() []ma.Multiaddr) func([]ma.Multiaddr) []ma.Multiaddr {
	return func(addrs []ma.Multiaddr) []ma.Multiaddr {
		if !slices.ContainsFunc(own(), func(a ma.Multiaddr) bool { return !manet.IsIPLoopback(a) }) {
			return addrs
		}
		return ma.FilterAddrs(addrs, func(a ma.Multiaddr) bool { return !manet.IsIPLoopback(a) })
	}
}

// dhtKeyPrefix is the prefix of the DHT's keys in the node's database:
// the provider records peers put here (/dht/records/), the queue of
// CIDs to provide (/dht/provider/).
const dhtKeyPrefix = "/dht"

// Close stops providing and closes the DHT.
func (r *Routing) Close() error {
	r.cancel()
	return errors.Join(r.prov.Close(), r.dual.Close(), r.recheck.Close())
}

// DHT is the network's DHT.
func (r *Routing) DHT() *dht.IpfsDHT { return r.dht }

// LAN is the LAN DHT (docs/adr/0047).
func (r *Routing) LAN() *dht.IpfsDHT { return r.dual.LAN }

// Host is the routed host, which finds a peer's addresses on the DHT when
// the peerstore has none: what a fetch dials providers with.
func (r *Routing) Host() host.Host { return r.routed }

// Discovered is how many other nodes the last look under the rendezvous
// key found (at most discoverLimit).
func (r *Routing) Discovered() int { return int(r.discovered.Load()) }

// Requests returns the requests served from greeted allowances, of both
// DHTs together, and those refused over the strangers' shared budget, of
// the network's DHT and of the LAN DHT (ADR 0059).
func (r *Routing) Requests() (greeted, strangersRefused, lanStrangersRefused uint64) {
	return r.wan.greeted.Load() + r.lan.greeted.Load(), r.wan.strangersRefused.Load(), r.lan.strangersRefused.Load()
}

// Records returns the provider records held, their bound, and how many
// new records were refused as the store was full: of both DHTs together.
func (r *Routing) Records() (held, max int, refused uint64) {
	w, l := r.wan.records, r.lan.records
	return w.Len() + l.Len(), w.max + l.max, w.Refused() + l.Refused()
}

// maxDHTBootstrapPeers bounds the peers handed to the DHT to bootstrap
// from: kad-dht dials them in a random order and stops after two
// answered, so more would only be a longer list to shuffle.
const maxDHTBootstrapPeers = 2 * dhtBucketSize

// BootstrapPeers are the peers the DHT may bootstrap from when its
// routing table is empty, at most maxDHTBootstrapPeers, each once and none
// of them self: configured (p2p.bootstrap multiaddrs; those that do not
// parse are skipped, config checks them), then known (the peer cache's,
// most recently seen first).
func BootstrapPeers(self peer.ID, configured []string, known []peer.AddrInfo) []peer.AddrInfo {
	var out []peer.AddrInfo
	add := func(ai peer.AddrInfo) {
		if len(out) < maxDHTBootstrapPeers && ai.ID != self &&
			!slices.ContainsFunc(out, func(o peer.AddrInfo) bool { return o.ID == ai.ID }) {
			out = append(out, ai)
		}
	}
	for _, s := range configured {
		if ai, err := peer.AddrInfoFromString(s); err == nil {
			add(*ai)
		}
	}
	for _, ai := range known {
		if len(out) == maxDHTBootstrapPeers {
			break
		}
		add(ai)
	}
	return out
}

// completeBlobs lists the roots of the complete blobs, for the reprovider:
// a removed blob is no longer provided, and its records expire.
func (r *Routing) completeBlobs(ctx context.Context) (<-chan cid.Cid, error) {
	list := r.opts.Blobs()
	ch := make(chan cid.Cid)
	go func() {
		defer close(ch)
		for _, c := range list {
			select {
			case ch <- c:
			case <-ctx.Done():
				return
			case <-r.ctx.Done(): // boxo's reprovide runs on a context of its own
				return
			}
		}
	}()
	return ch, nil
}

// Provide queues c, a blob that became complete here, for the provider's
// workers (in memory, written to the database after a minute idle or at
// Close).
func (r *Routing) Provide(c cid.Cid) {
	if err := r.prov.Provide(r.ctx, c, true); err != nil {
		r.opts.Log.Warn("cannot queue a blob to provide", "cid", c, "err", err)
	}
}

// FindProviders asks the DHT for at most core.MaxHintsPerBlob providers
// of c other than this node, within findProvidersTimeout
// (blobs.FetcherOptions.FindProviders).
func (r *Routing) FindProviders(ctx context.Context, c cid.Cid) []peer.AddrInfo {
	ctx, cancel := context.WithTimeout(ctx, findProvidersTimeout)
	defer cancel()
	wctx, wcancel := context.WithTimeout(ctx, routingTableWait)
	err := waitRoutingTable(wctx, r.dual)
	wcancel()
	if err != nil {
		return nil
	}
	var out []peer.AddrInfo
	// One more than kept: the node itself may be among them. Both DHTs
	// are asked at once, their answers merged.
	found := r.dual.FindProvidersAsync(ctx, c, core.MaxHintsPerBlob+1)
	var grace <-chan time.Time
	for {
		select {
		case ai, ok := <-found:
			if !ok {
				r.opts.Log.Debug("providers found on the DHT", "cid", c, "count", len(out))
				return out
			}
			if ai.ID == r.opts.Host.ID() {
				continue
			}
			out = append(out, ai)
			if grace == nil {
				t := time.NewTimer(providersGrace)
				defer t.Stop()
				grace = t.C
			}
		case <-grace:
			// The first providers are tried now; a lookup can go on for
			// seconds asking peers that do not answer.
			r.opts.Log.Debug("providers found on the DHT", "cid", c, "count", len(out))
			return out
		}
	}
}

// FindPeer asks the DHT for the addresses of p.
func (r *Routing) FindPeer(ctx context.Context, p peer.ID) (peer.AddrInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, findPeerTimeout)
	defer cancel()
	ai, err := r.dual.FindPeer(ctx, p)
	if errors.Is(err, corerouting.ErrNotFound) && ctx.Err() == nil {
		// The lookup learned addresses of p from the peers it asked but
		// gave p up: its one dial of them failed (two peers that dial
		// each other at once cross, node.Node's dial), or it reached p in its
		// routing table before any peer told it the addresses. They are
		// p's addresses all the same; the caller's dial tries them again.
		if addrs := r.opts.Host.Peerstore().Addrs(p); len(addrs) > 0 {
			return peer.AddrInfo{ID: p, Addrs: addrs}, nil
		}
	}
	switch {
	case errors.Is(err, kb.ErrLookupFailure):
		return peer.AddrInfo{}, fmt.Errorf("find %s: this node knows no peer to ask yet (its DHT routing table is empty); "+
			"connect to a peer by its full multiaddr first: %w", p, err)
	case err != nil:
		return peer.AddrInfo{}, fmt.Errorf("find %s on the DHT: %w", p, err)
	}
	return ai, nil
}

// Discover advertises the node under its network's rendezvous key and,
// while it has fewer than connsLow connected peers (p2p.conns_low), dials
// the nodes found under it with dial: so that nodes find each other from
// a single bootstrap address (docs/adr/0040). It returns when ctx ends.
func (r *Routing) Discover(ctx context.Context, connsLow int, dial func(iter.Seq[peer.AddrInfo])) {
	ns := rendezvous(r.opts.Network)
	wait := discoverFirst
	t := time.NewTimer(wait)
	defer t.Stop()
	var readvertise time.Time // zero: not advertised yet
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		wait = min(2*wait, discoverEvery)
		t.Reset(wait)
		if r.dual.WAN.RoutingTable().Size() == 0 && r.dual.LAN.RoutingTable().Size() == 0 {
			continue
		}
		if now := time.Now(); !now.Before(readvertise) {
			readvertise = now.Add(r.advertise(ctx, ns))
		}
		if len(r.opts.Host.Network().Peers()) >= connsLow {
			continue
		}
		r.discover(ctx, ns, dial)
	}
}

// advertise puts the node's record under the rendezvous key ns, and
// returns when to put it again: at 7/8 of its TTL, or after discoverEvery
// if it failed.
func (r *Routing) advertise(ctx context.Context, ns string) time.Duration {
	ctx, cancel := context.WithTimeout(ctx, findProvidersTimeout)
	defer cancel()
	ttl, err := r.disc.Advertise(ctx, ns, discovery.TTL(advertiseTTL))
	if err != nil {
		r.opts.Log.Debug("advertise under the rendezvous key", "err", err)
		return discoverEvery
	}
	return ttl * 7 / 8
}

// discover dials the nodes found under the rendezvous key ns (dial), and
// records how many other nodes it found.
func (r *Routing) discover(ctx context.Context, ns string, dial func(iter.Seq[peer.AddrInfo])) {
	ctx, cancel := context.WithTimeout(ctx, findProvidersTimeout)
	defer cancel()
	found, err := r.disc.FindPeers(ctx, ns, discovery.Limit(discoverLimit))
	if err != nil {
		r.opts.Log.Debug("discovery", "err", err)
		return
	}
	count := 0
	defer func() { r.discovered.Store(int64(count)) }()
	dial(func(yield func(peer.AddrInfo) bool) {
		for ai := range found {
			if ai.ID == r.opts.Host.ID() {
				continue
			}
			count++
			if !yield(ai) {
				return
			}
		}
	})
}

// request is the DHT's hook on every request a peer sends
// (dht.OnRequestHook): the request takes a token from the peer's budget
// (dhtRequestsPerMin by its tier, strangers sharing
// limits.stranger_dht_per_min, a greeted stranger drawing its allowance
// first: allow), and a stranger's provider record needs the strangers'
// share of its store not full (strangersFull). A request refused is made
// one the DHT has no handler for, so the DHT answers nothing and closes
// the stream.
func (r *Routing) request(_ context.Context, s network.Stream, req *pb.Message) {
	p := s.Conn().RemotePeer()
	t := r.opts.Tier(p)
	b := r.boundsOf(s)
	why := r.allow(b, p, t, r.opts.Mono())
	switch {
	case why != "":
	case req.GetType() == pb.Message_ADD_PROVIDER && t.Stranger() && b.records.strangersFull():
		why = "the strangers' share of the provider records is full"
	default:
		return
	}
	if r.opts.Refused != nil {
		r.opts.Refused(p, req.GetType(), why)
	}
	req.Type = refusedDHTRequest
}

// Why allow refuses a request.
const (
	overOwnBudget      = "over the peer's budget"
	overStrangersShare = "over the strangers' shared budget"
)

// allow takes the token of one request of p, of tier t, at now from b's
// budget, and returns "" or why it refused: over p's own budget, or, for
// a stranger, over the strangers' shared one. A stranger draws from its
// greeted allowance (Options.Greeted, ADR 0059), paid for when it was
// given, before that shared budget: while Sybils keep the shared budget
// spent, a stranger that completed hello is still served, within what it
// paid. Nothing is taken from a budget that refuses.
func (r *Routing) allow(b bounds, p peer.ID, t limits.Tier, now int64) string {
	k := string(p)
	if t.Stranger() && r.opts.Greeted != nil && b.budget.HasOwn(k, t, now) && r.opts.Greeted(p, time.Duration(now)) &&
		b.budget.AllowOwn(k, t, now) {
		b.greeted.Add(1)
		return ""
	}
	switch {
	case b.budget.Allow(k, t, now):
		return ""
	case t.Stranger() && b.budget.HasOwn(k, t, now):
		b.strangersRefused.Add(1)
		return overStrangersShare
	}
	return overOwnBudget
}

// FundGreeting pays, at the monotonic reading mono, for the greeted
// allowance of k DHT requests a stranger gets with a served hello
// (peers.Options.Greeting, ADR 0059): it takes k tokens from the
// strangers' shared budget of the DHT that serves strangers here (the
// network's when it is a server, else the LAN's) if that budget holds
// them all, so that what greeted strangers draw stays within it; funded
// is false when it holds fewer (the hello is then challenged). serving is
// false when no DHT serves strangers here (r nil: p2p.dht off; both in
// client mode): no allowance is worth a challenge then.
func (r *Routing) FundGreeting(k int, mono time.Duration) (funded, serving bool) {
	if r == nil {
		return false, false
	}
	b := r.wan
	if r.dht.Mode() != dht.ModeServer {
		if r.dual.LAN.Mode() != dht.ModeServer {
			return false, false
		}
		b = r.lan
	}
	return b.budget.TakeStrangers(k, int64(mono)), true
}

// Greeted is told that p answered this node's hello (ADR 0059): if p
// speaks one of the node's DHT protocols and is in neither routing table,
// the DHTs look at it again, as when identify completes. A DHT request
// this node sent p before p recorded the hello may have been refused, p
// then left out of the routing table until the next bootstrap round (2
// minutes); p, now greeted, serves this node's requests from the
// allowance the hello gave it. Nothing for a nil r (p2p.dht off).
func (r *Routing) Greeted(p peer.ID) {
	if r == nil || r.dht.RoutingTable().Find(p) != "" || r.dual.LAN.RoutingTable().Find(p) != "" {
		return
	}
	if ps, err := r.opts.Host.Peerstore().SupportsProtocols(p, proto.DHTProtocol(r.opts.Network),
		proto.DHTLANProtocol(r.opts.Network)); err != nil || len(ps) == 0 {
		return
	}
	if err := r.recheck.Emit(event.EvtPeerProtocolsUpdated{Peer: p}); err != nil {
		r.opts.Log.Debug("DHT: look at a greeted peer again", "peer", p, "err", err)
	}
}

// strangersFull reports whether the provider records held reach
// the strangers' share of their bound (strangersRecordShare): past it, a
// peer of a stranger tier puts no record, not even a renewal, so that
// strangers can neither fill the store nor keep it full by renewing
// (docs/adr/0040); peers that showed value put theirs up to the bound.
func (s *recordStore) strangersFull() bool {
	return s.Len() >= s.max*strangersRecordShare/4
}

// bounds are what bounds the requests of peers to one DHT: a budget of
// requests per peer, and the store of the provider records they put.
type bounds struct {
	budget  *limits.Budget
	records *recordStore
	// greeted counts the requests served from greeted allowances;
	// strangersRefused those refused over the strangers' shared budget
	// (allow).
	greeted, strangersRefused *atomic.Uint64
}

// newBounds makes the bounds of a DHT whose keys are in d: its records
// under d's /records, at most maxRecords.
func newBounds(d ds.Batching, maxRecords int, opts Options) (b bounds, err error) {
	if b.budget, err = newBudget(opts.Limits); err != nil {
		return b, err
	}
	if b.records, err = newRecordStore(namespace.Wrap(d, ds.NewKey("records")), maxRecords); err != nil {
		return b, fmt.Errorf("provider records: %w", err)
	}
	b.records.room = opts.Room
	b.greeted, b.strangersRefused = new(atomic.Uint64), new(atomic.Uint64)
	return b, nil
}

// boundsOf is the bounds of the DHT s is a stream of: the LAN DHT's for
// its protocol.
func (r *Routing) boundsOf(s network.Stream) bounds {
	if strings.HasSuffix(string(s.Protocol()), string(dual.LanExtension)+"/kad/1.0.0") {
		return r.lan
	}
	return r.wan
}

// refusedDHTRequest is the type a refused DHT request is given: one no
// version of the protocol defines, which kad-dht answers by closing the
// stream.
const refusedDHTRequest pb.Message_MessageType = -1

// newBudget is the budget of DHT requests per peer (request).
func newBudget(l limits.Config) (*limits.Budget, error) {
	return limits.NewBudget(limits.BudgetRate{PerMin: dhtRequestsPerMin, StrangersPerMin: l.StrangerDHTPerMin,
		SuspectPercent: l.SuspectPercent, ValuedPercent: l.ValuedPercent})
}

// diversityFilter is kad-dht's routing-table diversity filter (at most
// dhtMaxPerCpl peers of one IP group per bucket, dhtMaxPerTable in all),
// with the peers that have no public address exempt: a network on one
// machine or one LAN (loopback, private, IPv6 ULA or link-local, test
// ranges) would otherwise keep 3 peers in its table. The exemption is
// decided from the peer's addresses, not its group's key: kbucket gives
// every IPv6 address of no known ASN one key.
//
// kad-dht applies its own filter type to the responses of lookups too
// (at most as many peers of one group per response); wrapped, it does
// not: the routing table is bounded, a lookup's responses are not
// (docs/adr/0040).
type diversityFilter struct {
	peerdiversity.PeerIPGroupFilter
	h host.Host
}

func newDiversityFilter(h host.Host) *diversityFilter {
	return &diversityFilter{PeerIPGroupFilter: dht.NewRTPeerDiversityFilter(h, dhtMaxPerCpl, dhtMaxPerTable), h: h}
}

// Allow lets in a peer with no public address, and asks kad-dht's filter
// for any other.
func (f *diversityFilter) Allow(g peerdiversity.PeerGroupInfo) bool {
	return !publicPeer(f.h, g.Id) || f.PeerIPGroupFilter.Allow(g)
}

// publicPeer reports whether p has a public address: the remote address
// of a connection to it, or one the peerstore holds.
func publicPeer(h host.Host, p peer.ID) bool {
	for _, c := range h.Network().ConnsToPeer(p) {
		if manet.IsPublicAddr(c.RemoteMultiaddr()) {
			return true
		}
	}
	return slices.ContainsFunc(h.Peerstore().Addrs(p), manet.IsPublicAddr)
}

// IsRelayed reports whether a is a relayed (circuit) address.
func IsRelayed(a ma.Multiaddr) bool {
	_, err := a.ValueForProtocol(ma.P_CIRCUIT)
	return err == nil
}
