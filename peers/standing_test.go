package peers

import (
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p/core/peer"
)

// TestStrangersSyncShareCountsBytes (ADR 0041): a sync page from a peer
// without standing is charged a token of limits.stranger_sync_per_min per
// limits.EventTokenBytes started of each event: ten events of 28 KiB
// spend a share of 30 tokens and more, ten of 1 KiB do not.
func TestStrangersSyncShareCountsBytes(t *testing.T) {
	for _, c := range []struct {
		size    int
		refused bool
	}{{1 << 10, false}, {28 << 10, true}} {
		w := newScriptWorld(t)
		if _, err := w.run([]string{"table"}); err != nil {
			t.Fatal(err)
		}
		w.cfg.StrangerSyncPerMin = 120 // a burst of 30, a token every 500 ms
		if err := w.open(); err != nil {
			t.Fatal(err)
		}
		page := make([]jsontext.Value, 10)
		for i := range page {
			page[i] = jsontext.Value(strings.Repeat("x", c.size)) // undecodable: counted as a new author's
		}
		clock := func() (time.Time, time.Duration) { return epoch, 0 }
		s := w.table.NewAuthorShare("a stranger", clock, func(peer.ID) bool { return true })
		s.Charge(page)
		if ok, _ := w.table.b.strangerSync.Allow(0); ok == c.refused {
			t.Errorf("after ten events of %d bytes: a token %v; want %v", c.size, ok, !c.refused)
		}
	}
}
