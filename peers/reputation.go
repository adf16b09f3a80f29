package peers

import (
	"time"

	"github.com/wats-network/wats/core"
)

// Reputed is ADR 0014's established reputation at the monotonic reading
// mono: the peer "is in the persisted peer cache (met in an earlier run),
// or it completed hello with this node at least 10 minutes ago"
// (core.ReputationAge). firstHello is the monotonic reading of its first
// completed hello plus one, 0 for none: a reading of 0 is a hello at the
// node's first instant.
func Reputed(metEarlier bool, firstHello int64, mono time.Duration) bool {
	return metEarlier || firstHello != 0 && mono-time.Duration(firstHello-1) >= core.ReputationAge
}
