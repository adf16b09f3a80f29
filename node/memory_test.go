package node

import (
	"maps"
	"math"
	"net/http/httptest"
	"regexp"
	"runtime"
	"runtime/debug"
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
	r.release(readHeap())
	burst := func() heapSample {
		// The collector is off during the burst, so that it leaves its
		// garbage as a flood's end leaves it on an idle node: dead objects
		// no collection has freed yet.
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
		garbage(64)
		h := readHeap()
		r.cycles = h.cycles
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
	if h := readHeap(); h.slack() > releaseSlack || h.free > releaseFree {
		t.Errorf("right after a release: %d MiB beyond the live heap, %d MiB free", h.slack()>>20, h.free>>20)
	}
	if r.release(readHeap()) {
		t.Error("nothing new since the last release: released again")
	}
	if h := burst(); !r.release(h) {
		t.Errorf("a second burst of 64 MiB: nothing released (%+v)", h)
	}
}

// TestReleaseBounds: release looks only at the sample it is given: at and
// just past releaseSlack beyond the live heap, never while collections run;
// at and just past releaseFree, whether they run or not.
func TestReleaseBounds(t *testing.T) {
	const mib = 1 << 20
	var r releaser
	look := func(objects, live, free uint64, gc bool) bool {
		c := r.cycles
		if gc {
			c++
		}
		return r.release(heapSample{objects: objects, live: live, free: free, cycles: c})
	}
	const live = 10 * mib
	for _, c := range []struct {
		name          string
		objects, free uint64
		gc, want      bool
	}{
		{"slack at the bound, idle", live + releaseSlack - mib, mib, false, false},
		{"slack past the bound, idle", live + releaseSlack - mib, mib + 1, false, true},
		{"objects alone past the bound, idle", live + releaseSlack + 1, 0, false, true},
		{"slack past the bound, a collection since", live + releaseSlack + 1, 0, true, false},
		{"free at its bound, a collection since", live, releaseFree, true, false},
		{"free past its bound, a collection since", live, releaseFree + 1, true, true},
		{"fewer objects than the last collection found live", live / 2, 0, false, false},
	} {
		if got := look(c.objects, live, c.free, c.gc); got != c.want {
			t.Errorf("%s: released %v, want %v", c.name, got, c.want)
		}
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
