package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"

	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/p2p"
	"github.com/wats-network/wats/peers"
	"github.com/wats-network/wats/proto"
)

// handleStream serves one /wats/1 stream: one request, one response. Every
// request type goes through this shape, so the admission point below covers
// them all: attach the stream to the "wats" service scope, hold it to the
// peer's cap of /wats streams (by tier), read the request's length prefix
// within proto.PrefixTimeout and the whole frame within proto.ReadTimeout
// (a stream held past either is reset and counted in the peer's history),
// decode, classify (the cheap existence check), admit, serve, write one
// response and close; a protocol error resets the stream.
func (n *Node) handleStream(s network.Stream) {
	start := time.Now() // stream deadlines are on the real clock
	p := s.Conn().RemotePeer()
	if err := s.Scope().SetService(proto.ServiceName); err != nil {
		n.log.Debug("refused /wats stream: resource limit", "peer", p, "err", err)
		s.Reset()
		return
	}
	st := n.peerOf(p)
	if !n.hold(st, peers.WatsStream, p2p.WatsStreamCap, "wats") {
		s.Reset()
		return
	}
	defer st.Release(peers.WatsStream)
	req, release, answer, err := proto.ReadRequest(s, start, p2p.MemoryPriority[st.Tier()])
	defer release()
	switch {
	case proto.IsTimeout(err):
		n.m.StreamTimeout("wats")
		n.count(st, peers.Timeouts, 1)
		s.Reset()
		return
	case answer != nil: // the peer's fault: an invalid message
		n.m.BadRequest(string(answer.Code))
		n.count(st, peers.Invalid, 1)
		proto.Reply(s, answer)
		return
	case err != nil:
		n.m.BadRequest("frame")
		s.Reset()
		return
	}
	n.m.Request(req.Type)
	inFlight := int(n.inFlight.Add(1))
	defer n.inFlight.Add(-1)

	// Admission: every decoded request passes Node.admit before any
	// expensive work (ADR 0014), classified first by what it asks for
	// (ADR 0030). A non-nil verdict is sent instead of serving.
	if verdict := n.admit(st, req, peers.Classify(req, n.holdings), inFlight); verdict != nil {
		proto.Reply(s, verdict)
		return
	}

	var resp proto.Message
	switch req.Type {
	case proto.TypeHello:
		resp = n.serveHello(p, req.Hello)
	case proto.TypeSync:
		var done func()
		resp, done = n.syncPage(st, req.Sync, s.Reset)
		defer done()
	case proto.TypeCrashReport:
		resp = n.serveCrashReport(n.ctx, p, req.CrashReport)
	case proto.TypeReplicate:
		if resp = errNotStarted; n.fetch != nil {
			resp = n.fetch.ServeReplicate(n.ctx, p, req.Replicate)
		}
	default:
		resp = &proto.Error{Code: proto.CodeUnsupported, Message: fmt.Sprintf("request type %q is not supported by this node", req.Type)}
	}
	if err := proto.Reply(s, resp); proto.IsTimeout(err) {
		// The peer did not read its answer (a sync page's memory stays
		// reserved while it does not): a stream held, as one that sends
		// no request (ADR 0030).
		n.m.StreamTimeout("wats_response")
		n.count(st, peers.Timeouts, 1)
	}
	if e, ok := resp.(*proto.Error); ok && e.Code == proto.CodeWrongNetwork {
		n.dropWrongNetwork(p)
	}
}

// serveHello answers a peer's hello with this node's own, after checking
// the network; a peer of another network gets wrong_network and is
// disconnected (docs/design.md §3).
func (n *Node) serveHello(p peer.ID, h *proto.Hello) proto.Message {
	if h.Network != n.cfg.Network {
		n.m.WrongNetwork()
		n.plog.Info(p, "network", "peer is on another network", "peer", p, "network", h.Network)
		return &proto.Error{Code: proto.CodeWrongNetwork,
			Message: fmt.Sprintf("the responder is on network %q; the hello named %q", n.cfg.Network, h.Network)}
	}
	n.recordHello(p, h)
	return n.ownHello()
}

var errNotStarted = &proto.Error{Code: proto.CodeInternal, Message: "blob exchange not started"}

// syncPage serves st's sync request within its bounds (peers.Table.Page,
// which may reset the stream to take back a stranger's unread page) with
// one page of the local log (peers.Page.Read); done gives the page's
// memory back once the response is written.
func (n *Node) syncPage(st *peerState, r *proto.SyncRequest, reset func() error) (resp proto.Message, done func()) {
	pg, busy := n.run.Page(st, n.mono(n.now()), reset, n.tierChanged)
	if pg == nil {
		n.m.SyncBusy()
		return busy, func() {}
	}
	page, done, err := pg.Read(n.events, r)
	if err != nil {
		n.log.Error("read event log page", "after", r.After, "err", err)
		return &proto.Error{Code: proto.CodeInternal, Message: "could not read the event log"}, done
	}
	n.m.SyncServed(len(page.Events))
	return page, done
}

// ownHello is this node's hello: its network, agent, features, listen
// addresses (at most proto.MaxListenAddrs) and head.
func (n *Node) ownHello() *proto.Hello {
	return &proto.Hello{
		Version:  proto.Version,
		Network:  n.cfg.Network,
		Agent:    n.o.Agent,
		Features: Features,
		Listen:   proto.Strings(n.host.Addrs(), proto.MaxListenAddrs),
		Head:     n.events.Head(),
		Limits:   peers.HelloLimits(n.cfg.Limits),
	}
}

