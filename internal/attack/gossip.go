package attack

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/control"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	noise "github.com/libp2p/go-libp2p/p2p/security/noise"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	"github.com/libp2p/go-msgio/pbio"
	ma "github.com/multiformats/go-multiaddr"
	"lukechampine.com/blake3"

	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/proto"
)

// The gossip attacks (`wats bench gossip`, docs/reliability.md): each id is
// a real libp2p host (TCP on 127.0.0.1, Noise, yamux) that speaks
// gossipsub on the network's topic (proto.Topic), with the node's message
// id (the BLAKE3 of the data) and StrictSign, so that its messages pass
// everything but what the attack breaks.
const (
	// InvalidFlood: IDs ids publish, as fast as the nodes read them,
	// envelopes of EnvelopeBytes whose event has a bad signature (its id
	// right, so a node verifies the signature to find out).
	InvalidFlood = "invalid-flood"
	// ValidSpam: IDs ids publish, as fast as the nodes read them, valid
	// events each signed by the id's own key.
	ValidSpam = "valid-spam"
	// IHaveFlood: IDs ids subscribe to the topic and send raw gossipsub
	// RPCs, every IHaveEvery to each target, with an IHAVE naming IHaveIDs
	// message ids that exist nowhere; they never deliver what the node
	// asks for (a broken IWANT promise) and count the ids it asks for.
	IHaveFlood = "ihave-flood"
	// MeshSybil: IDs fresh ids subscribe and graft into the targets' mesh
	// (gossipsub as it is, backoffs respected), and each publishes a valid
	// event every PublishEvery.
	MeshSybil = "mesh-sybil"
)

// GossipAttacks lists the attacks GossipAttack knows.
var GossipAttacks = []string{InvalidFlood, ValidSpam, IHaveFlood, MeshSybil}

// Defaults of GossipOptions.
const (
	DefaultGossipIDs = 20
	DefaultSybilIDs  = 200
	// DefaultInvalidEnvelopeBytes is just under proto.MaxEnvelopeBytes: the
	// largest envelope a node parses whole (one past the cap is refused
	// on its length, before any parsing).
	DefaultInvalidEnvelopeBytes = proto.MaxEnvelopeBytes - 256
	DefaultSpamBodyBytes        = 1 << 10
	// DefaultIHaveIDs and DefaultIHaveEvery: an IHAVE of 4,096 ids (about
	// 140 KB) to each target ten times a second, past gossipsub's
	// per-heartbeat bounds (5,000 ids, 10 IHAVEs a peer).
	DefaultIHaveIDs     = 4096
	DefaultIHaveEvery   = 100 * time.Millisecond
	DefaultPublishEvery = 5 * time.Second
	DefaultIWantWindow  = 10 * time.Second
)

// GossipOptions tune a gossip attack.
type GossipOptions struct {
	// Network is the network whose topic the ids join.
	Network string
	// IDs is the number of ids (0: DefaultGossipIDs, DefaultSybilIDs for
	// MeshSybil).
	IDs int
	// EnvelopeBytes is the size of each InvalidFlood envelope (0:
	// DefaultInvalidEnvelopeBytes).
	EnvelopeBytes int
	// BodyBytes is the padding of each ValidSpam or MeshSybil event's body
	// (0: DefaultSpamBodyBytes).
	BodyBytes int
	// IHaveIDs and IHaveEvery shape IHaveFlood (0: the defaults).
	IHaveIDs   int
	IHaveEvery time.Duration
	// PublishEvery is how often each MeshSybil id publishes (0:
	// DefaultPublishEvery).
	PublishEvery time.Duration
	// Rate, if above 0, is the envelopes a second each ValidSpam id
	// publishes, open loop (spam.go): it never waits for the targets, and
	// what its own queue to a target cannot take is dropped (counted in
	// Dropped). 0: closed loop, as fast as the targets read, through
	// gossipsub.
	Rate int
	// Large makes each open-loop envelope LargeEnvelope: just under
	// proto.MaxEnvelopeBytes. Open loop only.
	Large bool
	// Hello makes each open-loop id a peer as well: it completes hello
	// with each target, answers its sync from its own log, asks it for a
	// sync page every second and announces its head on a Heads stream
	// (spam.go). Open loop only.
	Hello bool
	// Window is the span of GossipStats.IWantPerWindow (0:
	// DefaultIWantWindow).
	Window time.Duration
	// Sources, if set, are the local IP addresses the ids dial from, id i
	// from Sources[i%len(Sources)]: an attacker with an address per id, as
	// on the internet, where libp2p's per-IP connection rate limit applies
	// (it exempts loopback). Nil: the system's choice.
	Sources []net.IP
	// Ready, if set, is called once every id has tried to connect to every
	// target, with the number that connected to all: the attack starts
	// then, and the windows count from then.
	Ready func(connected int)
}

