package metrics

import (
	"maps"
	"math"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// TestFsyncBuckets folds pebble's histogram (nanoseconds) into
// fsyncBounds (seconds): at a bound counts, just past it does not.
func TestFsyncBuckets(t *testing.T) {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Buckets: pebble.FsyncLatencyBuckets})
	for _, ns := range []float64{2e6, 100e6, 101e6, 3e9} {
		h.Observe(ns)
	}
	count, buckets, sum, ok := fsyncBuckets(h)
	if !ok || count != 4 || math.Abs(sum-(2e6+100e6+101e6+3e9)/1e9) > 1e-9 {
		t.Fatalf("count %d, sum %v, ok %v", count, sum, ok)
	}
	want := map[float64]uint64{0.001: 0, 0.0025: 1, 0.005: 1, 0.01: 1, 0.025: 1, 0.05: 1, 0.1: 1, 0.25: 3, 0.5: 3, 1: 3, 2.5: 3}
	if !maps.Equal(buckets, want) {
		t.Errorf("buckets %v, want %v", buckets, want)
	}
}

// TestValue: Value sums the series of a name whose labels hold the values
// given, in any order; an unknown name or label is 0.
func TestValue(t *testing.T) {
	m := New(Sources{})
	m.BlobFetch("sync", "failed")
	m.BlobFetch("sync", "failed")
	m.BlobFetch("gossip", "failed")
	m.PeerBanned("gossip spam")
	for _, c := range []struct {
		name   string
		values []string
		want   float64
	}{
		{"wats_blob_fetches_total", []string{"sync", "failed"}, 2},
		{"wats_blob_fetches_total", []string{"failed", "sync"}, 2},
		{"wats_blob_fetches_total", []string{"failed"}, 3},
		{"wats_blob_fetches_total", []string{"stored"}, 0},
		{"wats_peers_banned_total", []string{"gossip spam"}, 1},
		{"wats_no_such_metric", nil, 0},
	} {
		if got := m.Value(c.name, c.values...); got != c.want {
			t.Errorf("Value(%s, %v) = %v, want %v", c.name, c.values, got, c.want)
		}
	}
}

// TestBandwidth: the [bandwidth] metrics read the node's counts by
// direction and class, without peer labels.
func TestBandwidth(t *testing.T) {
	m := New(Sources{Bandwidth: func() Bandwidth {
		return Bandwidth{Up: 10, Down: 20, UpCap: 1 << 20, MonthUp: 30, MonthlyUpCap: 40, Waits: [2][2]uint64{{1, 2}, {3, 4}}}
	}})
	for _, c := range []struct {
		name   string
		values []string
		want   float64
	}{
		{"wats_bandwidth_bytes_total", []string{"up"}, 10},
		{"wats_bandwidth_bytes_total", []string{"down"}, 20},
		{"wats_bandwidth_cap_bytes_per_second", []string{"up"}, 1 << 20},
		{"wats_bandwidth_cap_bytes_per_second", []string{"down"}, 0},
		{"wats_bandwidth_month_up_bytes", nil, 30},
		{"wats_bandwidth_monthly_up_cap_bytes", nil, 40},
		{"wats_bandwidth_waits_total", []string{"up", "standing"}, 1},
		{"wats_bandwidth_waits_total", []string{"up", "stranger"}, 2},
		{"wats_bandwidth_waits_total", []string{"down", "standing"}, 3},
		{"wats_bandwidth_waits_total", []string{"down", "stranger"}, 4},
	} {
		if got := m.Value(c.name, c.values...); got != c.want {
			t.Errorf("Value(%s, %v) = %v, want %v", c.name, c.values, got, c.want)
		}
	}
}
