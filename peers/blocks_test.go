package peers

import (
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
)

// TestBlocksMovedIsActivity: blocks sent to a stranger count in what the
// stranger slots read of it as requests served do: its served count on
// this stay, and its last activity (docs/adr/0056), so that a peer in the
// middle of a blob is spared as one being served syncs is.
func TestBlocksMovedIsActivity(t *testing.T) {
	st := newPeer[struct{}](peer.ID("fetcher"), network.DirInbound, "", time.Second)
	before := st.stranger(2 * time.Second)
	for range 3 {
		st.BlocksMoved(5 * time.Second)
	}
	after := st.stranger(5 * time.Second)
	if after.Served != before.Served+3 {
		t.Fatalf("served %d after three blocks; want %d", after.Served, before.Served+3)
	}
	if after.LastActive != int64(5*time.Second) {
		t.Fatalf("last active at %v; want 5s, the last block's", time.Duration(after.LastActive))
	}
}
