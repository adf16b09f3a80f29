package node

import (
	"time"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/internal/diskspace"
)

// ErrDiskFull matches the error of a write refused because the repo's
// disk is at the reserve the node keeps free (ADR 0044): a
// *diskspace.FullError, whose text names the repo, the free space and
// what to free. The daemon answers it with 507 Insufficient Storage.
var ErrDiskFull = diskspace.ErrFull

// room is what the node's stores ask before they write n bytes: nil, or
// a *diskspace.FullError while the repo's disk is at its reserve (ADR
// 0044). An in-memory node always has room.
func (n *Node) room(bytes int) error {
	if n.disk == nil {
		return nil
	}
	return n.disk.Room(bytes)
}

// memtableBytes is what the database will write on its own when it
// flushes its memtables: their capacity (diskspace.Options.Pending), as
// watchMemtables last read it. It reads no metrics itself: the guard asks
// it from inside pebble's own writes (a WAL's preallocation), where a
// call back into pebble could wait on a lock the caller holds.
func (n *Node) memtableBytes() uint64 { return n.memtables.Load() }

// watchMemtables reads the memtables' capacity every memtablesEvery, for
// memtableBytes.
func (n *Node) watchMemtables() {
	read := func() {
		if db := n.guarded.Load(); db != nil {
			n.memtables.Store(db.Metrics().MemTable.Size)
		}
	}
	read()
	n.every(memtablesEvery, read)
}

// memtablesEvery is how often watchMemtables reads the memtables'
// capacity; pebble grows it at each rotation, from 256 KiB to the
// memtable's size.
const memtablesEvery = time.Second

// diskChanged logs the guard's changes of state, once each.
func (n *Node) diskChanged(full bool, err error) {
	if full {
		n.log.Error("the repo's disk is full: events, blobs and records are refused until space is freed; "+
			"reads and peers are served meanwhile", "err", err)
		return
	}
	n.log.Info("the repo's disk has room again: writes are accepted")
}

// diskStatus is the guard's state for status, read from the disk now;
// nil without a guard.
func (n *Node) diskStatus() *api.DiskStatus {
	if n.disk == nil {
		return nil
	}
	st := n.disk.Look()
	return &api.DiskStatus{
		FreeBytes: st.Free, ReserveBytes: st.Reserve + st.Pending, BallastBytes: st.Ballast,
		Ballast: st.HasBallast, Full: st.Full,
	}
}
