package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	msmux "github.com/multiformats/go-multistream"

	"github.com/wats-network/wats/catchup"
	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/heads"
	"github.com/wats-network/wats/metrics"
	"github.com/wats-network/wats/peers"
	"github.com/wats-network/wats/proto"
)

// Heads announcements (docs/adr/0041): this node announces its head to
// every peer that completed hello and advertised proto.FeatureHeads, and
// pulls from each peer, a page at a time within the pull budget, what its
// announcements name and this node lacks. No event then depends on the
// periodic sync: one that any queue dropped on the way arrives in
// seconds.

// newHeadsTracker returns the tracker of the peers' announcements, wired
// to this node.
func (n *Node) newHeadsTracker() (*heads.Tracker, error) {
	return heads.NewTracker(heads.Options{
		Cursor:  n.cursorOf,
		Advance: n.advanceCursor,
		Has:     n.events.HasShort,
		Allow:   n.allowPull,
		Pull:    n.pull,
		Pulled:  func(_ peer.ID, outcome string) { n.m.HeadsPulled(outcome) },
	})
}

// standing reports whether st's peer has standing for what it brings
// (peers.Table.Standing, ADR 0041).
func (n *Node) standing(st *peerState) bool {
	now, mono := n.clock()
	return n.run.Standing(st, now, mono)
}

// allowPull takes a token of p's pull budget (heads.Options.Allow;
// peers.Table.AllowPull).
func (n *Node) allowPull(p peer.ID) (bool, time.Duration) {
	now, mono := n.clock()
	return n.run.AllowPull(p, now, mono)
}

// pull syncs one page of p's log after the cursor (heads.Options.Pull).
func (n *Node) pull(ctx context.Context, p peer.ID) (busy bool, err error) {
	_, err = n.syncFrom(ctx, p, syncRun{skipIfBusy: true, maxPages: 1})
	switch {
	case errors.Is(err, errSyncRunning):
		return true, nil
	case errors.Is(err, catchup.ErrRunBound):
		return false, nil // one page, and the peer has more: the next check pulls it
	}
	return false, err
}

// advanceCursor moves the sync cursor into p's log forward to c
// (heads.Options.Advance): every event up to c is held here. It does so
// under the peer's sync lock, so that it never races a run's own cursor;
// while a run holds it, the run moves the cursor and this does nothing.
func (n *Node) advanceCursor(p peer.ID, c core.Cursor) {
	mu := n.syncLock(p)
	if !mu.TryLock() {
		return
	}
	defer mu.Unlock()
	if c > n.cursorOf(p) {
		if err := n.saveCursor(p, c, false); err != nil {
			n.log.Debug("heads: cursor not saved", "peer", p, "err", err)
		}
	}
}

// announceHeads starts this node's announcer to st's peer
// (heads.Announcer), unless one runs or the peer does not read
// announcements, until the peer disconnects.
func (n *Node) announceHeads(st *peerState, h *proto.Hello) {
	if !slices.Contains(h.Features, proto.FeatureHeads) || !st.Link.announcing.CompareAndSwap(false, true) {
		return
	}
	n.go_(func() {
		defer st.Link.announcing.Store(false)
		ctx, cancel := context.WithCancel(n.ctx)
		defer cancel()
		go func() {
			select {
			case <-st.Link.done():
				cancel()
			case <-ctx.Done():
			}
		}()
		open := func(ctx context.Context) (heads.Stream, func(error), error) { return n.openHeads(ctx, st.ID()) }
		heads.Announcer(ctx, n.events, open, func(err error, wait time.Duration) {
			n.log.Debug("heads: announcer stopped; will retry", "peer", st.ID(), "err", err, "in", wait)
		})
	})
}

// openHeads opens a Heads stream to p for heads.Announcer; done resets it
// after a failure.
func (n *Node) openHeads(ctx context.Context, p peer.ID) (s heads.Stream, done func(error), err error) {
	sctx, cancel := context.WithTimeout(ctx, proto.ResponseTimeout)
	ns, err := n.host.NewStream(network.WithNoDial(sctx, "heads"), p, proto.HeadsID)
	cancel()
	if errors.As(err, new(msmux.ErrNotSupported[protocol.ID])) {
		return nil, nil, fmt.Errorf("%w: %w", heads.ErrNotSpoken, err)
	}
	if err != nil {
		return nil, nil, err
	}
	if ns.Protocol() != proto.HeadsID {
		ns.Reset()
		return nil, nil, heads.ErrNotSpoken
	}
	if err := ns.Scope().SetService(proto.ServiceName); err != nil {
		ns.Reset()
		return nil, nil, err
	}
	n.m.HeadsStream()
	return announceCounter{ns, n.m}, func(err error) {
		if err != nil {
			ns.Reset()
		}
	}, nil
}

// announceCounter counts each announcement written (heads.Stream).
type announceCounter struct {
	network.Stream
	m *metrics.Metrics
}

func (a announceCounter) Write(b []byte) (int, error) {
	a.m.HeadsAnnounced("out")
	return a.Stream.Write(b)
}

// handleHeads reads a peer's Heads stream (proto.HeadsID) into the
// tracker until it ends: one stream per peer (a new one replaces the
// last), read at most one announcement every heads.MinReadInterval. A bad
// announcement resets the stream and counts as an invalid message in the
// peer's history (ADR 0030).
func (n *Node) handleHeads(s network.Stream) {
	p := s.Conn().RemotePeer()
	st := n.run.Get(p)
	if st == nil {
		s.Reset()
		return
	}
	if err := s.Scope().SetService(proto.ServiceName); err != nil {
		s.Reset()
		return
	}
	if old := st.Link.headsIn.Swap(&s); old != nil {
		(*old).Reset()
	}
	defer st.Link.headsIn.CompareAndSwap(&s, nil)
	err := heads.Read(s, func(h *proto.Heads) {
		n.m.HeadsAnnounced("in")
		n.heads.Announced(p, h)
	})
	var perr *proto.Error
	if errors.As(err, &perr) || errors.Is(err, proto.ErrFrameTooLarge) {
		n.m.BadRequest("heads")
		n.count(st, peers.Invalid, 1)
		n.plog.Info(p, "bad heads", "peer sent a bad heads announcement; stream reset", "peer", p, "err", err)
	}
	s.Reset()
}

// stopHeads ends what st's peer had of heads at its disconnection: the
// announcer (through its link's done) and the tracker's state.
func (n *Node) stopHeads(st *peerState) {
	st.Link.stop()
	if n.heads != nil {
		n.heads.Forget(st.ID())
	}
}
