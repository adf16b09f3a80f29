package node

import (
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// TestDBMemoryMetric: /metrics reports pebble's memory outside the Go
// heap, memtables and block cache, and the memtables hold something once
// events are stored.
func TestDBMemoryMetric(t *testing.T) {
	n := startNode(t, testConfig(false, time.Hour))
	publish(t, n, 10)
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(n.Gatherer(), promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
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
	promhttp.HandlerFor(n.Gatherer(), promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	m := regexp.MustCompile(`(?m)^wats_db_wal_fsync_seconds_count (\S+)$`).FindStringSubmatch(rec.Body.String())
	if m == nil {
		t.Fatal("no wats_db_wal_fsync_seconds_count in /metrics")
	}
	if v, err := strconv.ParseFloat(m[1], 64); err != nil || v < 3 {
		t.Errorf("wats_db_wal_fsync_seconds_count = %s after 3 appends", m[1])
	}
}