// GossipStats count what a gossip attack did.
type GossipStats struct {
	IDs int64 `json:"ids"`
	// Connected is the ids connected to every target when the attack
	// started.
	Connected int64 `json:"connected"`
	// Dials and DialsFailed count the connections made to a target and
	// the dials that failed (refused, banned, timed out), redials included;
	// Disconnects the connections to a target that closed during the
	// attack (the node evicted the id, say).
	Dials       int64 `json:"dials"`
	DialsFailed int64 `json:"dials_failed"`
	Disconnects int64 `json:"disconnects"`
	// Published counts the messages the ids' pubsub accepted to publish;
	// Sent the copies written to a target's stream and SentBytes their
	// data; Dropped the copies pubsub dropped because a target's queue was
	// full (the node did not read them fast enough).
	Published int64 `json:"published"`
	Sent      int64 `json:"sent"`
	SentBytes int64 `json:"sent_bytes"`
	Dropped   int64 `json:"dropped"`
	// IHaveRPCs and IHaveIDs count the IHAVE RPCs written and the message
	// ids they named; IWantIDs the ids of those the targets asked for in
	// IWANTs, and IWantPerWindow the same per Window (full windows only,
	// from the start of the attack).
	IHaveRPCs      int64   `json:"ihave_rpcs"`
	IHaveIDs       int64   `json:"ihave_ids"`
	IWantIDs       int64   `json:"iwant_ids"`
	IWantPerWindow []int64 `json:"iwant_per_window,omitempty"`
	WindowSeconds  float64 `json:"window_seconds,omitempty"`
	// Grafts and Prunes count a target joining and leaving an id's mesh
	// (as the id's gossipsub reports it: a target's GRAFT or PRUNE, or the
	// id's own).
	Grafts int64 `json:"grafts"`
	Prunes int64 `json:"prunes"`
	// With Hello: the hellos completed, the sync pages the targets
	// answered, the /wats/1 requests that failed (refused, challenged,
	// reset), and the heads announcements written.
	Hellos     int64 `json:"hellos,omitempty"`
	Syncs      int64 `json:"syncs,omitempty"`
	WatsFailed int64 `json:"wats_failed,omitempty"`
	Announced  int64 `json:"announced,omitempty"`
	// Also holds the figures of a second attack run at the same time
	// (`bench gossip-worker --also`), nil when there was none.
	Also *GossipStats `json:"also,omitempty"`
}

type gossipCounters struct {
	ids, connected, dials, dialsFailed, disconnects                    atomic.Int64
	published, sent, sentBytes, dropped, ihaveRPCs, ihaveIDs, iwantIDs atomic.Int64
	grafts, prunes                                                     atomic.Int64
	hellos, syncs, watsFailed, announced                               atomic.Int64
	mu                                                                 sync.Mutex
	windows                                                            []int64
}

func (c *gossipCounters) snapshot(window time.Duration) GossipStats {
	c.mu.Lock()
	w := slices.Clone(c.windows)
	c.mu.Unlock()
	return GossipStats{IDs: c.ids.Load(), Connected: c.connected.Load(), Dials: c.dials.Load(),
		DialsFailed: c.dialsFailed.Load(), Disconnects: c.disconnects.Load(), Published: c.published.Load(),
		Sent: c.sent.Load(), SentBytes: c.sentBytes.Load(), Dropped: c.dropped.Load(),
		IHaveRPCs: c.ihaveRPCs.Load(), IHaveIDs: c.ihaveIDs.Load(), IWantIDs: c.iwantIDs.Load(),
		IWantPerWindow: w, WindowSeconds: window.Seconds(), Grafts: c.grafts.Load(), Prunes: c.prunes.Load(),
		Hellos: c.hellos.Load(), Syncs: c.syncs.Load(), WatsFailed: c.watsFailed.Load(), Announced: c.announced.Load()}
}

