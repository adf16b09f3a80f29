package node

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/catchup"
	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/peers"
	"github.com/wats-network/wats/proto"
)

// errSyncRunning is syncFrom's answer, with skipIfBusy, when a sync from
// the peer is running already.
var errSyncRunning = errors.New("node: a sync from the peer is running")

// triggerSync starts a background sync from p unless one is running. Runs
// that end at the page bound with progress are continued at once.
func (n *Node) triggerSync(p peer.ID) {
	n.go_(func() {
		for {
			st, err := n.syncFrom(n.ctx, p, syncRun{skipIfBusy: true})
			if errors.Is(err, catchup.ErrRunBound) && st.Stored > 0 && st.Dropped <= catchup.MaxInvalidPerRun {
				continue
			}
			if err != nil && !errors.Is(err, errSyncRunning) && n.ctx.Err() == nil {
				n.log.Debug("sync failed", "peer", p, "err", err)
			}
			return
		}
	})
}

// syncLoop syncs from every peer that completed hello, every sync.interval.
func (n *Node) syncLoop() {
	n.every(n.cfg.Sync.Interval.Duration, func() {
		for p := range n.helloPeers() {
			n.triggerSync(p)
		}
	})
}

// syncRun shapes one run of syncFrom.
type syncRun struct {
	// skipIfBusy: return errSyncRunning at once if a sync from the peer
	// is running, rather than wait for it to end.
	skipIfBusy bool
	// maxPages bounds the pages of the run (0: Node.runPages); past it
	// the run ends with catchup.ErrRunBound.
	maxPages int
	// progress, if not nil, is called after every write.
	progress func(SyncProgress)
}

// syncFrom pages through p's log from the persisted cursor until the peer
// says there is no more, storing the valid events and dropping (and
// counting) the invalid ones, within the bounds of run. The cursor is
// saved after every write (a page, or the pages that waited for it,
// storePages) and synced to disk at the end, so a restarted node resumes
// where it stopped.
func (n *Node) syncFrom(ctx context.Context, p peer.ID, run syncRun) (SyncProgress, error) {
	mu := n.syncLock(p)
	if run.skipIfBusy {
		if !mu.TryLock() {
			return SyncProgress{Peer: p}, errSyncRunning
		}
	} else {
		mu.Lock()
	}
	defer mu.Unlock()
	maxPages := run.maxPages
	if maxPages <= 0 {
		maxPages = n.runPages
	}
	progress := run.progress
	// A peer without standing brings the events of new authors within the
	// share they all have (ADR 0041): its pages wait for the share, and
	// each one is charged what it brought as it comes.
	var share catchup.Share
	if ps := n.run.Get(p); ps != nil && !n.standing(ps) {
		share = n.run.NewAuthorShare(p, n.clock, n.linked)
	}

	start := n.cursorOf(p)
	st := SyncProgress{Peer: p, Cursor: start}
	// On a full disk no page could be stored: none is asked for, and the
	// cursor stays where it is until the disk has room (ADR 0044).
	if err := n.room(0); err != nil {
		return st, fmt.Errorf("node: sync from %s: %w", p, err)
	}
	if h, ok := n.helloPeers()[p]; ok {
		st.PeerHead = h.Head
	}
	opts := catchup.Options{
		Peer: p,
		Call: func(ctx context.Context, req *proto.SyncRequest) (*proto.Response, error) {
			return n.call(ctx, p, req)
		},
		Pacer: n.run.Pacer(p), Now: n.now, Known: n.has, MaxPages: maxPages,
		Store: func(group []catchup.Page) error {
			if err := n.storePages(p, group, &st); err != nil {
				return err
			}
			// A group that takes the run past its invalid events' bound
			// ends it (catchup.Run): no progress is told of it.
			if progress != nil && st.Dropped <= catchup.MaxInvalidPerRun {
				progress(st)
			}
			return nil
		},
		Refused: n.m.SyncRefused,
	}
	opts.Share = share
	err := catchup.Run(ctx, start, opts)
	// Make the cursor durable (docs/design.md §10) whatever happened.
	if derr := n.saveCursor(p, st.Cursor, true); derr != nil && err == nil {
		err = derr
	}
	if err != nil {
		return st, err
	}
	st.Done = true
	if st.Cursor > st.PeerHead {
		st.PeerHead = st.Cursor
	}
	if st.Stored > 0 || st.Dropped > 0 {
		n.plog.Info(p, "synced", "synced", "peer", p, "stored", st.Stored, "dropped", st.Dropped, "cursor", st.Cursor)
	}
	return st, nil
}

