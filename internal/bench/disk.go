package bench

import (
	"context"
	"fmt"
	"os"
	"time"
)

// DiskResult is what bench disk measured: fsyncs of small appends to one
// file, as the event log's WAL makes them.
type DiskResult struct {
	// Dir is the directory whose disk was timed, Seconds how long the run
	// took, Fsyncs how many fsyncs it timed; P50ms, P99ms and MaxMs are
	// their latencies' median, 99th percentile and slowest, in ms.
	Dir     string  `json:"dir"`
	Seconds float64 `json:"seconds"`
	Fsyncs  int     `json:"fsyncs"`
	P50ms   float64 `json:"p50_ms"`
	P99ms   float64 `json:"p99_ms"`
	MaxMs   float64 `json:"max_ms"`
	// Over100ms counts the fsyncs that took more than 100 ms: each holds
	// up every event of its group by as much.
	Over100ms int `json:"over_100ms"`
}

// diskSlow is the fsync latency bench disk counts as a stall.
const diskSlow = 100 * time.Millisecond

// Disk is `wats bench disk`: in a file of its own in dir (removed after)
// it appends 1 KiB and fsyncs it, pausing every between fsyncs, for
// duration, and sums up the fsyncs' latencies. It returns ctx's error if
// ctx ends first.
func Disk(ctx context.Context, dir string, duration, every time.Duration) (*DiskResult, error) {
	f, err := os.CreateTemp(dir, "wats-bench-disk-*")
	if err != nil {
		return nil, fmt.Errorf("bench disk: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 1024)
	var lat []time.Duration
	start := time.Now()
	for time.Since(start) < duration && ctx.Err() == nil {
		if _, err := f.Write(buf); err != nil {
			return nil, fmt.Errorf("bench disk: %w", err)
		}
		t := time.Now()
		if err := f.Sync(); err != nil {
			return nil, fmt.Errorf("bench disk: %w", err)
		}
		lat = append(lat, time.Since(t))
		select {
		case <-ctx.Done():
		case <-time.After(every):
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return diskFigures(dir, time.Since(start), lat), nil
}

// diskFigures sums up the fsync latencies lat of a run of d in dir.
func diskFigures(dir string, d time.Duration, lat []time.Duration) *DiskResult {
	res := &DiskResult{Dir: dir, Seconds: d.Seconds(), Fsyncs: len(lat),
		P50ms: quantileMs(lat, 0.50), P99ms: quantileMs(lat, 0.99)}
	for _, l := range lat {
		res.MaxMs = max(res.MaxMs, ms(l))
		if l > diskSlow {
			res.Over100ms++
		}
	}
	return res
}
