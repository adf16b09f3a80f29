package node

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/catchup"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/heads"
	"github.com/wats-network/wats/peers"
	"github.com/wats-network/wats/proto"
)

// newSyncClient returns the node's sync client (catchup.Client), on the
// peers' state: their cursors, locks, pacing and, for a peer without
// standing, the share of new authors' events it brings within (ADR 0041).
func (n *Node) newSyncClient() *catchup.Client {
	return catchup.NewClient(catchup.ClientOptions{
		Log:        n.events,
		Call:       n.call,
		Lock:       n.run.SyncLock,
		Cursor:     n.run.Cursor,
		SaveCursor: n.run.SaveCursor,
		Head:       n.run.Head,
		Pacer:      n.run.Pacer,
		Share: func(p peer.ID) catchup.Share {
			if now, mono := n.clock(); n.run.Get(p) != nil && !n.run.Standing(n.run.Get(p), now, mono) {
				return n.run.NewAuthorShare(p, n.clock, n.linked)
			}
			return nil
		},
		Room:    n.room,
		Now:     n.now,
		Stored:  n.syncStored,
		Refused: n.m.SyncRefused,
		Synced: func(p peer.ID, st catchup.Progress) {
			n.plog.Info(p, "synced", "synced", "peer", p, "stored", st.Stored, "dropped", st.Dropped, "cursor", st.Cursor)
		},
		Spawn:   n.go_,
		Logger:  n.log,
		Serves:  n.run.Serves,
		Context: n.ctx,
	})
}

// syncLoop syncs from every peer that completed hello, every sync.interval.
func (n *Node) syncLoop() {
	n.every(n.cfg.Sync.Interval.Duration, func() {
		for _, p := range n.run.Helloed(-1) {
			n.sync.Trigger(n.ctx, p)
		}
	})
}

// syncStored carries out what a sync from p stored (ADR 0030): events this
// node lacked are value, events that do not verify are invalid messages;
// events from the future are not; events over the log's quota are counted.
func (n *Node) syncStored(p peer.ID, added []*eventlog.Event, rejected []error, overQuota int) {
	n.m.EventsStored("sync", len(added))
	n.m.EventsDropped("sync", len(rejected))
	n.m.SyncOverQuota(overQuota)
	n.gave(p, uint64(len(added)), 0)
	if ps, bad := n.run.Get(p), catchup.Invalid(rejected); ps != nil && bad > 0 {
		n.count(ps, peers.Invalid, bad)
	}
	if n.fetch != nil {
		n.fetch.Queue(added, p, "sync")
	}
}

// SyncProgress is how far a sync from one peer has come (SyncPeer).
type SyncProgress = catchup.Progress

// SyncPeer syncs from p now (waiting for a running sync from p to end
// first) and reports progress after every write of pages.
func (n *Node) SyncPeer(ctx context.Context, p peer.ID, progress func(SyncProgress)) (SyncProgress, error) {
	if !n.linked(p) {
		return SyncProgress{Peer: p}, fmt.Errorf("node: not connected to %s; connect first (wats peers connect ADDR)", p)
	}
	if !n.helloed(p) {
		if err := n.greet(ctx, p); err != nil {
			return SyncProgress{Peer: p}, err
		}
	}
	return n.sync.Sync(ctx, p, catchup.SyncRun{Progress: progress})
}

// SyncAll syncs from every peer that completed hello now (catchup.Client.SyncAll, ADR 0052).
func (n *Node) SyncAll(ctx context.Context, progress func([]SyncProgress)) ([]SyncProgress, error) {
	return n.sync.SyncAll(ctx, n.run.Helloed(-1), progress)
}

// Heads announcements (docs/adr/0041): this node announces its head to
// every peer that completed hello and advertised proto.FeatureHeads, and
// pulls from each peer, a page at a time within the pull budget, what its
// announcements name and this node lacks. No event then depends on the
// periodic sync: one that any queue dropped on the way arrives in
// seconds.

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
		// stopHeads sets stopped, then cancels what it finds: stored
		// first, then stopped read, one of the two sees the other.
		if st.Link.announceStop.Store(&cancel); st.Link.stopped.Load() {
			return
		}
		open := func(ctx context.Context) (heads.Stream, func(error), error) {
			s, done, err := heads.Open(ctx, n.host, st.ID(), func() { n.m.HeadsAnnounced("out") })
			if err == nil {
				n.m.HeadsStream()
			}
			return s, done, err
		}
		heads.Announcer(ctx, n.events, open, func(err error, wait time.Duration) {
			n.log.Debug("heads: announcer stopped; will retry", "peer", st.ID(), "err", err, "in", wait)
		})
	})
}

// handleHeads reads a peer's Heads stream (proto.HeadsID) into the
// tracker until it ends (heads.Serve): one stream per peer (a new one
// replaces the last). A bad announcement counts as an invalid message in
// the peer's history (ADR 0030).
func (n *Node) handleHeads(s network.Stream) {
	p := s.Conn().RemotePeer()
	st := n.run.Get(p)
	if st == nil {
		s.Reset()
		return
	}
	if old := st.Link.headsIn.Swap(&s); old != nil {
		(*old).Reset()
	}
	defer st.Link.headsIn.CompareAndSwap(&s, nil)
	if err := heads.Serve(s, n.heads, func() { n.m.HeadsAnnounced("in") }); heads.Bad(err) {
		n.m.BadRequest("heads")
		n.count(st, peers.Invalid, 1)
		n.plog.Info(p, "bad heads", "peer sent a bad heads announcement; stream reset", "peer", p, "err", err)
	}
}

// stopHeads ends what st's peer had of heads at its disconnection: the
// announcer (its context cancelled) and the tracker's state.
func (n *Node) stopHeads(st *peerState) {
	st.Link.stopped.Store(true)
	if cancel := st.Link.announceStop.Load(); cancel != nil {
		(*cancel)()
	}
	if n.heads != nil {
		n.heads.Forget(st.ID())
	}
}