// dropWrongNetwork disconnects p and refuses it for peers.WrongNetworkBan, after
// the wrong_network response had a moment to reach it.
func (n *Node) dropWrongNetwork(p peer.ID) { n.ban(p, peers.WrongNetworkBan, 100*time.Millisecond) }

// ban refuses p for d (the gater) and closes its connections after wait,
// a moment for a last answer to reach it.
func (n *Node) ban(p peer.ID, d, wait time.Duration) {
	n.gater.Ban(p, d)
	n.go_(func() {
		select {
		case <-time.After(wait):
		case <-n.ctx.Done():
		}
		_ = n.host.Network().ClosePeer(p)
	})
}

// overCap resets a stream of st's over one of its caps (kind names it, for
// the metric) and, past peers.MaxCapRefusals in a second, disconnects and
// bans the peer.
func (n *Node) overCap(st *peerState, kind string) {
	n.m.StreamRefused(kind)
	flood, t, changed := st.OverCap(n.mono(n.now()))
	if changed {
		n.tierChanged(st, t)
	}
	if !flood {
		return
	}
	n.m.PeerBanned("stream flood")
	n.plog.Info(st.ID(), "stream flood", "peer disconnected: it kept opening streams past its caps", "peer", st.ID(),
		"ban", peers.StreamFloodBan)
	n.ban(st.ID(), peers.StreamFloodBan, 0)
}

// hold takes a stream of kind k for st within its tier's cap of caps
// (peers.Peer.Hold); over it, the stream is counted (overCap, kind names
// it) and false returned: the caller resets it.
func (n *Node) hold(st *peerState, k peers.StreamKind, caps [limits.NumTiers]int32, kind string) bool {
	if st.Hold(k, caps[st.Tier()]) {
		return true
	}
	n.overCap(st, kind)
	return false
}

// acceptStream is the host's handler of every inbound stream, in place of
// libp2p's basic host's (which it does the same as, but for the cap and
// the shorter deadline): hold the peer to its cap of streams not yet
// negotiated, negotiate the protocol (p2p.Negotiate), then hand the stream
// to the protocol's handler, metered by the bandwidth caps.
func (n *Node) acceptStream(s network.Stream) {
	s = n.bw.Wrap(s) // counted and capped (docs/adr/0048)
	st := n.peerOf(s.Conn().RemotePeer())
	if !n.hold(st, peers.Unnegotiated, p2p.UnnegotiatedCap, "unnegotiated") {
		_ = s.ResetWithError(network.StreamResourceLimitExceeded)
		return
	}
	handle, err := p2p.Negotiate(n.host, s)
	st.Release(peers.Unnegotiated)
	switch {
	case proto.IsTimeout(err):
		n.m.StreamTimeout("negotiation")
		n.count(st, peers.Timeouts, 1)
	case errors.Is(err, p2p.ErrProtocolScope):
		n.m.StreamRefused("protocol")
	case err == nil:
		handle()
	}
}

// ErrWrongNetwork is returned by Connect and greet when the peer is on
// another network; the peer is then disconnected.
var ErrWrongNetwork = errors.New("node: peer is on another network")

// greet sends this node's hello to p and records the peer's answer. One
// hello to a peer is in flight at a time: a second caller waits for its
// outcome (singleflight), within the first one's bounds. A peer of another
// network is disconnected.
func (n *Node) greet(ctx context.Context, p peer.ID) error {
	l := &n.peerOf(p).Link // the state greeted, even if p leaves meanwhile
	_, err, _ := l.hello.Do("", func() (any, error) { return nil, n.sendHello(ctx, p) })
	return err
}

// sendHello sends this node's hello to p and records the answer.
func (n *Node) sendHello(ctx context.Context, p peer.ID) error {
	resp, err := n.call(ctx, p, n.ownHello())
	wrong, err := proto.HelloAnswer(resp, err, n.cfg.Network) // what says that p is on another network
	if err != nil {
		return fmt.Errorf("node: hello to %s: %w", p, err)
	}
	if wrong != "" {
		n.m.WrongNetwork()
		n.dropWrongNetwork(p)
		return fmt.Errorf("%w: %s %s (this node is on %q; to join that network, set network in config.toml)",
			ErrWrongNetwork, p, wrong, n.cfg.Network)
	}
	n.recordHello(p, resp.Hello)
	n.peerOf(p).SetHeardUs(true)
	n.routing.Load().Greeted(p) // its DHT looks at p again, now greeted (docs/adr/0059)
	return nil
}

// recordHello stores a peer's completed hello (peers.Table.SetHello): in
// its state, in the peerstore (its listen addresses, for redials) and, if
// it has a record, in the peer cache. If the peer's head is past the
// cursor synced so far, a sync starts.
func (n *Node) recordHello(p peer.ID, h *proto.Hello) {
	now, mono := n.clock()
	st, first, err := n.run.SetHello(p, h, func() *peerState { return n.peerOf(p) }, n.linked, now, mono)
	if err != nil {
		n.log.Warn("peer cache write failed", "peer", p, "err", err)
	}
	if first {
		n.plog.Info(p, "hello", "peer completed hello", "peer", p, "agent", proto.TruncateText(h.Agent), "head", h.Head)
	}
	n.host.Peerstore().AddAddrs(p, h.ListenAddrs(), peerstore.RecentlyConnectedAddrTTL)
	if head := h.Head; head > n.run.Cursor(p) {
		n.sync.Trigger(n.ctx, p)
	}
	n.announceHeads(st, h)
}
