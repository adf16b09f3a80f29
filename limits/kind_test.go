package limits

import (
	"testing"
)

// TestKinds: wire names, keys and refusal reasons, exactly as ADR 0014
// and docs/design.md §4 spell them.
func TestKinds(t *testing.T) {
	want := []struct {
		k             Kind
		name, key, rf string
	}{
		{KindHello, "hello", "limits.hello_per_min", "rate limited (hello): retry later"},
		{KindSync, "sync", "limits.sync_per_min", "rate limited (sync): retry later"},
		{KindReplicate, "replicate", "limits.replicate_per_min", "rate limited (replicate): retry later"},
		{KindCrashReport, "crash_report", "limits.report_per_min", "rate limited (crash_report): retry later"},
	}
	if len(want) != NumKinds || len(Kinds()) != NumKinds {
		t.Fatal("NumKinds")
	}
	for i, w := range want {
		if Kinds()[i] != w.k || w.k.String() != w.name || w.k.Key() != w.key || Refusal(w.k) != w.rf || !w.k.Valid() {
			t.Errorf("%d: %q %q %q", w.k, w.k.String(), w.k.Key(), Refusal(w.k))
		}
		if k, ok := ParseKind(w.name); !ok || k != w.k {
			t.Errorf("ParseKind(%q) = %v, %v", w.name, k, ok)
		}
	}
	for _, s := range []string{"", "Hello", "SYNC", "crash-report", "report", "challenge", "refused", "error", "hello "} {
		if k, ok := ParseKind(s); ok {
			t.Errorf("ParseKind(%q) = %v", s, k)
		}
	}
	bad := Kind(NumKinds)
	if bad.Valid() || bad.String() != "kind(4)" || bad.Key() != "" || Refusal(bad) != "rate limited (kind(4)): retry later" {
		t.Errorf("invalid kind: %q %q %q", bad.String(), bad.Key(), Refusal(bad))
	}
	if n := testing.AllocsPerRun(100, func() { _ = Refusal(KindSync) }); n != 0 {
		t.Errorf("Refusal allocates %v", n)
	}
}
