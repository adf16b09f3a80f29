package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/discovery/mdns"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	msmux "github.com/multiformats/go-multistream"

	"github.com/wats-network/wats/bandwidth"
	"github.com/wats-network/wats/blobs"
	"github.com/wats-network/wats/catchup"
	"github.com/wats-network/wats/challenge"
	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/gossip"
	"github.com/wats-network/wats/heads"
	"github.com/wats-network/wats/internal/diskspace"
	"github.com/wats-network/wats/internal/memrelease"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/metrics"
	"github.com/wats-network/wats/p2p"
	"github.com/wats-network/wats/peercache"
	"github.com/wats-network/wats/peers"
	"github.com/wats-network/wats/proto"
	"github.com/wats-network/wats/routing"
	"github.com/wats-network/wats/store"
)

// Features are the hello features this node advertises: it solves the b3 challenge (ADR 0014
// addendum), announces and reads heads (docs/adr/0041), serves sync by id range (docs/adr/0052) and id lists (0057).
var Features = []string{proto.FeatureChallenge, proto.FeatureHeads, proto.FeatureSyncIDs, proto.FeatureSyncIDLists}

// Node is a running wats node. Create it with New, then Start; Close stops
// it. The exported methods are safe for concurrent use.
type Node struct {
	cfg *config.Config
	// o are the node's Options, their defaults set.
	o   Options
	log *slog.Logger
	now func() time.Time

	// stores are the database and the stores on it: db, its writes
	// checked against the disk's free space (ADR 0044), events, lost,
	// peers, blobs.
	stores *store.Stores
	// quotas are the event log's ([events]).
	quotas eventlog.Quotas
	db     *store.DB
	events *eventlog.Log
	// lost keeps the event log's acknowledged mark and looks for the
	// events a start found lost (ADR 0045); nil for an in-memory node.
	lost  *store.LostWatch
	peers *peercache.Cache
	blobs *blobs.Store
	// fetch is the blob service (exchange, fetcher, auto-fetch); nil
	// before Start.
	fetch *blobs.Service
	// dialed is closed once the dials of Start (bootstrap peers, known
	// peers) have all succeeded or failed.
	dialed chan struct{}
	host   host.Host        // metered by bw: every stream it opens
	bw     *bandwidth.Meter // the streams' traffic and [bandwidth] caps (docs/adr/0048)
	dialer *p2p.Dialer
	gater  *p2p.Gater
	gossip *gossip.Gossip // nil when gossip is off
	mdns   mdns.Service   // nil when p2p.mdns is off
	hints  *blobs.Hints
	issuer *challenge.Issuer
	// selfID is the node's raw Ed25519 public key: the requester id of the
	// puzzles it solves, the responder id of those it issues.
	selfID [challenge.IDLen]byte
	// run is what the node knows of its peers and decides about them
	// (peers.go).
	run *peers.Table[link]
	// heads follows the peers' heads announcements (heads.go).
	heads *heads.Tracker
	// routing is the DHT and what uses it, once Start built it; nil
	// with p2p.dht off (routing.go).
	routing atomic.Pointer[routing.Routing]
	// punches remembers the hole punches; reachability is what AutoNAT
	// last reported.
	punches      *routing.PunchTracer
	reachability routing.Reachability
	// relay is the circuit relay service (p2p.relay_service); nil when off.
	relay *relay.Relay
	// plog writes the log lines peers cause, within their caps.
	plog *limits.PeerLog
	// holdings are the existence checks of requests (peers.Classify).
	holdings peers.Holdings
	// inFlight counts the /wats requests being handled (the overload test).
	inFlight atomic.Int64
	// sync is the sync client (syncer.go).
	sync *catchup.Client
	// dropGossip, when set (tests), names the gossiped events to drop
	// unseen, as a full queue on the way would: not stored, not
	// forwarded, no gap reported (gossipHas).
	dropGossip atomic.Pointer[func(id string) bool]
	m          *metrics.Metrics

	// epoch is the base of the node's monotonic readings (mono).
	epoch   time.Time
	started time.Time

	// ctx is cancelled by Close; every goroutine the node starts uses it and
	// is counted in wg.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// goMu guards closing, so that go_ never adds to wg once Close waits:
	// go_ holds it shared (goroutines started at once never wait on each
	// other), Close alone.
	goMu    sync.RWMutex
	closing bool
}

