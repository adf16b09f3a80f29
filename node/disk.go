package node

import (
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
	if n.db == nil {
		return nil
	}
	return n.db.Room(bytes)
}

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
// nil without a guard (store.DB.DiskStatus).
func (n *Node) diskStatus() *api.DiskStatus {
	if n.db == nil {
		return nil
	}
	return n.db.DiskStatus()
}
