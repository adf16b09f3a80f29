package node

import (
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

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
	b, release, err := proto.ReadRequestFrame(s, start, p2p.MemoryPriority[st.Tier()])
	defer release()
	if err != nil {
		switch {
		case errors.Is(err, proto.ErrFrameTooLarge):
			n.m.BadRequest("frame")
			n.count(st, peers.Invalid, 1)
			proto.Reply(s, &proto.Error{Code: proto.CodeTooLarge, Message: err.Error()})
		case proto.IsTimeout(err):
			n.m.StreamTimeout("wats")
			n.count(st, peers.Timeouts, 1)
			s.Reset()
		default:
			n.m.BadRequest("frame")
			s.Reset()
		}
		return
	}
	req, err := proto.DecodeRequest(b)
	if err != nil {
		var perr *proto.Error
		if !errors.As(err, &perr) {
			perr = &proto.Error{Code: proto.CodeBadRequest, Message: err.Error()}
		}
		n.m.BadRequest(string(perr.Code))
		n.count(st, peers.Invalid, 1)
		proto.Reply(s, perr)
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
		resp, done = n.syncPage(st, req.Sync)
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

var errTooBusy = &proto.Error{Code: proto.CodeInternal, Message: "too busy to serve a sync page: retry later"}

// syncPage serves st's sync request within its bounds (peers.Table.Page:
// at most peers.MaxPagesPerPeer pages at once, of at most its tier's
// budget, from the page pool) with one page of the local log
// (peers.Page.Read); done gives the page's memory back once the response
// is written.
func (n *Node) syncPage(st *peerState, r *proto.SyncRequest) (resp proto.Message, done func()) {
	pg := n.run.Page(st)
	if pg == nil {
		n.m.SyncBusy()
		return errTooBusy, func() {}
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
	addrs := n.host.Addrs()
	listen := make([]string, 0, min(len(addrs), proto.MaxListenAddrs))
	for _, a := range addrs {
		if len(listen) == proto.MaxListenAddrs {
			break
		}
		listen = append(listen, a.String())
	}
	l := n.cfg.Limits
	return &proto.Hello{
		Version:  proto.Version,
		Network:  n.cfg.Network,
		Agent:    n.agent,
		Features: Features,
		Listen:   listen,
		Head:     n.events.Head(),
		// Advertised so that peers pace themselves (ADR 0024).
		Limits: &proto.HelloLimits{
			HelloPerMin: int64(l.HelloPerMin), SyncPerMin: int64(l.SyncPerMin),
			ReplicatePerMin: int64(l.ReplicatePerMin), ReportPerMin: int64(l.ReportPerMin),
		},
	}
}

// dropWrongNetwork disconnects p and refuses it for peers.WrongNetworkBan, after
// the wrong_network response had a moment to reach it.
func (n *Node) dropWrongNetwork(p peer.ID) {
	n.gater.Ban(p, peers.WrongNetworkBan)
	n.go_(func() {
		select {
		case <-time.After(100 * time.Millisecond):
		case <-n.ctx.Done():
		}
		_ = n.host.Network().ClosePeer(p)
	})
}