// ParseTargets parses full multiaddrs (each ending in /p2p/<id>).
func ParseTargets(addrs []string) ([]peer.AddrInfo, error) {
	var out []peer.AddrInfo
	for _, a := range addrs {
		ai, err := peer.AddrInfoFromString(a)
		if err != nil {
			return nil, fmt.Errorf("attack: target %q: %w", a, err)
		}
		out = append(out, *ai)
	}
	if len(out) == 0 {
		return nil, errors.New("attack: no target")
	}
	return out, nil
}

// GossipAttack runs the named gossip attack on targets until ctx ends, and
// returns what the attacker did.
func GossipAttack(ctx context.Context, name string, targets []peer.AddrInfo, o GossipOptions) (GossipStats, error) {
	if !slices.Contains(GossipAttacks, name) {
		return GossipStats{}, fmt.Errorf("attack: unknown gossip attack %q; known: %s", name, strings.Join(GossipAttacks, ", "))
	}
	if len(targets) == 0 {
		return GossipStats{}, errors.New("attack: no target")
	}
	if (o.Large || o.Hello) && (name != ValidSpam || o.Rate <= 0) {
		return GossipStats{}, errors.New("attack: large envelopes and hello are for valid-spam open loop (a rate)")
	}
	o.defaults(name)
	st := &gossipCounters{}
	topic := proto.Topic(o.Network)

	// The ids, made a few at a time (each is a host, and for most a
	// gossipsub router).
	ids := make([]*gossipID, o.IDs)
	idctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var firstErr error
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i := range ids {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			var src net.IP
			if len(o.Sources) > 0 {
				src = o.Sources[i%len(o.Sources)]
			}
			id, err := newGossipID(idctx, name, topic, targets, src, o, st)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			ids[i] = id
		})
	}
	wg.Wait()
	defer func() {
		cancel()
		for _, id := range ids {
			if id != nil {
				id.close()
			}
		}
	}()
	if firstErr != nil {
		return GossipStats{}, firstErr
	}
	st.ids.Store(int64(len(ids)))

	// A first connection of every id to every target.
	for _, id := range ids {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			all := true
			for _, t := range targets {
				if !id.connect(ctx, t, st) {
					all = false
				}
			}
			if all {
				st.connected.Add(1)
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return st.snapshot(o.Window), nil
	}
	if o.Ready != nil {
		o.Ready(int(st.connected.Load()))
	}
	for _, id := range ids {
		id.attacking.Store(true)
	}

	var awg sync.WaitGroup
	defer awg.Wait()
	awg.Go(func() { countWindows(ctx, o.Window, st) })
	for _, id := range ids {
		for _, t := range targets {
			awg.Go(func() { id.keepConnected(ctx, t, st) })
		}
		switch {
		case name == ValidSpam && o.Rate > 0:
			awg.Go(func() { id.openLoop(ctx, targets, topic, o, st) })
			if o.Hello {
				for _, t := range targets {
					awg.Go(func() { id.greetAndSync(ctx, t, o.Network, st) })
					awg.Go(func() { id.announceHeads(ctx, t, st) })
				}
			}
			continue
		}
		switch name {
		case InvalidFlood, ValidSpam:
			awg.Go(func() { id.flood(ctx, name, o, st) })
		case MeshSybil:
			awg.Go(func() { id.publishSlowly(ctx, o, st) })
		case IHaveFlood:
			tag := make([]byte, 16)
			_, _ = rand.Read(tag)
			id.tag.Store(string(tag))
			for _, t := range targets {
				awg.Go(func() { id.ihaves(ctx, t, topic, o, st) })
			}
		}
	}
	<-ctx.Done()
	awg.Wait()
	return st.snapshot(o.Window), nil
}

