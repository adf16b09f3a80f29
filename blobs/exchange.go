package blobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bsmsg "github.com/ipfs/boxo/bitswap/message"
	pb "github.com/ipfs/boxo/bitswap/message/pb"
	bsnetwork "github.com/ipfs/boxo/bitswap/network"
	"github.com/ipfs/boxo/bitswap/network/bsnet"
	"github.com/ipfs/boxo/bitswap/server"
	blocks "github.com/ipfs/go-block-format"
	"github.com/ipfs/go-cid"
	p2pevent "github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-msgio"
)

// Exchange is the node's bitswap endpoint (docs/design.md §9, ADR 0029), on
// bitswap's standard protocol ids (/ipfs/bitswap/1.2.0 and older), so that
// other IPFS implementations can fetch from and serve a wats node.
//
// Serving is boxo's bitswap server, held by a filter: a block goes only to
// a peer that Node.Serves admits (blobs.serve: by default the
// peers that completed hello) and only if a complete blob holds it
// (Store.Referenced), so the blocks of a fetch in progress, cut off or
// removed are never served.
//
// Fetching is wats's own bitswap client (FetchFrom), not boxo's: it sends
// its wants to one provider only (no broadcast, no content routing), so
// that each attempt is attributed to the provider the fetch plan chose;
// it asks only for the blocks of the DAG that cover the declared size and
// accepts only blocks it asked that provider for; every other block
// received is dropped and counted (Stats.Unsolicited).
type Exchange struct {
	net    bsnetwork.BitSwapNetwork
	server *server.Server
	store  *Store
	window int
	idle   time.Duration
	node   Node
	// dialer dials providers (ExchangeOptions.Dialer, or the host).
	dialer host.Host
	// bitswapOnly is ExchangeOptions.BitswapOnly.
	bitswapOnly bool
	// turns are the peers' turns to be sent a block of the block
	// transfer (sendBlock); closing, closed by Close, ends the waits for
	// them.
	turns     turns
	closing   chan struct{}
	closeOnce sync.Once
	// reads holds the exchange open while an answer of the block transfer
	// reads the store (sendBlock): Close takes it to write, and returns
	// only once no answer reads the store, which its caller may close
	// next. readsClosed, under reads, is set by Close.
	reads       sync.RWMutex
	readsClosed bool

	mu struct {
		sync.Mutex
		// wants maps a (provider, block) to the attempts waiting for it.
		wants map[wantKey][]*attempt
		// byPeer maps a provider to its attempts in progress.
		byPeer map[peer.ID]map[*attempt]struct{}
		// asks maps a (peer, block) to the Holders calls waiting for the
		// peer's answer.
		asks map[wantKey][]*holderAsk
	}
	// asking counts the Holders calls waiting for answers: none, and a
	// received block or answer skips looking for them.
	asking      atomic.Int64
	unsolicited atomic.Uint64
	received    atomic.Uint64
	rewants     atomic.Uint64
}

// DefaultIdleTimeout ends an attempt whose provider sends nothing for
// 15 s: within ADR 0014's 60 s per provider, a provider that stalls (or
// drips a block now and then) frees the fetch sooner for the next one.
const DefaultIdleTimeout = 15 * time.Second

// DefaultWindow is how many blocks one attempt has asked for and not yet
// received, at most (also bounded by the byte budget, see FetchFrom).
const DefaultWindow = 16

// ExchangeOptions configures NewExchange.
type ExchangeOptions struct {
	// Node is what the exchange asks of the node that runs it; nil
	// means BaseNode's answers.
	Node Node
	// Dialer, if set, dials providers for fetches in place of the
	// exchange's host: the node's routed host, which asks the DHT for the
	// addresses of a provider it has none of (docs/adr/0040). Only fetches
	// dial; serving never does.
	Dialer host.Host
	// Window is the most blocks one attempt has requested and not
	// received. 0 means DefaultWindow.
	Window int
	// IdleTimeout ends an attempt whose provider has sent nothing it
	// asked for in this long (a provider fault). 0 means
	// DefaultIdleTimeout.
	IdleTimeout time.Duration
	// BitswapOnly makes fetches ask over bitswap even a provider that
	// speaks wats's block transfer (BlocksProtocol): for the tests of the
	// bitswap client, and the benches that compare the two. A node does
	// not set it. Serving is unchanged.
	BitswapOnly bool
}

