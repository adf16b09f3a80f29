package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"

	"github.com/wats-network/wats/proto"
)

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
	var perr *proto.Error
	var wrong string // what says that p is on another network
	switch {
	case errors.As(err, &perr) && perr.Code == proto.CodeWrongNetwork:
		wrong = "answered: " + perr.Message
	case err != nil:
		return fmt.Errorf("node: hello to %s: %w", p, err)
	case resp.Hello == nil:
		return fmt.Errorf("node: hello to %s: answered with %q", p, resp.Type)
	case resp.Hello.Network != n.cfg.Network:
		wrong = fmt.Sprintf("is on network %q", resp.Hello.Network)
	}
	if wrong != "" {
		n.m.WrongNetwork()
		n.dropWrongNetwork(p)
		return fmt.Errorf("%w: %s %s (this node is on %q; to join that network, set network in config.toml)",
			ErrWrongNetwork, p, wrong, n.cfg.Network)
	}
	n.recordHello(p, resp.Hello)
	n.peerOf(p).SetHeardUs(true)
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
