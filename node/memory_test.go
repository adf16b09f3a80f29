package node

import (
	"maps"
	"math"
	"net/http/httptest"
	"regexp"
	"runtime"
	rtmetrics "runtime/metrics"
	"strconv"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/client_golang/prometheus"
)

func heapReleased() uint64 {
	s := []rtmetrics.Sample{{Name: "/memory/classes/heap/released:bytes"}}
	rtmetrics.Read(s)
	return s[0].Value.Uint64()
}

// garbage allocates mib MiB that is garbage once it returns.
func garbage(mib int) {
	var keep [][]byte
	for range mib {
		keep = append(keep, make([]byte, 1<<20))
	}
	runtime.KeepAlive(keep)
}

// TestReleaseMemory: after a burst of garbage, with no collection since
// the last look, release returns the garbage's memory to the OS; right
// after, with nothing new, it does nothing; after a second burst it
// releases again.
func TestReleaseMemory(t *testing.T) {
	var r releaser
	r.release(readHeap()) // the first look: the floor
	burst := func() heapSample {
		garbage(64)
		h := readHeap()
		r.cycles = h.cycles // the burst's own collections ran before this look
		return h
	}
	h := burst()
	before := heapReleased()
	if !r.release(h) {
		t.Fatal("64 MiB of garbage: nothing released")
	}
	if got := heapReleased() - before; got < 32<<20 {
		t.Errorf("released %d MiB, want at least 32", got>>20)
	}
	if h := readHeap(); h.free <= releaseFree && r.release(h) {
		t.Error("nothing new since the last release: released again")
	}
	if !r.release(burst()) {
		t.Error("a second burst of 64 MiB: nothing released")
	}
}

// TestReleaseBounds: release looks only at the sample it is given, at and
// just past releaseAbove, releaseSlack over the floor, releaseStep over the
// last release and releaseFree; never while collections run, but for free
// spans.
func TestReleaseBounds(t *testing.T) {
	const mib = 1 << 20
	var r releaser
	look := func(objects, free uint64, gc bool) bool {
		c := r.cycles
		if gc {
			c++
		}
		return r.release(heapSample{objects: objects, free: free, cycles: c})
	}
	if look(10*mib, 0, true) {
		t.Fatal("the first look, 10 MiB: released")
	}
	if look(10*mib+releaseSlack, 0, false) {
		t.Error("floor+releaseSlack: released")
	}
	if look(10*mib+releaseSlack+1, 0, true) {
		t.Error("floor+releaseSlack+1 with a collection since: released")
	}
	if !look(10*mib+releaseSlack+1, 0, false) {
		t.Error("floor+releaseSlack+1, idle: not released")
	}
	r.after = 20 * mib
	if look(20*mib+releaseStep, 0, false) {
		t.Error("after+releaseStep: released")
	}
	if !look(20*mib+releaseStep+1, 0, false) {
		t.Error("after+releaseStep+1, idle: not released")
	}
	// releaseAbove bounds it from below, whatever the floor.
	r = releaser{}
	look(1*mib, 0, true)
	if look(releaseAbove, 0, false) {
		t.Error("held releaseAbove: released")
	}
	if !look(releaseAbove+1, 0, false) {
		t.Error("held releaseAbove+1, idle, over the floor: not released")
	}
	// Free spans alone, collections running or not.
	r.after = 1 << 30
	if look(8*mib, releaseFree, true) {
		t.Error("free = releaseFree: released")
	}
	if !look(8*mib, releaseFree+1, true) {
		t.Error("free = releaseFree+1: not released")
	}
}

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