// Node is everything the exchange asks of the node that runs it, in one
// place (docs/adr/0046): whom it serves and with what priority, which
// inbound streams it admits, what to do before asking a provider, and
// what peers did. Everything else a fetch needs comes down to it in the
// Request and its Sources, and content routing in FetcherOptions. Embed
// BaseNode to answer only some of it.
type Node interface {
	// Serves reports whether blocks may be served to p (blobs.serve).
	Serves(p peer.ID) bool
	// AdmitStream admits an inbound bitswap stream of p: false resets it
	// (p holds as many as it may), else release is called when the stream
	// ends.
	AdmitStream(p peer.ID) (release func(), ok bool)
	// Priority is the resource-manager priority at which the memory of
	// p's messages is reserved while this node fetches nothing from p
	// (while it does, always: the blocks are what it asked for).
	Priority(p peer.ID) uint8
	// Prepare runs in a fetch's attempt, under its deadline (ctx), after
	// connecting to provider p and before the first want: the node
	// completes hello there, since its peers serve only peers that did
	// (blobs.serve). An error fails the attempt (a provider fault, backed
	// off unless p is a guess); nil asks p.
	Prepare(ctx context.Context, p peer.ID) error
	// Observe is told what a peer did that the node counts (Event).
	Observe(e Event)
}

// BaseNode is the Node of an exchange given none: it serves every peer,
// admits every stream at medium priority, asks every provider at once and
// is told nothing.
type BaseNode struct{}

// Serves serves every peer.
func (BaseNode) Serves(peer.ID) bool { return true }

// AdmitStream admits every stream.
func (BaseNode) AdmitStream(peer.ID) (func(), bool) { return func() {}, true }

// Priority is medium for every peer.
func (BaseNode) Priority(peer.ID) uint8 { return network.ReservationPriorityMedium }

// Prepare asks every provider at once.
func (BaseNode) Prepare(context.Context, peer.ID) error { return nil }

// Observe is told nothing.
func (BaseNode) Observe(Event) {}

// An Event is what the exchange tells its Node of a peer (Node.Observe).
type Event struct {
	// Kind says what happened; Peer is the peer that did it.
	Kind EventKind
	Peer peer.ID
	// CID is the block an Unheld peer wanted.
	CID cid.Cid
	// Size is the size of the blob a Served provider completed, or of the
	// blocks of a Sent or Received, in bytes.
	Size uint64
}

// EventKind says what a peer did.
type EventKind int

const (
	// Held: an inbound stream of the peer was reset because no message
	// began within FirstMessageTimeout, or a body did not arrive within
	// BodyTimeout (stream hoarding).
	Held EventKind = iota + 1
	// Unheld: the peer, which Node.Serves admits, wanted a block that no
	// complete blob here holds: it is answered DONT_HAVE, and the node
	// decides whether it is a miss.
	Unheld
	// Served: the provider completed a blob for a fetch: value it gave.
	// It is not told of a blob fetched from the fetch's Request.Requester.
	Served
	// Sent: the exchange's server sent the peer blocks of Size bytes in
	// one message (what a peer fetches from this node).
	Sent
	// Received: a fetch accepted a block of Size bytes from the peer.
	Received
)

// ExchangeStats are the exchange's counters since it started.
type ExchangeStats struct {
	// Unsolicited counts blocks received that no attempt asked their
	// sender for; they were dropped, never stored.
	Unsolicited uint64
	// ReceivedBytes counts the bytes of blocks accepted by attempts.
	ReceivedBytes uint64
	// Rewants counts the times an attempt sent its wants in flight again
	// (a silent third of the idle timeout, or a connection of several
	// to its provider closed; FetchFrom).
	Rewants uint64
}

