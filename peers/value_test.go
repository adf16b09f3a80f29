package peers

import (
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/wats-network/wats/limits"
)

// TestRecordAged: at and just short of limits.ValuedAge; a first_seen in
// the future (a clock stepped back) or unset is not aged.
func TestRecordAged(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		first time.Time
		want  bool
	}{
		{now.Add(-limits.ValuedAge), true},
		{now.Add(-limits.ValuedAge + time.Nanosecond), false},
		{now.Add(time.Hour), false},
		{time.Time{}, false},
	} {
		if got := recordAged(tc.first, now); got != tc.want {
			t.Errorf("recordAged(%v, %v) = %v, want %v", tc.first, now, got, tc.want)
		}
	}
}

// TestHoldStreams: a peer holds at most the cap of each stream kind, the
// kinds apart; a stream released makes room for one more.
func TestHoldStreams(t *testing.T) {
	w := newScriptWorld(t)
	if _, err := w.run([]string{"table"}); err != nil {
		t.Fatal(err)
	}
	st := w.table.Connect(scriptID(t, "holder"), network.DirInbound, "", epoch, 0).Peer
	const limit = 3
	for i := range limit {
		if !st.Hold(WatsStream, limit) {
			t.Fatalf("stream %d of %d refused", i+1, limit)
		}
	}
	if st.Hold(WatsStream, limit) {
		t.Fatal("a stream past the cap was held")
	}
	if !st.Hold(BitswapStream, limit) {
		t.Fatal("another kind was refused for the first kind's streams")
	}
	st.Release(WatsStream)
	if !st.Hold(WatsStream, limit) {
		t.Fatal("no room after a release")
	}
	if st.Hold(WatsStream, limit) {
		t.Fatal("the refused stream was counted: room for one more than the cap")
	}
}
