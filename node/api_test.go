package node

import (
	"testing"
	"time"

	"github.com/wats-network/wats/api"
)

// TestLimitsAndDiag: Limits shows the effective limits with burst and
// interval (GET /v1/limits), and Diag counts accepted and refused requests
// (GET /v1/diag).
func TestLimitsAndDiag(t *testing.T) {
	cfg := testConfig(false, time.Hour)
	cfg.Limits.SyncPerMin, cfg.Limits.ReportPerMin = 60, 0
	n := startNode(t, cfg)
	l := n.Limits()
	byType := map[string]api.RequestLimit{}
	for _, r := range l.Requests {
		byType[r.Type] = r
	}
	if s := byType["sync"]; s.PerMin != 60 || s.Burst != 15 || time.Duration(s.IntervalNs) != time.Second || s.Key != "limits.sync_per_min" {
		t.Fatalf("sync limit %+v, want 60/min, burst 15, one a second", s)
	}
	if r := byType["crash_report"]; r.PerMin != 0 || r.Burst != 0 {
		t.Fatalf("crash_report limit %+v, want unlimited", r)
	}
	if h := byType["hello"]; h.PerMin != 60 || h.Burst != 15 {
		t.Fatalf("hello limit %+v, want the default 60, burst 15", h)
	}

	flooder := rawHost(t)
	flooder.Peerstore().AddAddrs(n.ID(), n.Host().Addrs(), time.Hour)
	for range 17 {
		exchange(t, flooder, n.ID(), frame(`{"type":"sync","after":"0"}`))
	}
	d := n.Diag()
	for _, r := range d.Requests {
		if r.Type == "sync" && (r.Accepted < 15 || r.Accepted+r.Refused != 17 || r.Refused < 1) {
			t.Fatalf("sync counts %+v, want 15 (or 16) accepted of 17", r)
		}
	}
	if d.TrackedPeers < 1 || d.PeerLinesLogged < 1 {
		t.Fatalf("diag %+v: want the flooder tracked and one throttled line", d)
	}
}