type wantKey struct {
	p peer.ID
	c string // cid.KeyString
}

// serverMaxOutstandingBytes is how many bytes of blocks the bitswap server
// prepares for one peer at once: boxo's default, 1 MiB (a single chunk),
// leaves the link idle between chunks; 4 MiB keeps a 256 MiB fetch over
// loopback as fast as 8 MiB did, with 10-16 MiB less peak RSS on each
// side (docs/performance.md, "Blobs in data files"), and allows 4 MiB
// per round trip (80 MB/s at 50 ms).
const serverMaxOutstandingBytes = 4 << 20

// EnsureDefaults sets each field of o that has a default and is not
// positive (Window, IdleTimeout) to it and returns o; on a nil o it returns
// new ExchangeOptions of the defaults. Every ExchangeOptions is valid.
func (o *ExchangeOptions) EnsureDefaults() *ExchangeOptions {
	if o == nil {
		o = &ExchangeOptions{}
	}
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	return o
}

// NewExchange starts bitswap on h: the server on st's complete blobs and
// the receiver of FetchFrom's blocks, configured by opts (nil: the
// defaults; opts itself is not changed). Close stops it.
func NewExchange(h host.Host, st *Store, opts *ExchangeOptions) *Exchange {
	var o ExchangeOptions
	if opts != nil {
		o = *opts
	}
	o.EnsureDefaults()
	x := &Exchange{store: st, window: o.Window, idle: o.IdleTimeout, node: o.Node, dialer: o.Dialer, bitswapOnly: o.BitswapOnly,
		closing: make(chan struct{})}
	if x.node == nil {
		x.node = BaseNode{}
	}
	if x.dialer == nil {
		x.dialer = h
	}
	x.mu.wants = make(map[wantKey][]*attempt)
	x.mu.byPeer = make(map[peer.ID]map[*attempt]struct{})
	x.mu.asks = make(map[wantKey][]*holderAsk)
	x.net = bsnet.NewFromIpfsHost(h)
	x.server = server.New(context.Background(), x.net, st.bstore,
		server.WithPeerBlockRequestFilter(func(p peer.ID, c cid.Cid) bool {
			return x.node.Serves(p) && st.Referenced(c)
		}),
		server.MaxOutstandingBytesPerPeer(serverMaxOutstandingBytes),
		server.WithTracer(sentTracer{x}),
	)
	x.net.Start(x.server, (*receiver)(x))
	// bsnet reads messages of up to 4 MiB; these handlers replace its own
	// on the same protocol ids, reading at most MaxMessageBytes a message,
	// so that no block bigger than a chunk and its framing is ever taken in.
	for _, id := range h.Mux().Protocols() {
		if strings.HasPrefix(string(id), bitswapPrefix) {
			h.SetStreamHandler(id, x.handleStream)
		}
	}
	h.SetStreamHandler(BlocksProtocol, x.handleBlocks)
	return x
}

// sentTracer tells the exchange's Node of the blocks its server sends
// (Sent).
type sentTracer struct{ x *Exchange }

// MessageSent implements tracer.Tracer: boxo's server calls it as it
// sends msg to p.
func (t sentTracer) MessageSent(p peer.ID, msg bsmsg.BitSwapMessage) {
	var n uint64
	for _, b := range msg.Blocks() {
		n += uint64(len(b.RawData()))
	}
	if n > 0 {
		t.x.node.Observe(Event{Kind: Sent, Peer: p, Size: n})
	}
}

// MessageReceived implements tracer.Tracer; the exchange reads its
// messages itself (handleStream).
func (sentTracer) MessageReceived(peer.ID, bsmsg.BitSwapMessage) {}

// bitswapPrefix starts the ids of bitswap's protocols
// (/ipfs/bitswap/1.2.0, 1.1.0, 1.0.0 and the unversioned one).
const bitswapPrefix = "/ipfs/bitswap"

