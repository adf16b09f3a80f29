package node

import (
	"context"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/catchup"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/peers"
	"github.com/wats-network/wats/proto"
)

// newSyncClient returns the node's sync client (catchup.Client), on the
// peers' state: their cursors, locks, pacing and, for a peer without
// standing, the share of new authors' events it brings within (ADR 0041).
func (n *Node) newSyncClient() *catchup.Client {
	return catchup.NewClient(catchup.ClientOptions{
		Log: n.events,
		Call: func(ctx context.Context, p peer.ID, req *proto.SyncRequest) (*proto.Response, error) {
			return n.call(ctx, p, req)
		},
		Lock:       n.run.SyncLock,
		Cursor:     n.run.Cursor,
		SaveCursor: n.run.SaveCursor,
		Head:       n.run.Head,
		Pacer:      n.run.Pacer,
		Share: func(p peer.ID) catchup.Share {
			if ps := n.run.Get(p); ps != nil && !n.standing(ps) {
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
		Spawn:  n.go_,
		Logger: n.log,
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
// events from the future are not.
func (n *Node) syncStored(p peer.ID, added []*eventlog.Event, rejected []error) {
	n.m.EventsStored("sync", len(added))
	n.m.EventsDropped("sync", len(rejected))
	n.gave(p, uint64(len(added)), 0)
	if bad := catchup.Invalid(rejected); bad > 0 {
		if ps := n.run.Get(p); ps != nil {
			n.count(ps, peers.Invalid, bad)
		}
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
