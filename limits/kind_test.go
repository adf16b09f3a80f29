package limits

import (
	"testing"

	"github.com/wats-network/wats/core"
)

// TestKinds: wire names, keys and refusal reasons, exactly as ADR 0014
// and docs/design.md §4 spell them.
func TestKinds(t *testing.T) {
	want := []struct {
		k             core.Request
		name, key, rf string
	}{
		{core.Hello, "hello", "limits.hello_per_min", "rate limited (hello): retry later"},
		{core.Sync, "sync", "limits.sync_per_min", "rate limited (sync): retry later"},
		{core.Replicate, "replicate", "limits.replicate_per_min", "rate limited (replicate): retry later"},
		{core.CrashReport, "crash_report", "limits.report_per_min", "rate limited (crash_report): retry later"},
	}
	if len(want) != core.NumRequests || len(core.Requests()) != core.NumRequests {
		t.Fatal("core.NumRequests")
	}
	for i, w := range want {
		if core.Requests()[i] != w.k || w.k.String() != w.name || RateKey(w.k) != w.key || Refusal(w.k) != w.rf || !w.k.Valid() {
			t.Errorf("%d: %q %q %q", w.k, w.k.String(), RateKey(w.k), Refusal(w.k))
		}
		if k, ok := core.ParseRequest(w.name); !ok || k != w.k {
			t.Errorf("core.ParseRequest(%q) = %v, %v", w.name, k, ok)
		}
	}
	for _, s := range []string{"", "Hello", "SYNC", "crash-report", "report", "challenge", "refused", "error", "hello "} {
		if k, ok := core.ParseRequest(s); ok {
			t.Errorf("core.ParseRequest(%q) = %v", s, k)
		}
	}
	bad := core.Request(core.NumRequests)
	if bad.Valid() || bad.String() != "request(4)" || RateKey(bad) != "" || Refusal(bad) != "rate limited (request(4)): retry later" {
		t.Errorf("invalid kind: %q %q %q", bad.String(), RateKey(bad), Refusal(bad))
	}
	if n := testing.AllocsPerRun(100, func() { _ = Refusal(core.Sync) }); n != 0 {
		t.Errorf("Refusal allocates %v", n)
	}
}