// MaxMessageBytes is the largest bitswap message the exchange reads: one
// chunk, and 32 KiB for what a bitswap server packs with it (boxo's server
// fills a message to 16 KiB, then adds the next block whole). A peer that
// sends more has its stream reset (ADR 0029).
const MaxMessageBytes = ChunkSize + 32<<10

// Protocols are bitswap's protocol ids, which the exchange serves (and
// whose resource-manager protocol scopes the node sets).
var Protocols = []protocol.ID{bsnet.ProtocolBitswap, bsnet.ProtocolBitswapOneOne, bsnet.ProtocolBitswapOneZero, bsnet.ProtocolBitswapNoVers}

// ServiceName is the resource-manager service of the inbound bitswap
// streams this exchange reads, whose limits the node sets.
const ServiceName = "wats.bitswap"

// FirstMessageTimeout bounds the wait for the first message of an inbound
// bitswap stream: a bitswap peer opens a stream to send a message, so a
// stream that sends none for this long is being held, and is reset.
const FirstMessageTimeout = 2 * time.Second

// streamIdle bounds the wait for each later message of an inbound stream
// (a peer keeps its stream to send wants over time).
const streamIdle = 5 * time.Minute

// MinBodyRate is the slowest a message's body may arrive once its length
// prefix has: 64 KiB/s (half a megabit). A body's read deadline is
// FirstMessageTimeout plus its length at this rate (BodyTimeout), so a
// peer on a slow link delivers a full message of MaxMessageBytes (about 18
// s allowed), and one that trickles a body to hold the memory reserved for
// it is reset.
const MinBodyRate = 64 << 10

// BodyTimeout is the read deadline of a message body of n bytes, counted
// from its length prefix: FirstMessageTimeout + n / MinBodyRate.
func BodyTimeout(n int) time.Duration {
	return FirstMessageTimeout + time.Duration(n)*time.Second/MinBodyRate
}

// admit attaches an inbound stream of the exchange (bitswap's or the
// block transfer's) to ServiceName's scope and holds it to the peer's
// stream cap (Node.AdmitStream); it resets the stream and says false when
// either refuses. The caller calls release when the stream ends.
func (x *Exchange) admit(s network.Stream) (p peer.ID, release func(), ok bool) {
	p = s.Conn().RemotePeer()
	if err := s.Scope().SetService(ServiceName); err != nil {
		_ = s.Reset()
		return p, nil, false
	}
	if release, ok = x.node.AdmitStream(p); !ok {
		_ = s.Reset()
		return p, nil, false
	}
	return p, release, true
}

// handleStream reads the bitswap messages of an incoming stream and hands
// each to the server (wants) and to the fetch attempts (blocks); a message
// begun and not read (no memory for it, a body cut off) is told to p's
// attempts, which ask again for what they wait for. It has the
// shape of every stream handler of the node: the stream is attached to
// ServiceName's scope and held to the peer's cap (Node.AdmitStream),
// its first message must begin within FirstMessageTimeout and each body
// arrive within BodyTimeout of its prefix (a stream that stalls in either
// is held: a Held event), each message is at most MaxMessageBytes
// with its memory reserved in the stream's scope before it is read, a
// protocol error resets the stream, and EOF closes it.
func (x *Exchange) handleStream(s network.Stream) {
	p, release, ok := x.admit(s)
	if !ok {
		return
	}
	defer release()
	scope := s.Scope()
	r := msgio.NewVarintReaderSize(s, MaxMessageBytes)
	wait := FirstMessageTimeout
	for first := true; ; first = false {
		_ = s.SetReadDeadline(time.Now().Add(wait))
		wait = streamIdle
		n, err := r.NextMsgLen()
		if err != nil {
			if first && isTimeout(err) {
				x.node.Observe(Event{Kind: Held, Peer: p})
			}
			if err != io.EOF {
				_ = s.Reset()
			} else {
				_ = s.Close()
			}
			return
		}
		if n < 0 || n > MaxMessageBytes {
			_ = s.Reset()
			return
		}
		if err := scope.ReserveMemory(n, x.priority(p)); err != nil {
			// The message is dropped unread: its blocks, if this node
			// asked p for them, must be asked for again.
			x.dropped(p)
			_ = s.Reset()
			return
		}
		_ = s.SetReadDeadline(time.Now().Add(BodyTimeout(n)))
		msg, _, err := bsmsg.FromMsgReader(r)
		scope.ReleaseMemory(n)
		if err != nil {
			if isTimeout(err) {
				x.node.Observe(Event{Kind: Held, Peer: p})
			}
			x.dropped(p)
			_ = s.Reset()
			return
		}
		ctx := context.Background()
		x.server.ReceiveMessage(ctx, p, msg)
		x.unheld(p, msg)
		(*receiver)(x).ReceiveMessage(ctx, p, msg)
	}
}

