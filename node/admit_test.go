package node

import (
	"context"
	"testing"
	"time"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/peers"
	"github.com/wats-network/wats/proto"
)

// TestFlooderIsRefusedHonestPeerIsServed: with sync_per_min = 60 (a burst
// of 15, then one a second), a peer that floods sync requests gets 15
// served and the rest refused with ADR 0014's message and a retry time,
// its hello budget untouched; meanwhile an honest node catching up from the
// same node at its advertised rate sees every request served.
func TestFlooderIsRefusedHonestPeerIsServed(t *testing.T) {
	cfg := testConfig(false, time.Hour)
	cfg.Limits.SyncPerMin = 60
	a := startNode(t, cfg)
	publish(t, a, 3*256+10) // four pages for the honest peer

	flooder := rawHost(t)
	flooder.Peerstore().AddAddrs(a.ID(), a.Host().Addrs(), time.Hour)
	served, refused := 0, 0
	for range 40 {
		resp := exchange(t, flooder, a.ID(), frame(`{"type":"sync","after":"0","limit":1}`))
		switch {
		case resp != nil && resp.Sync != nil:
			served++
		case resp != nil && resp.Refused != nil:
			refused++
			if resp.Refused.Reason != "rate limited (sync): retry later" {
				t.Fatalf("refusal reason %q", resp.Refused.Reason)
			}
			if resp.Refused.RetryAfterMs <= 0 || resp.Refused.RetryAfterMs > 1000 {
				t.Fatalf("retry_after_ms %d, want 1..1000 at one a second", resp.Refused.RetryAfterMs)
			}
		default:
			t.Fatalf("unexpected answer %+v", resp)
		}
	}
	// 15 from the burst; the flood takes well under a second, so at most one
	// more token may have refilled meanwhile.
	if served < 15 || served > 16 || served+refused != 40 {
		t.Fatalf("flooder: %d served, %d refused; want 15 (or 16) served, the rest refused", served, refused)
	}
	// Another type's budget is untouched.
	if resp := exchange(t, flooder, a.ID(), frame(`{"type":"hello","version":1,"network":"test","head":"0"}`)); resp == nil || resp.Hello == nil {
		t.Fatalf("the flooder's hello was not served: %+v", resp)
	}

	// The honest node paces itself to the advertised rate: no refusals.
	b := startNode(t, testConfig(false, time.Hour))
	connect(t, b, a)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := b.SyncPeer(ctx, a.ID(), nil); err != nil {
		t.Fatal(err)
	}
	waitHead(t, 10*time.Second, a.events.Head(), b)
	if got := b.m.Value("wats_sync_client_refused_total"); got != 0 {
		t.Fatalf("the honest node was refused %v times", got)
	}
	snap := a.run.Admission().Snapshot()
	if snap.Of(core.Sync).Refused != uint64(refused) {
		t.Fatalf("node a counted %d sync refusals, want exactly the flooder's %d", snap.Of(core.Sync).Refused, refused)
	}
}

// TestHelloAdvertisesLimits: a node's hello carries its configured limits,
// and a peer's advertised sync rate sets the pacer of the syncs to it.
func TestHelloAdvertisesLimits(t *testing.T) {
	cfg := testConfig(false, time.Hour)
	cfg.Limits.SyncPerMin, cfg.Limits.HelloPerMin = 1200, 30
	a := startNode(t, cfg)
	h := a.ownHello()
	if h.Limits == nil || h.Limits.SyncPerMin != 1200 || h.Limits.HelloPerMin != 30 ||
		h.Limits.ReplicatePerMin != int64(cfg.Limits.ReplicatePerMin) || h.Limits.ReportPerMin != int64(cfg.Limits.ReportPerMin) {
		t.Fatalf("hello limits %+v do not match the config", h.Limits)
	}
	b := startNode(t, testConfig(false, time.Hour))
	connect(t, b, a)
	if got := b.run.Pacer(a.ID()).Rate().PerMin(); got != 1200 {
		t.Fatalf("b paces its syncs to a at %d/min, want a's advertised 1200", got)
	}
	if got := peers.SyncRate(&proto.Hello{}); got != 0 {
		t.Fatalf("an older peer without limits: rate %d, want 0 (unpaced)", got)
	}
	if got := peers.SyncRate(&proto.Hello{Limits: &proto.HelloLimits{SyncPerMin: 1 << 40}}); got != limits.MaxPerMin {
		t.Fatalf("an absurd advertised rate is paced at %d, want the cap %d", got, limits.MaxPerMin)
	}
}