func (o *GossipOptions) defaults(name string) {
	if o.IDs <= 0 {
		o.IDs = DefaultGossipIDs
		if name == MeshSybil {
			o.IDs = DefaultSybilIDs
		}
	}
	orDefault(&o.EnvelopeBytes, DefaultInvalidEnvelopeBytes)
	orDefault(&o.BodyBytes, DefaultSpamBodyBytes)
	orDefault(&o.IHaveIDs, DefaultIHaveIDs)
	orDefault(&o.IHaveEvery, DefaultIHaveEvery)
	orDefault(&o.PublishEvery, DefaultPublishEvery)
	orDefault(&o.Window, DefaultIWantWindow)
}

// orDefault sets *v to d unless *v is positive.
func orDefault[T int | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// countWindows appends the IWANT ids received in each full window to
// st.windows until ctx ends.
func countWindows(ctx context.Context, window time.Duration, st *gossipCounters) {
	t := time.NewTicker(window)
	defer t.Stop()
	last := int64(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n := st.iwantIDs.Load()
			st.mu.Lock()
			st.windows = append(st.windows, n-last)
			st.mu.Unlock()
			last = n
		}
	}
}

// gossipID is one attacker id: a host and, for the attacks that publish,
// a gossipsub router joined to the topic.
type gossipID struct {
	h     host.Host
	key   crypto.PrivKey
	ps    *pubsub.PubSub
	topic *pubsub.Topic
	sub   *pubsub.Subscription
	// drops counts this id's messages pubsub dropped, so that its flood
	// slows down to what the nodes read.
	drops     atomic.Int64
	attacking atomic.Bool
	// tag starts every fake message id of IHaveFlood (the ids the nodes
	// ask for are told apart by it).
	tag atomic.Value
	// log is what the id serves sync from when it completes hello
	// (GossipOptions.Hello); nil otherwise.
	log *idLog
}

// The gossipsub protocols an IHaveFlood id speaks (v1.3's extensions
// left out).
var meshsubIDs = []protocol.ID{pubsub.GossipSubID_v12, pubsub.GossipSubID_v11}

// maxNodeRPC bounds an RPC a node sends an IHaveFlood id.
const maxNodeRPC = 4 << 20

func newGossipID(ctx context.Context, name, topic string, targets []peer.AddrInfo, src net.IP, o GossipOptions, st *gossipCounters) (*gossipID, error) {
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		return nil, err
	}
	allowed := map[peer.ID]bool{}
	for _, t := range targets {
		allowed[t.ID] = true
	}
	h, err := libp2p.New(
		libp2p.Identity(key),
		libp2p.NoListenAddrs,
		libp2p.Transport(tcp.NewTCPTransport, tcp.DisableReuseport(), tcp.WithDialerForAddr(fromSource(src))),
		libp2p.Security(noise.ID, noise.New),
		libp2p.Muxer(yamux.ID, yamux.DefaultTransport),
		libp2p.ResourceManager(&network.NullResourceManager{}),
		libp2p.ConnectionGater(targetsOnly(allowed)),
		libp2p.DisableRelay(),
		libp2p.DisableMetrics(),
	)
	if err != nil {
		return nil, fmt.Errorf("attack: gossip host: %w", err)
	}
	id := &gossipID{h: h, key: key}
	h.Network().Notify(&network.NotifyBundle{DisconnectedF: func(_ network.Network, c network.Conn) {
		if id.attacking.Load() && allowed[c.RemotePeer()] {
			st.disconnects.Add(1)
		}
	}})
	if name == IHaveFlood {
		for _, p := range meshsubIDs {
			h.SetStreamHandler(p, func(s network.Stream) { id.readRPCs(s, st) })
		}
		return id, nil
	}
	if name == ValidSpam && o.Rate > 0 { // open loop: raw RPCs (spam.go)
		for _, p := range meshsubIDs {
			h.SetStreamHandler(p, discardRPCs)
		}
		if o.Hello {
			id.log = &idLog{}
			h.SetStreamHandler(proto.ID, func(s network.Stream) { id.serveWats(s, o.Network) })
		}
		return id, nil
	}
	ps, err := pubsub.NewGossipSub(ctx, h,
		pubsub.WithMessageIdFn(gossipMessageID),
		pubsub.WithMessageSignaturePolicy(pubsub.StrictSign),
		pubsub.WithPeerExchange(false),
		pubsub.WithRawTracer(&idTracer{id: id, st: st, targets: allowed}),
	)
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("attack: gossipsub: %w", err)
	}
	id.ps = ps
	if id.topic, err = ps.Join(topic); err != nil {
		h.Close()
		return nil, fmt.Errorf("attack: join %s: %w", topic, err)
	}
	if name == MeshSybil {
		// A subscription: the id is a member of the topic, grafted into
		// the targets' meshes (what it receives is read and dropped).
		if id.sub, err = id.topic.Subscribe(); err != nil {
			h.Close()
			return nil, fmt.Errorf("attack: subscribe %s: %w", topic, err)
		}
		go func() {
			for {
				if _, err := id.sub.Next(ctx); err != nil {
					return
				}
			}
		}()
	}
	return id, nil
}