// unheld tells the Node of each block p wanted in msg that no complete
// blob here holds, which the server answered DONT_HAVE (an Unheld event):
// a want-block only. A want-have asks whether the node holds a block, as
// a fetch asks its connected peers (Exchange.Holders), and takes nothing;
// it is no miss (docs/adr/0047).
func (x *Exchange) unheld(p peer.ID, msg bsmsg.BitSwapMessage) {
	for _, e := range msg.Wantlist() {
		if e.Cancel || e.WantType != pb.Message_Wantlist_Block || !x.node.Serves(p) || x.store.Referenced(e.Cid) {
			continue
		}
		x.node.Observe(Event{Kind: Unheld, Peer: p, CID: e.Cid})
	}
}

// priority is the resource-manager priority of the memory of p's messages:
// always, while this node fetches from p (they carry the blocks it asked
// for); else Node.Priority's. It is read
// for each message.
func (x *Exchange) priority(p peer.ID) uint8 {
	x.mu.Lock()
	fetching := len(x.mu.byPeer[p]) > 0
	x.mu.Unlock()
	if fetching {
		return network.ReservationPriorityAlways
	}
	return x.node.Priority(p)
}

// isTimeout reports whether err is a read deadline that passed.
func isTimeout(err error) bool {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne) && ne.Timeout()
}

// Close stops serving and receiving. Attempts in progress fail once their
// contexts end.
func (x *Exchange) Close() {
	h := x.net.Host()
	for _, id := range h.Mux().Protocols() {
		if strings.HasPrefix(string(id), bitswapPrefix) {
			h.RemoveStreamHandler(id)
		}
	}
	h.RemoveStreamHandler(BlocksProtocol)
	x.closeOnce.Do(func() { close(x.closing) })
	x.reads.Lock()
	x.readsClosed = true
	x.reads.Unlock()
	x.net.Stop()
	x.server.Close()
}

// Stats returns the exchange's counters.
func (x *Exchange) Stats() ExchangeStats {
	return ExchangeStats{Unsolicited: x.unsolicited.Load(), ReceivedBytes: x.received.Load(), Rewants: x.rewants.Load()}
}

// Host returns the libp2p host the exchange runs on.
func (x *Exchange) Host() host.Host { return x.net.Host() }

// event is what the receiver (or the block transfer's reader) hands an
// attempt: a block it asked for, a provider's "don't have" for one, the
// provider's disconnection, or the end of a block transfer's stream.
type event struct {
	blk      blocks.Block
	dontHave cid.Cid
	gone     bool
	// err ends the attempt: the block transfer's stream failed or its
	// provider broke a rule of it (blocksConn).
	err error
	// buf, if set, holds blk's bytes: a buffer of leafBufs, returned once
	// the block is written (or dropped).
	buf *[]byte
}

// attempt is one FetchFrom in progress: its provider and its inbox.
type attempt struct {
	p     peer.ID
	inbox chan event
	// lost is signalled (one signal pending at most) when a message of p
	// was dropped unread: the blocks it carried are asked for again.
	lost chan struct{}
}

