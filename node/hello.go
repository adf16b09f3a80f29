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

// greet sends this node's hello to p and records the peer's answer. It runs
// once per new connection (a second caller waits for the hello in flight);
// a peer of another network is disconnected.
func (n *Node) greet(ctx context.Context, p peer.ID) error {
	l := &n.peerOf(p).Link // the state greeted, even if p leaves meanwhile
	g, mine := l.greet()
	if !mine {
		// A hello to p is in flight: wait for its outcome.
		select {
		case <-g.done:
			return g.err
		case <-ctx.Done():
			return fmt.Errorf("node: waiting for hello with %s: %w", p, ctx.Err())
		}
	}
	err := n.sendHello(ctx, p)
	l.endGreeting(g, err)
	return err
}

// greeting is a hello in flight; err is valid once done is closed.
type greeting struct {
	done chan struct{}
	err  error
}

// greet returns the hello to the peer in flight, or, when none is, starts
// one: g is then new and mine is true, and the caller ends it with
// endGreeting.
func (l *link) greet() (g *greeting, mine bool) {
	l.greetMu.Lock()
	defer l.greetMu.Unlock()
	if g := l.greeting; g != nil {
		return g, false
	}
	l.greeting = &greeting{done: make(chan struct{})}
	return l.greeting, true
}

// endGreeting ends the hello in flight g with its outcome err.
func (l *link) endGreeting(g *greeting, err error) {
	l.greetMu.Lock()
	l.greeting = nil
	l.greetMu.Unlock()
	g.err = err
	close(g.done)
}

// sendHello sends this node's hello to p and records the answer.
func (n *Node) sendHello(ctx context.Context, p peer.ID) error {
	resp, err := n.call(ctx, p, n.ownHello())
	var perr *proto.Error
	switch {
	case errors.As(err, &perr) && perr.Code == proto.CodeWrongNetwork:
		n.m.WrongNetwork()
		n.dropWrongNetwork(p)
		return fmt.Errorf("%w: %s answered: %s (this node is on %q; to join that network, set network in config.toml)",
			ErrWrongNetwork, p, perr.Message, n.cfg.Network)
	case err != nil:
		return fmt.Errorf("node: hello to %s: %w", p, err)
	case resp.Hello == nil:
		return fmt.Errorf("node: hello to %s: answered with %q", p, resp.Type)
	case resp.Hello.Network != n.cfg.Network:
		n.m.WrongNetwork()
		n.dropWrongNetwork(p)
		return fmt.Errorf("%w: %s is on network %q, this node on %q (to join that network, set network in config.toml)",
			ErrWrongNetwork, p, resp.Hello.Network, n.cfg.Network)
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
	n.host.Peerstore().AddAddrs(p, parseAddrs(h.Listen), peerstore.RecentlyConnectedAddrTTL)
	if head := h.Head; head > n.run.Cursor(p) {
		n.sync.Trigger(n.ctx, p)
	}
	n.announceHeads(st, h)
}