func (id *gossipID) close() {
	if id.sub != nil {
		id.sub.Cancel()
	}
	if id.topic != nil {
		_ = id.topic.Close()
	}
	_ = id.h.Close()
}

// connect dials t once (10 s at most), counting the outcome.
func (id *gossipID) connect(ctx context.Context, t peer.AddrInfo, st *gossipCounters) bool {
	if id.h.Network().Connectedness(t.ID) == network.Connected {
		return true
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := id.h.Connect(network.WithForceDirectDial(dctx, "attack"), t); err != nil {
		if ctx.Err() == nil {
			st.dialsFailed.Add(1)
		}
		return false
	}
	st.dials.Add(1)
	return true
}

// keepConnected dials t again, within a second, each time the
// connection closes, until ctx ends.
func (id *gossipID) keepConnected(ctx context.Context, t peer.AddrInfo, st *gossipCounters) {
	for ctx.Err() == nil {
		if !id.connect(ctx, t, st) {
			Pause(ctx, time.Second)
			continue
		}
		Pause(ctx, 250*time.Millisecond)
	}
}

// flood publishes InvalidFlood's or ValidSpam's envelopes as fast as the
// targets read them: after a message pubsub dropped (a target's queue
// full), the id waits 5 ms.
func (id *gossipID) flood(ctx context.Context, name string, o GossipOptions, st *gossipCounters) {
	var salt [8]byte
	_, _ = rand.Read(salt[:])
	for i := 0; ctx.Err() == nil; i++ {
		var b []byte
		var err error
		if name == InvalidFlood {
			b, err = InvalidEnvelope(id.key, salt, i, o.EnvelopeBytes)
		} else {
			b, err = SpamEnvelope(id.key, i, o.BodyBytes)
		}
		if err != nil {
			return
		}
		drops := id.drops.Load()
		if err := id.topic.Publish(ctx, b); err != nil {
			Pause(ctx, 10*time.Millisecond)
			continue
		}
		st.published.Add(1)
		if id.drops.Load() != drops {
			Pause(ctx, 5*time.Millisecond)
		}
	}
}

// publishSlowly publishes one valid event every o.PublishEvery (the first
// at a random moment of the first period).
func (id *gossipID) publishSlowly(ctx context.Context, o GossipOptions, st *gossipCounters) {
	var r [8]byte
	_, _ = rand.Read(r[:])
	Pause(ctx, time.Duration(binary.LittleEndian.Uint64(r[:])%uint64(o.PublishEvery)))
	t := time.NewTicker(o.PublishEvery)
	defer t.Stop()
	for i := 0; ctx.Err() == nil; i++ {
		if b, err := SpamEnvelope(id.key, i, o.BodyBytes); err == nil && id.topic.Publish(ctx, b) == nil {
			st.published.Add(1)
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}

// ihaves is IHaveFlood on one target: a gossipsub stream of its own to
// it, a subscription to the topic, then an IHAVE of o.IHaveIDs fresh fake
// ids every o.IHaveEvery; the stream is opened again if it breaks.
func (id *gossipID) ihaves(ctx context.Context, t peer.AddrInfo, topic string, o GossipOptions, st *gossipCounters) {
	tag := id.tag.Load().(string)
	var n uint64
	for ctx.Err() == nil {
		if id.h.Network().Connectedness(t.ID) != network.Connected {
			Pause(ctx, 200*time.Millisecond)
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		s, err := id.h.NewStream(sctx, t.ID, meshsubIDs...)
		cancel()
		if err != nil {
			Pause(ctx, time.Second)
			continue
		}
		stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
		w := pbio.NewDelimitedWriter(s)
		sub := true
		err = w.WriteMsg(&pb.RPC{Subscriptions: []*pb.RPC_SubOpts{{Subscribe: &sub, Topicid: &topic}}})
		tick := time.NewTicker(o.IHaveEvery)
		for err == nil && ctx.Err() == nil {
			mids := make([]string, o.IHaveIDs)
			for i := range mids {
				n++
				mids[i] = fakeMessageID(tag, n)
			}
			rpc := &pb.RPC{Control: &pb.ControlMessage{Ihave: []*pb.ControlIHave{{TopicID: &topic, MessageIDs: mids}}}}
			if err = w.WriteMsg(rpc); err != nil {
				break
			}
			st.ihaveRPCs.Add(1)
			st.ihaveIDs.Add(int64(len(mids)))
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
		tick.Stop()
		stop()
		_ = s.Reset()
		Pause(ctx, 200*time.Millisecond)
	}
}

// fakeMessageID is the n-th fake message id of an IHaveFlood id: its tag
// (16 bytes) and 16 more, as long as a real id (a BLAKE3-256 digest).
func fakeMessageID(tag string, n uint64) string {
	var b [32]byte
	copy(b[:16], tag)
	binary.BigEndian.PutUint64(b[16:], n)
	_, _ = rand.Read(b[24:])
	return string(b[:])
}

// readRPCs reads the RPCs a target sends an IHaveFlood id on the stream
// it opened, counting the IWANT ids that name this id's fake ids.
func (id *gossipID) readRPCs(s network.Stream, st *gossipCounters) {
	defer s.Reset()
	r := pbio.NewDelimitedReader(s, maxNodeRPC)
	for {
		var rpc pb.RPC
		if err := r.ReadMsg(&rpc); err != nil {
			return
		}
		tag, _ := id.tag.Load().(string)
		if tag == "" {
			continue
		}
		for _, w := range rpc.GetControl().GetIwant() {
			for _, m := range w.GetMessageIDs() {
				if strings.HasPrefix(m, tag) {
					st.iwantIDs.Add(1)
				}
			}
		}
	}
}

// gossipMessageID is the node's gossipsub message id: the BLAKE3-256 of
// the data.
func gossipMessageID(m *pb.Message) string {
	sum := blake3.Sum256(m.Data)
	return string(sum[:])
}

// SpamEnvelope is the i-th valid envelope of an id with key: a note event
// signed by the key, its body padded with bodyBytes bytes.
func SpamEnvelope(key crypto.PrivKey, i, bodyBytes int) ([]byte, error) {
	raw, err := spamEvent(key, i, bodyBytes)
	if err != nil {
		return nil, err
	}
	return proto.MarshalEnvelope(&proto.Envelope{Event: raw})
}

// spamEvent is the i-th spam event of key, as stored: a note whose body is
// padded with bodyBytes bytes.
func spamEvent(key crypto.PrivKey, i, bodyBytes int) (jsontext.Value, error) {
	ev, err := eventlog.New(key, time.Now(), "note", spamBody(i, bodyBytes), nil)
	if err != nil {
		return nil, err
	}
	return ev.Marshal()
}

// InvalidEnvelope is the i-th envelope of InvalidFlood, of size bytes (at
// least the event's): an event of the largest body, signed by key and
// then its signature changed (its id still right, so a node learns it is
// bad only by verifying the signature), and a padding member that
// decoders ignore. salt makes one id's envelopes differ from another's.
func InvalidEnvelope(key crypto.PrivKey, salt [8]byte, i, size int) ([]byte, error) {
	body := fmt.Sprintf(`{"bad":%d,"s":"%x","p":%q}`, i, salt, strings.Repeat("b", eventlog.MaxBodyBytes-128))
	ev, err := eventlog.New(key, time.Now(), "note", jsontext.Value(body), nil)
	if err != nil {
		return nil, err
	}
	sig := []byte(ev.Sig)
	// The first character of an unpadded base64url Ed25519 signature
	// carries 6 full bits: changing it keeps the encoding valid.
	if sig[0] == 'A' {
		sig[0] = 'B'
	} else {
		sig[0] = 'A'
	}
	ev.Sig = string(sig)
	raw, err := ev.Marshal()
	if err != nil {
		return nil, err
	}
	b, err := proto.MarshalEnvelope(&proto.Envelope{Event: raw})
	if err != nil {
		return nil, err
	}
	const member = `,"_grease_pad":""}`
	if pad := size - len(b) - len(member) + 1; pad > 0 {
		out := make([]byte, 0, size)
		out = append(out, b[:len(b)-1]...)
		out = append(out, member[:len(member)-2]...)
		out = append(out, strings.Repeat("g", pad)...)
		out = append(out, `"}`...)
		b = out
	}
	return b, nil
}

// idTracer counts, for one id, what its gossipsub router sends to the
// targets and drops, and the targets joining and leaving its mesh.
type idTracer struct {
	id      *gossipID
	st      *gossipCounters
	targets map[peer.ID]bool
}

var _ pubsub.RawTracer = (*idTracer)(nil)

func (t *idTracer) SendRPCCompleted(rpc *pubsub.RPC, p peer.ID, _ time.Duration) {
	if !t.targets[p] || len(rpc.Publish) == 0 {
		return
	}
	t.st.sent.Add(int64(len(rpc.Publish)))
	for _, m := range rpc.Publish {
		t.st.sentBytes.Add(int64(len(m.Data)))
	}
}

func (t *idTracer) DropRPC(rpc *pubsub.RPC, p peer.ID) {
	if t.targets[p] && len(rpc.Publish) > 0 {
		t.st.dropped.Add(int64(len(rpc.Publish)))
		t.id.drops.Add(1)
	}
}

func (t *idTracer) Graft(p peer.ID, _ string) {
	if t.targets[p] {
		t.st.grafts.Add(1)
	}
}

func (t *idTracer) Prune(p peer.ID, _ string) {
	if t.targets[p] {
		t.st.prunes.Add(1)
	}
}

func (*idTracer) OnNewOutboundStream(peer.ID, protocol.ID) {}
func (*idTracer) OnClosedOutboundStream(peer.ID)           {}
func (*idTracer) Join(string)                              {}
func (*idTracer) Leave(string)                             {}
func (*idTracer) ValidateMessage(*pubsub.Message)          {}
func (*idTracer) DeliverMessage(*pubsub.Message)           {}
func (*idTracer) RejectMessage(*pubsub.Message, string)    {}
func (*idTracer) DuplicateMessage(*pubsub.Message)         {}
func (*idTracer) ThrottlePeer(peer.ID)                     {}
func (*idTracer) RecvRPC(*pubsub.RPC)                      {}
func (*idTracer) SendRPC(*pubsub.RPC, peer.ID)             {}
func (*idTracer) UndeliverableMessage(*pubsub.Message)     {}

// targetsOnly is a connection gater that lets an id connect to the
// targets alone: it follows no peer exchange and accepts no one else, so
// that the attack stays on the targets it was given.
type targetsOnly map[peer.ID]bool

func (g targetsOnly) InterceptPeerDial(p peer.ID) bool { return g[p] }
func (g targetsOnly) InterceptAddrDial(p peer.ID, _ ma.Multiaddr) bool {
	return g[p]
}
func (targetsOnly) InterceptAccept(network.ConnMultiaddrs) bool { return true }
func (g targetsOnly) InterceptSecured(_ network.Direction, p peer.ID, _ network.ConnMultiaddrs) bool {
	return g[p]
}
func (targetsOnly) InterceptUpgraded(network.Conn) (bool, control.DisconnectReason) { return true, 0 }

// fromSource is a TCP dialer for the transport of an id that dials from
// the local address src (any, when nil).
func fromSource(src net.IP) tcp.DialerForAddr {
	d := &net.Dialer{}
	if src != nil {
		d.LocalAddr = &net.TCPAddr{IP: src}
	}
	return func(ma.Multiaddr) (tcp.ContextDialer, error) { return d, nil }
}
