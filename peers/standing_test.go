package peers

import (
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/limits"
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

// TestStandingOf: the class of a peer's bytes within the bandwidth caps:
// none for a peer not connected, one that dialled this node fresh, or one
// this node dialled without choosing it (a DHT query's dial); one this
// node chose to dial has standing (ADR 0041's addendum).
func TestStandingOf(t *testing.T) {
	w := newScriptWorld(t)
	if _, err := w.run([]string{"table"}); err != nil {
		t.Fatal(err)
	}
	in, out, chosen := scriptID(t, "inbound"), scriptID(t, "outbound"), scriptID(t, "chosen")
	if w.table.StandingOf(chosen, epoch, 0) {
		t.Error("a peer not connected has standing")
	}
	w.table.Connect(in, network.DirInbound, "", epoch, 0)
	w.table.Connect(out, network.DirOutbound, "", epoch, 0)
	done := w.table.Choose(chosen)
	w.table.Connect(chosen, network.DirOutbound, "", epoch, 0)
	done(true)
	if w.table.StandingOf(in, epoch, 0) || w.table.StandingOf(out, epoch, 0) || !w.table.StandingOf(chosen, epoch, 0) {
		t.Errorf("StandingOf: inbound %v, outbound %v, chosen %v; want false, false, true", w.table.StandingOf(in, epoch, 0),
			w.table.StandingOf(out, epoch, 0), w.table.StandingOf(chosen, epoch, 0))
	}
	if len(w.table.ch.dialling) != 0 {
		t.Errorf("%d dials still counted after they returned", len(w.table.ch.dialling))
	}
}

// TestHelloLimits: a hello advertises the rates of [limits].
func TestHelloLimits(t *testing.T) {
	l := limits.DefaultConfig()
	l.HelloPerMin, l.SyncPerMin, l.ReplicatePerMin, l.ReportPerMin = 1, 2, 3, 4
	if h := HelloLimits(l); h.HelloPerMin != 1 || h.SyncPerMin != 2 || h.ReplicatePerMin != 3 || h.ReportPerMin != 4 {
		t.Errorf("HelloLimits = %+v", h)
	}
}