// want registers a as waiting for c from its provider.
func (x *Exchange) want(a *attempt, c cid.Cid) {
	x.mu.Lock()
	k := wantKey{a.p, c.KeyString()}
	x.mu.wants[k] = append(x.mu.wants[k], a)
	x.mu.Unlock()
}

// register and unregister track a's provider, for disconnections.
func (x *Exchange) register(a *attempt) {
	x.mu.Lock()
	defer x.mu.Unlock()
	m := x.mu.byPeer[a.p]
	if m == nil {
		m = make(map[*attempt]struct{})
		x.mu.byPeer[a.p] = m
	}
	m[a] = struct{}{}
}

// unregister drops a and every want it still has.
func (x *Exchange) unregister(a *attempt, outstanding []cid.Cid) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if m := x.mu.byPeer[a.p]; m != nil {
		delete(m, a)
		if len(m) == 0 {
			delete(x.mu.byPeer, a.p)
		}
	}
	for _, c := range outstanding {
		k := wantKey{a.p, c.KeyString()}
		as := x.mu.wants[k]
		for i, o := range as {
			if o == a {
				as = append(as[:i], as[i+1:]...)
				break
			}
		}
		if len(as) == 0 {
			delete(x.mu.wants, k)
		} else {
			x.mu.wants[k] = as
		}
	}
}

// take removes and returns the attempts waiting for c from p.
func (x *Exchange) take(p peer.ID, c cid.Cid) []*attempt {
	k := wantKey{p, c.KeyString()}
	x.mu.Lock()
	defer x.mu.Unlock()
	as := x.mu.wants[k]
	delete(x.mu.wants, k)
	return as
}

// deliver hands e to a without blocking: an attempt has at most its window
// of wants registered and each want is delivered once, so its inbox
// (window+1 events) never fills.
func deliver(a *attempt, e event) {
	select {
	case a.inbox <- e:
	default:
	}
}

// dropped tells p's attempts that a message of p was dropped unread.
func (x *Exchange) dropped(p peer.ID) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for a := range x.mu.byPeer[p] {
		select {
		case a.lost <- struct{}{}:
		default: // one pending signal asks again for everything
		}
	}
}

// receiver is the Exchange as bitswap's network sees it.
type receiver Exchange

// ReceiveMessage hands the blocks of msg to the attempts that asked p for
// them, counts the others as unsolicited (dropped), and hands p's
// DONT_HAVEs to the attempts waiting for those blocks.
func (r *receiver) ReceiveMessage(_ context.Context, p peer.ID, msg bsmsg.BitSwapMessage) {
	x := (*Exchange)(r)
	for _, b := range msg.Blocks() {
		as := x.take(p, b.Cid())
		// A server may answer a want-have of a small block with the
		// block (boxo's does, up to 1 KiB): it holds it.
		asked := x.answered(p, b.Cid(), true)
		if len(as) == 0 {
			if !asked {
				x.unsolicited.Add(1)
			}
			continue
		}
		for _, a := range as {
			deliver(a, event{blk: b})
		}
	}
	for _, c := range msg.DontHaves() {
		for _, a := range x.take(p, c) {
			deliver(a, event{dontHave: c})
		}
		x.answered(p, c, false)
	}
	for _, c := range msg.Haves() {
		x.answered(p, c, true)
	}
}

// ReceiveError ignores a stream's read error: the attempt waiting on that
// provider times out or gets its disconnection.
func (r *receiver) ReceiveError(error) {}

// PeerConnected does nothing: attempts dial their provider themselves.
func (r *receiver) PeerConnected(peer.ID) {}

// PeerDisconnected tells p's attempts that p is gone.
func (r *receiver) PeerDisconnected(p peer.ID) {
	x := (*Exchange)(r)
	x.mu.Lock()
	var as []*attempt
	for a := range x.mu.byPeer[p] {
		as = append(as, a)
	}
	x.mu.Unlock()
	for _, a := range as {
		deliver(a, event{gone: true})
	}
}

