package peers

import (
	"testing"
	"time"

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
