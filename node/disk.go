package node

import (
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
