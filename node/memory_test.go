package node

import (
	"maps"
	"math"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// TestDBMemoryMetric: /metrics reports pebble's memory outside the Go
// heap, memtables and block cache, and the memtables hold something once
// events are stored.
func TestDBMemoryMetric(t *testing.T) {
	n := startNode(t, testConfig(false, time.Hour))
	publish(t, n, 10)
	rec := httptest.NewRecorder()
	n.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, what := range []string{"memtables", "block_cache"} {
		re := regexp.MustCompile(`(?m)^wats_db_memory_bytes\{what="` + what + `"\} (\S+)$`)
		m := re.FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no wats_db_memory_bytes{what=%q} in /metrics", what)
		}
		if v, err := strconv.ParseFloat(m[1], 64); err != nil || what == "memtables" && v <= 0 {
			t.Errorf("wats_db_memory_bytes{what=%q} = %s", what, m[1])
		}
	}
}

// TestFsyncMetric: /metrics reports the WAL's fsyncs once events are
// stored, each append one (at least).
func TestFsyncMetric(t *testing.T) {
	n := startNode(t, testConfig(false, time.Hour))
	publish(t, n, 3)
	rec := httptest.NewRecorder()
	n.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	m := regexp.MustCompile(`(?m)^wats_db_wal_fsync_seconds_count (\S+)$`).FindStringSubmatch(rec.Body.String())
	if m == nil {
		t.Fatal("no wats_db_wal_fsync_seconds_count in /metrics")
	}
	if v, err := strconv.ParseFloat(m[1], 64); err != nil || v < 3 {
		t.Errorf("wats_db_wal_fsync_seconds_count = %s after 3 appends", m[1])
	}
}

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