// ErrDontHave: the provider answered that it does not have a block of the
// blob. A provider fault: the plan backs it off.
var ErrDontHave = errors.New("blobs: provider does not have the blob")

// ErrStalled: the provider sent nothing asked for within the exchange's
// idle timeout. A provider fault: the plan backs it off.
var ErrStalled = errors.New("blobs: provider stalled")

// ErrProviderGone: the provider disconnected during the attempt.
var ErrProviderGone = errors.New("blobs: provider disconnected")

// sendWants asks p for cs (want-block, with "don't have" answers).
func sendWants(ctx context.Context, ms bsnetwork.MessageSender, cs []cid.Cid, seq *int32) error {
	msg := bsmsg.New(false)
	for _, c := range cs {
		*seq--
		msg.AddEntry(c, *seq, pb.Message_Wantlist_Block, true)
	}
	return ms.SendMsg(ctx, msg)
}

// sendCancels withdraws the wants cs from p, best effort.
func sendCancels(ctx context.Context, ms bsnetwork.MessageSender, cs []cid.Cid) {
	if len(cs) == 0 {
		return
	}
	msg := bsmsg.New(false)
	for _, c := range cs {
		msg.Cancel(c)
	}
	_ = ms.SendMsg(ctx, msg)
}

// connect makes sure there is a direct connection to p, dialling the
// addresses the peerstore holds for it (or, through a routed host, the
// ones the DHT has). A provider reached only through a relay is given
// DirectWait to be reached directly, by the hole punch the relayed
// connection starts: blobs never go over a relay (docs/adr/0040), whose
// circuits carry a few hundred KiB at most.
func (x *Exchange) connect(ctx context.Context, p peer.ID) error {
	if x.net.IsConnectedToPeer(ctx, p) {
		return nil
	}
	h := x.net.Host()
	if !relayedOnly(h.Network(), p) {
		if err := x.dialer.Connect(ctx, h.Peerstore().PeerInfo(p)); err != nil {
			return fmt.Errorf("blobs: connect to provider %s: %w", p, err)
		}
	}
	return awaitDirect(ctx, h, p)
}

// DirectWait is how long a fetch waits for a direct connection to a
// provider connected only through a relay: hole punching starts when the
// relayed connection opens and takes a few round trips. A variable so that
// tests can shorten it.
var DirectWait = 15 * time.Second

// awaitDirect returns once p has a direct connection (or none, for the
// dial to say why), at most DirectWait: ErrRelayedOnly if none came.
func awaitDirect(ctx context.Context, h host.Host, p peer.ID) error {
	if !relayedOnly(h.Network(), p) {
		return nil
	}
	sub, err := h.EventBus().Subscribe(new(p2pevent.EvtPeerConnectednessChanged))
	if err != nil {
		return err
	}
	defer sub.Close()
	t := time.NewTimer(DirectWait)
	defer t.Stop()
	for relayedOnly(h.Network(), p) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return fmt.Errorf("blobs: provider %s: %w", p, ErrRelayedOnly)
		case _, ok := <-sub.Out():
			if !ok { // the event bus closed: the host is closing
				return fmt.Errorf("blobs: provider %s: %w", p, ErrRelayedOnly)
			}
		}
	}
	return nil
}

// relayedOnly reports whether every connection to p is limited (relayed),
// and there is one.
func relayedOnly(nw network.Network, p peer.ID) bool {
	conns := nw.ConnsToPeer(p)
	for _, c := range conns {
		if !c.Stat().Limited {
			return false
		}
	}
	return len(conns) > 0
}

// sendTimeout bounds writing one message of wants; cancelTimeout bounds
// withdrawing them at the end of an attempt.
const (
	sendTimeout   = 10 * time.Second
	cancelTimeout = 2 * time.Second
)