// syncLock returns the mutex that serializes syncs from p: the one of its
// run state while it is connected (forgotten with it at disconnect, so a
// flood of identities leaves nothing behind), else a fresh one.
func (n *Node) syncLock(p peer.ID) *sync.Mutex {
	if st := n.run.Get(p); st != nil {
		return &st.Link.syncMu
	}
	return new(sync.Mutex)
}

// storePages appends the valid events of group, verified pages in the
// order they came, in one durable batch, counts the rest as dropped, and
// advances the cursor to the last page's.
func (n *Node) storePages(p peer.ID, group []catchup.Page, st *SyncProgress) error {
	ok, raws := group[0].OK, group[0].Raws
	if len(group) > 1 {
		ok, raws = nil, nil
		for _, vp := range group {
			ok = append(ok, vp.OK...)
			raws = append(raws, vp.Raws...)
		}
	}
	added, err := n.events.AppendEncoded(ok, raws)
	if err != nil {
		return fmt.Errorf("node: store synced events: %w", err)
	}
	var rejected []error
	for _, vp := range group {
		st.Received += uint64(len(vp.Events))
		rejected = append(rejected, vp.Rejected...)
	}
	next := group[len(group)-1].Next
	st.Stored += uint64(len(added))
	st.Dropped += uint64(len(rejected))
	st.Cursor = next
	if next > st.PeerHead {
		st.PeerHead = next
	}
	n.m.EventsStored("sync", len(added))
	n.m.EventsDropped("sync", len(rejected))
	// What the peer gave (ADR 0030): events this node lacked are value,
	// events that do not verify are invalid messages; events from the
	// future are not (the peer's clock, or the author's, may be right).
	n.gave(p, uint64(len(added)), 0)
	if bad := invalidEvents(rejected); bad > 0 {
		if ps := n.run.Get(p); ps != nil {
			n.count(ps, peers.Invalid, bad)
		}
	}
	if n.fetch != nil {
		n.fetch.Queue(added, p, "sync")
	}
	for _, r := range rejected {
		n.log.Debug("dropped an invalid synced event", "peer", p, "err", r)
	}
	// Not synced on its own: the next durable Append or the final update
	// carries it to disk (pebble syncs its WAL in order).
	return n.saveCursor(p, next, false)
}

// invalidEvents counts the rejections that are abuse signals: all but
// eventlog.ErrFuture.
func invalidEvents(rejected []error) uint64 {
	var k uint64
	for _, err := range rejected {
		if !errors.Is(err, eventlog.ErrFuture) {
			k++
		}
	}
	return k
}

// SyncProgress is how far a sync from one peer has come, reported after
// every page and at its end (SyncPeer).
type SyncProgress struct {
	// Peer is the peer synced from.
	Peer peer.ID
	// Received counts the events received from the peer; Stored those of
	// them that were new and valid; Dropped those that were invalid.
	Received, Stored, Dropped uint64
	// Cursor is how far the peer's log has been synced: the next sync asks
	// for the events after it.
	Cursor core.Cursor
	// PeerHead is the peer's head as last known; Cursor reaches it when the
	// sync is done (the peer may have grown since).
	PeerHead core.Cursor
	// Done is set at the end of a sync that ended without an error.
	Done bool
}

// SyncPeer syncs from p now (waiting for a running sync from p to end
// first) and reports progress after every write of pages.
func (n *Node) SyncPeer(ctx context.Context, p peer.ID, progress func(SyncProgress)) (SyncProgress, error) {
	if !n.linked(p) {
		return SyncProgress{Peer: p}, fmt.Errorf("node: not connected to %s; connect first (wats peers connect ADDR)", p)
	}
	if _, ok := n.helloPeers()[p]; !ok {
		if err := n.greet(ctx, p); err != nil {
			return SyncProgress{Peer: p}, err
		}
	}
	return n.syncFrom(ctx, p, syncRun{progress: progress})
}
