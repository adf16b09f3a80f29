package bench

import (
	"os"
	"slices"
	"testing"
	"time"
)

// TestHonestFigures checks the arithmetic of the honest delivery: within
// the second, at all, and the latencies of those delivered.
func TestHonestFigures(t *testing.T) {
	t0 := time.Now()
	arr := &arrivals{seen: map[string]time.Time{
		"a": t0.Add(10 * time.Millisecond),
		"b": t0.Add(time.Second), // exactly the second: within
		"c": t0.Add(1500 * time.Millisecond),
		"x": t0, // not one of ours
	}}
	sent := []honestSent{
		{id: "a", at: t0, add: time.Millisecond},
		{id: "b", at: t0, add: time.Millisecond},
		{id: "c", at: t0, add: time.Millisecond},
		{id: "d", at: t0, add: 3 * time.Millisecond}, // never arrived
	}
	atB := &arrivals{seen: map[string]time.Time{"c": t0.Add(400 * time.Millisecond)}}
	h := honestFigures(sent, 1, arr, atB)
	if h.Published != 4 || h.PublishFailed != 1 || h.Delivered != 3 || h.Within != 2 {
		t.Fatalf("%+v", h)
	}
	if h.WithinPct != 50 || h.DeliveredPct != 75 || h.P50ms != 1000 || h.P99ms != 1500 || h.AddP99ms != 3 {
		t.Fatalf("%+v", h)
	}
	want := []SlowEvent{{Ms: 1500, AddMs: 1, BMs: 400}, {Ms: 1000, AddMs: 1, BMs: -1}, {Ms: 10, AddMs: 1, BMs: -1}}
	if !slices.Equal(h.Slowest, want) {
		t.Fatalf("slowest %+v, want %+v", h.Slowest, want)
	}
	if h := honestFigures(nil, 0, arr, atB); h.WithinPct != 0 || h.P99ms != 0 {
		t.Fatalf("nothing sent: %+v", h)
	}
}

func TestDuAndThreads(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/f", make([]byte, 100<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	du, size := duBytes(dir)
	if size != 100<<10 || du < 100<<10 {
		t.Fatalf("du %d, size %d of a 100 KiB file", du, size)
	}
	if _, err := os.Stat("/proc/self/task"); err != nil {
		t.Skip("no /proc")
	}
	nice, err := getThreadNice()
	if err != nil {
		t.Fatal(err)
	}
	if niced, total := threadsNiced(os.Getpid(), nice); total == 0 || niced == 0 {
		t.Fatalf("%d of %d threads at nice %d", niced, total, nice)
	}
}

// TestDiskFigures: the quantiles, the slowest and the count over 100 ms,
// at and just past the bound.
func TestDiskFigures(t *testing.T) {
	lat := []time.Duration{time.Millisecond, 2 * time.Millisecond, diskSlow, diskSlow + 1, 300 * time.Millisecond}
	r := diskFigures("/d", 2*time.Second, lat)
	if r.Fsyncs != 5 || r.Over100ms != 2 || r.MaxMs != 300 || r.P50ms != 100 || r.P99ms != 300 || r.Seconds != 2 {
		t.Fatalf("%+v", r)
	}
	if r := diskFigures("/d", time.Second, nil); r.Fsyncs != 0 || r.MaxMs != 0 || r.Over100ms != 0 {
		t.Fatalf("no fsyncs: %+v", r)
	}
}

// TestBenchDisk runs the disk bench briefly and checks that it timed
// fsyncs and left no file behind.
func TestBenchDisk(t *testing.T) {
	dir := t.TempDir()
	r, err := Disk(t.Context(), dir, 100*time.Millisecond, 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if r.Fsyncs < 2 || r.MaxMs <= 0 {
		t.Fatalf("%+v", r)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("left %d files", len(left))
	}
}