// New builds a node of cfg (validated, config.Load's) and the identity key
// (Ed25519, docs/design.md §3): it opens the database (opts.Dir's, or one in
// memory) and builds the host. opts may be nil, for the defaults. Nothing
// is served or dialled before Start. Close releases what New opened. A
// database that pebble finds damaged is a *store.DamagedError.
func New(cfg *config.Config, key crypto.PrivKey, opts *Options) (*Node, error) {
	if cfg == nil || key == nil {
		return nil, errors.New("node: New needs a config and a key")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	o.EnsureDefaults()
	now := o.Now
	n := &Node{cfg: cfg, o: o, log: o.Logger, now: now, epoch: now()}
	n.plog = limits.NewPeerLog(n.log, func() time.Duration { return n.mono(n.now()) })
	n.ctx, n.cancel = context.WithCancel(context.Background())
	if err := cfg.Limits.Validate(); err != nil {
		return nil, fmt.Errorf("node: limits: %w", err)
	}
	var err error
	n.m = n.newMetrics()
	n.hints = blobs.NewHints(blobs.DefaultMaxHintBlobs, blobs.DefaultMaxHintBytes)

	n.stores, err = store.OpenStores(store.StoresOptions{Dir: o.Dir, Log: n.log, Statfs: o.Statfs, Now: now(),
		MaxPeers: cfg.PeerCache.MaxPeers, MaxBlobBytes: uint64(cfg.Blobs.MaxBlobBytes), QuotaBytes: uint64(cfg.Blobs.QuotaBytes),
		Pinned: n.blobPinned, PartialBounds: cfg.Blobs.PartialBounds})
	ok := false
	defer func() {
		if !ok { // what New opened, it closes
			if n.host != nil {
				n.host.Close()
			}
			n.closeStores()
		}
	}()
	if err != nil {
		return nil, err // a *store.DamagedError as it is
	}
	n.db, n.events, n.lost, n.peers, n.blobs = n.stores.DB, n.stores.Events, n.stores.Lost, n.stores.Peers, n.stores.Blobs
	if n.run, err = peers.NewTable[link](peers.Options{Cache: n.peers, Slots: p2p.StrangerSlots(cfg), Limits: cfg.Limits,
		MaxBlobBytes: cfg.Blobs.MaxBlobBytes, QuotaBytes: cfg.Blobs.QuotaBytes, PagePoolBytes: p2p.PagePoolBytes(cfg),
		AuthorFirst: n.authorFirst, Greeting: func(k int, m time.Duration) (bool, bool) { return n.routing.Load().FundGreeting(k, m) }}); err != nil {
		return nil, fmt.Errorf("node: limits: %w", err)
	}
	n.m.Registry().MustRegister(n.run.Admission().Collector())
	n.gater = p2p.NewGater(now)
	n.gater.Secured = n.admitStranger
	n.punches = routing.NewPunchTracer()
	nat, err := routing.NATOptions(cfg, n.punches, n.routing.Load)
	if err != nil {
		return nil, err
	}
	b := cfg.Bandwidth
	if n.bw, err = bandwidth.New(bandwidth.Options{UpBytesPerS: b.UpBytesPerS, DownBytesPerS: b.DownBytesPerS, MonthlyUpBytes: b.MonthlyUpBytes,
		File: bandwidth.FileIn(o.Dir), Now: now, Log: n.log, Standing: n.standing}); err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	if n.host, err = p2p.NewHost(n.cfg, key, n.o.Agent, n.gater, n.peers.Has, nat...); err != nil {
		return nil, err
	}
	n.host = n.bw.Host(n.host)
	n.dialer = p2p.NewDialer(n.host, n.run, n.log)
	var ok2 bool
	if n.selfID, ok2 = peers.RawID(n.host.ID()); !ok2 {
		return nil, errors.New("node: the identity key is not Ed25519")
	}
	e := cfg.Events
	n.quotas = eventlog.Quotas{MaxEvents: uint64(e.MaxEvents), MaxBytes: uint64(e.MaxBytes),
		MaxEventsPerAuthor: uint64(e.MaxEventsPerAuthor), MaxBytesPerAuthor: uint64(e.MaxBytesPerAuthor)}
	n.events.SetQuota(n.quotas.Func(n.host.ID().String(), n.valuedAuthor))
	n.events.SetClock(n.now)
	l := cfg.Limits
	if n.issuer, err = challenge.NewIssuer(n.selfID, &challenge.Options{
		BaseBits: l.ChallengeBaseBits, MaxBits: l.ChallengeMaxBits, SolvedPerMin: l.SolvedPerMin,
	}); err != nil {
		return nil, fmt.Errorf("node: challenge: %w", err)
	}
	n.sync = n.newSyncClient()
	n.holdings = peers.Holdings{Head: n.events.Head, HasEvent: n.has, Blob: func(c cid.Cid) bool {
		if ok, _ := n.blobs.Has(c); ok {
			return true
		}
		ok, err := n.events.NamesBlob(c.String())
		return err == nil && ok
	}}
	if n.heads, err = heads.NewTracker(heads.Options{Cursor: n.run.Cursor, Advance: n.sync.Advance, Has: n.events.HasShort,
		Allow: func(p peer.ID) (bool, time.Duration) {
			now, mono := n.clock()
			return n.run.AllowPull(p, now, mono) // the pull budget (ADR 0041)
		},
		Pull: n.sync.Pull, Pulled: func(_ peer.ID, outcome string) { n.m.HeadsPulled(outcome) },
	}); err != nil {
		return nil, err
	}
	n.host.SetStreamHandler(proto.ID, n.handleStream)
	n.host.SetStreamHandler(proto.HeadsID, n.handleHeads)
	// Every inbound stream is negotiated by acceptStream: the per-peer cap
	// and the short deadline of ADR 0030, in place of the basic host's.
	n.host.Network().SetStreamHandler(n.acceptStream)
	n.host.Network().Notify(&network.NotifyBundle{
		ConnectedF:    n.connected,
		DisconnectedF: n.disconnected,
	})
	ok = true
	return n, nil
}

// Start joins gossip (when sync.gossip is on), dials the bootstrap peers and
// starts the periodic sync. It returns once those are started; dialling
// goes on in the background.
func (n *Node) Start(ctx context.Context) error {
	n.started = n.now()
	if n.cfg.Sync.Gossip {
		g, err := gossip.Join(n.ctx, n.host, n.cfg.Network, n.gossipOptions())
		if err != nil {
			return err
		}
		n.gossip = g
	}
	if n.cfg.P2P.MDNS {
		var err error
		if n.mdns, err = n.dialer.StartMDNS(n.ctx, n.cfg.Network, n.go_); err != nil {
			return err
		}
	}
	if n.cfg.P2P.RelayService {
		r, err := routing.StartRelayService(n.host)
		if err != nil {
			return err
		}
		n.relay = r
	}
	if err := n.startRouting(); err != nil {
		return err
	}
	n.dialed = make(chan struct{})
	n.startBlobs()
	n.peers.Start(peercache.DefaultFlushInterval)
	n.go_(func() {
		var wg sync.WaitGroup
		wg.Go(n.bootstrap)
		wg.Go(n.redial)
		wg.Wait()
		close(n.dialed)
	})
	n.go_(n.syncLoop)
	n.go_(func() { n.every(limits.SummaryInterval, n.plog.Summarize) })
	n.go_(n.foldLoop)
	n.go_(func() { // ADR 0042: memory back to the OS after a flood
		var r memrelease.Releaser
		n.every(memrelease.Every, func() { r.Release(memrelease.ReadHeap()) })
	})
	n.go_(func() { n.reachability.Watch(n.ctx, n.host, n.log) })
	p2p.KeepRelayed(n.ctx, n.host, n.cfg.P2P.ConnsLow, n.go_)
	if n.lost != nil {
		n.go_(func() { n.lost.Run(n.ctx) })
	}
	n.go_(func() { n.db.WatchMemtables(n.ctx) })
	n.go_(func() { n.bw.Run(n.ctx) }) // the month's bytes sent kept in the repo
	n.log.Info("node started", "peer", n.host.ID(), "network", n.cfg.Network,
		"addrs", n.FullAddrs(), "gossip", n.gossip != nil, "dht", n.cfg.P2P.DHT)
	return nil
}

// Close stops the node: it cancels every background task and waits for
// them, leaves gossip, closes the host, and closes the database after a
// final sync. It is safe to call once.
func (n *Node) Close() error {
	n.goMu.Lock()
	n.closing = true
	n.goMu.Unlock()
	var errs []error
	if n.mdns != nil {
		errs = append(errs, n.mdns.Close())
	}
	if n.gossip != nil {
		errs = append(errs, n.gossip.Close())
	}
	n.cancel()
	if n.heads != nil {
		n.heads.Close() // its pulls end with its context
	}
	if n.relay != nil {
		errs = append(errs, n.relay.Close())
	}
	if n.fetch != nil {
		n.fetch.Close()
	}
	if n.host != nil {
		errs = append(errs, n.host.Close())
	}
	n.wg.Wait()
	// After the node's goroutines (a fetch that completed a blob queued a
	// provide) and before the database closes (the provide queue is
	// written to it).
	if r := n.routing.Load(); r != nil {
		errs = append(errs, r.Close())
	}
	n.log.Info("requests of peers since the start, accepted/refused", "limits", n.run.Admission().Snapshot())
	n.run.Each(func(st *peerState) { n.dropPeerState(st.ID(), false) })
	errs = append(errs, n.closeStores())
	return errors.Join(errs...)
}

func (n *Node) closeStores() error {
	n.db = nil
	return n.stores.Close()
}

// go_ runs f in a goroutine tracked by Close; once Close has begun it does
// nothing.
func (n *Node) go_(f func()) {
	n.goMu.RLock()
	defer n.goMu.RUnlock()
	if n.closing {
		return
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f()
	}()
}

// ID returns the node's peer ID.
func (n *Node) ID() peer.ID { return n.host.ID() }

// Host returns the node's libp2p host.
func (n *Node) Host() host.Host { return n.host }

// Events returns the node's event log.
func (n *Node) Events() *eventlog.Log { return n.events }

// FullAddrs returns the node's listen multiaddrs with /p2p/<id> appended.
func (n *Node) FullAddrs() []string { return p2p.FullAddrs(n.host) }

// call is every request this node sends: req to p, solving a challenge
// if one comes (proto.CallSolving).
func (n *Node) call(ctx context.Context, p peer.ID, req proto.Message) (*proto.Response, error) {
	return proto.CallSolving(ctx, n.host, p, req, peers.Solver(n.selfID, p, n.now))
}

// Connect dials the peer at addr and waits until hello with it has
// completed or failed. addr is a full multiaddr (ending in /p2p/<id>), or
// a bare peer ID, whose addresses come from the peerstore or, when it has
// none that answer, from the DHT (peer routing, docs/adr/0040).
func (n *Node) Connect(ctx context.Context, addr string) (peer.ID, error) {
	ai, err := p2p.ParsePeer(addr)
	if err != nil {
		return "", fmt.Errorf("node: %w", err)
	}
	return n.connectInfo(ctx, ai)
}

// connectInfo dials the peer at ai as an operator asks (p2p.Dialer.Connect,
// by peer ID alone through the DHT) and waits until hello has completed or
// failed. A peer that does not speak /wats/1 (an IPFS node) is connected
// all the same, marked as not wats: it can serve blobs over bitswap (ADR
// 0032).
func (n *Node) connectInfo(ctx context.Context, ai peer.AddrInfo) (peer.ID, error) {
	if ai.ID == n.host.ID() {
		return "", errors.New("node: cannot connect to itself")
	}
	var find func(context.Context, peer.ID) (peer.AddrInfo, error)
	if r := n.routing.Load(); r != nil {
		find = r.FindPeer
	}
	if err := n.dialer.Connect(ctx, ai, find); err != nil {
		if len(ai.Addrs) == 0 {
			return "", fmt.Errorf("node: connect %s: %w", ai.ID, err)
		}
		return "", fmt.Errorf("node: connect %s: %w", ai, err)
	}
	err := n.greet(ctx, ai.ID)
	if errors.As(err, new(msmux.ErrNotSupported[protocol.ID])) {
		n.peerOf(ai.ID).SetNotWats()
		n.log.Info("connected to a peer that does not speak /wats/1; it can serve blobs over bitswap", "peer", ai.ID)
		return ai.ID, nil
	}
	return ai.ID, err
}

// redial dials the peers of the peer cache at start, most recently seen
// first, so that a node restarted without bootstrap addresses finds its
// network again (ADR 0026).
func (n *Node) redial() {
	n.dialer.DialEach(n.ctx, slices.Values(n.peers.Known()), "known peer unreachable")
}

// bootstrap dials and greets the config's bootstrap peers
// (p2p.Dialer.Bootstrap), and tries again those it could not reach.
func (n *Node) bootstrap() {
	n.dialer.Bootstrap(n.ctx, n.cfg.P2P.Bootstrap, n.cfg.P2P.ConnsLow, func(ctx context.Context, ai peer.AddrInfo) error {
		_, err := n.connectInfo(ctx, ai)
		return err
	}, n.go_)
}

// connected is the network notifiee's callback for a new connection: the
// peer's run state, and this node's hello on its first connection.
func (n *Node) connected(_ network.Network, c network.Conn) {
	p := c.RemotePeer()
	if st := n.peerState(p, c.Stat().Direction); !st.Helloed() {
		n.go_(func() {
			ctx, cancel := context.WithTimeout(n.ctx, proto.ResponseTimeout)
			defer cancel()
			if err := n.greet(ctx, p); err != nil && n.ctx.Err() == nil {
				n.log.Debug("hello failed", "peer", p, "err", err)
			}
		})
	}
}

// disconnected forgets a peer's run state once its last connection closes
// (dropPeerState: what it showed goes to its record, or is remembered
// a while). The notice of a closed connection can come late, after the
// peer connected again: the state is then kept.
func (n *Node) disconnected(nw network.Network, c network.Conn) {
	n.dropPeerState(c.RemotePeer(), true)
	if nw.Connectedness(c.RemotePeer()) == network.NotConnected {
		n.punches.Forget(c.RemotePeer())
	}
}

// newMetrics returns the node's metrics, reading it at each scrape
// (metrics.Sources): through MetricsHandler, once New has built what they
// read; the blob service and gossip may not run, the database be closed.
func (n *Node) newMetrics() *metrics.Metrics {
	return metrics.New(metrics.Sources{
		Effort:        func() float64 { return float64(n.issuer.Effort(n.mono(n.now()))) },
		InFlight:      func() float64 { return float64(n.inFlight.Load()) },
		Head:          func() float64 { return float64(n.events.Head()) },
		Peers:         func() float64 { return float64(len(n.run.Helloed(-1))) },
		StrangerSlots: func() float64 { return float64(n.run.Slots().Len()) },
		QuotaUsed:     func() float64 { return float64(n.blobs.QuotaUsed()) },
		Exchange: func() (uint64, uint64, uint64) {
			if n.fetch == nil {
				return 0, 0, 0
			}
			st := n.fetch.Exchange().Stats()
			return st.Unsolicited, st.ReceivedBytes, st.Rewants
		},
		DB: func() *pebble.Metrics {
			if n.db == nil {
				return nil
			}
			return n.db.Metrics()
		},
		ScoreBands: func() map[string]int { return n.gossip.ScoreBands() },
		Log: func() (events, bytes, authors, commits uint64, ok bool) {
			u, a := n.events.Usage()
			return u.Events, u.Bytes, uint64(a), n.events.Commits(), true
		},
		Disk: func() (uint64, bool, bool) {
			if d := n.db.DiskStatus(); d != nil {
				return d.FreeBytes, d.Full, true
			}
			return 0, false, false
		},
		Bandwidth: func() metrics.Bandwidth { return metrics.Bandwidth(n.bw.Counts()) },
	})
}

// ErrDiskFull matches the error of a write refused because the repo's
// disk is at the reserve the node keeps free (ADR 0044): a
// *diskspace.FullError, whose text names the repo, the free space and
// what to free. The daemon answers it with 507 Insufficient Storage.
var ErrDiskFull = diskspace.ErrFull

// room is what the node's stores ask before they write n bytes: nil, or
// a *diskspace.FullError while the repo's disk is at its reserve (ADR
// 0044). An in-memory node always has room.
func (n *Node) room(bytes int) error {
	if n.db == nil {
		return nil
	}
	return n.db.Room(bytes)
}
