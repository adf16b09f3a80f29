package dashboard

import (
	"context"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// families returns the metric families of a registry holding the
// bandwidth counter (up, down) and the effort gauge at these values.
func families(t *testing.T, up, down, effort float64) []*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewRegistry()
	bw := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wats_bandwidth_bytes_total"}, []string{"direction"})
	bw.WithLabelValues("up").Add(up)
	bw.WithLabelValues("down").Add(down)
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "wats_challenge_effort_bits"})
	g.Set(effort)
	other := prometheus.NewCounter(prometheus.CounterOpts{Name: "wats_not_recorded_total"})
	bans := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wats_peers_banned_total"}, []string{"reason"})
	if effort >= 10 { // a ban, from the third sample on: its series starts then
		bans.WithLabelValues("stream_flood").Add(5)
	}
	reg.MustRegister(bw, g, other, bans)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

func values(v View, key string) []float64 {
	var out []float64
	for _, x := range v.Series[key] {
		if x == nil {
			out = append(out, math.NaN())
		} else {
			out = append(out, *x)
		}
	}
	return out
}

func same(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && !(math.IsNaN(a[i]) && math.IsNaN(b[i])) {
			return false
		}
	}
	return true
}

// TestHistoryRates: counters become rates per second over the monotonic
// clock's elapsed time, whatever the wall clock does (here it steps back
// an hour); gauges are kept as they are; a counter that went down has no
// rate; what is not Recorded is not kept.
func TestHistoryRates(t *testing.T) {
	h := NewHistory()
	wall := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	nan := math.NaN()
	h.Add(wall, 0, families(t, 1000, 0, 8))
	h.Add(wall.Add(5*time.Second), 5*time.Second, families(t, 6000, 500, 9))
	h.Add(wall.Add(-time.Hour), 10*time.Second, families(t, 16000, 500, 10))     // the wall clock stepped back
	h.Add(wall.Add(15*time.Second), 10*time.Second, families(t, 17000, 500, 10)) // mono did not advance
	h.Add(wall.Add(20*time.Second), 15*time.Second, families(t, 100, 600, 8))    // the count went down
	v := h.View()
	if got, want := values(v, "wats_bandwidth_bytes_total:up"), []float64{nan, 1000, 2000, nan, nan}; !same(got, want) {
		t.Errorf("up: %v, want %v", got, want)
	}
	if got, want := values(v, "wats_bandwidth_bytes_total:down"), []float64{nan, 100, 0, nan, 20}; !same(got, want) {
		t.Errorf("down: %v, want %v", got, want)
	}
	if got, want := values(v, "wats_challenge_effort_bits"), []float64{8, 9, 10, 10, 8}; !same(got, want) {
		t.Errorf("effort: %v, want %v", got, want)
	}
	// The bans counted from the third sample: 5 in its 5 s, then none.
	if got, want := values(v, "wats_peers_banned_total"), []float64{nan, nan, 1, nan, nan}; !same(got, want) {
		t.Errorf("bans: %v, want %v (a counter new since the last sample counts from 0)", got, want)
	}
	if _, ok := v.Series["wats_not_recorded_total"]; ok {
		t.Error("a metric not Recorded is kept")
	}
	ms := wall.UnixMilli()
	want := []int64{ms, ms + 5000, ms + 5000, ms + 15000, ms + 20000}
	for i := range want {
		if v.Times[i] != want[i] {
			t.Fatalf("times %v, want %v (never decreasing)", v.Times, want)
		}
	}
}

// TestHistoryBound: the history keeps HistoryLength samples, the newest;
// a series that appears late is aligned with the times, null before.
func TestHistoryBound(t *testing.T) {
	h := NewHistory()
	wall := time.Unix(1_800_000_000, 0)
	empty := []*dto.MetricFamily{}
	for i := range HistoryLength + 1 {
		fams := empty
		if i >= HistoryLength-2 {
			fams = families(t, float64(i), 0, float64(i))
		}
		h.Add(wall.Add(time.Duration(i)*SampleInterval), time.Duration(i)*SampleInterval, fams)
	}
	v := h.View()
	if len(v.Times) != HistoryLength || v.Times[0] != wall.Add(SampleInterval).UnixMilli() {
		t.Fatalf("%d times from %d, want %d from the second sample's", len(v.Times), v.Times[0], HistoryLength)
	}
	for k, s := range v.Series {
		if len(s) != HistoryLength {
			t.Fatalf("series %s has %d values, want %d", k, len(s), HistoryLength)
		}
	}
	effort := values(v, "wats_challenge_effort_bits")
	if !math.IsNaN(effort[HistoryLength-4]) || effort[HistoryLength-3] != HistoryLength-2 || effort[HistoryLength-1] != HistoryLength {
		t.Fatalf("effort's last values: %v", effort[HistoryLength-4:])
	}
}

// TestRunSamplesEveryInterval: Run samples at once, then every
// SampleInterval, until its context ends.
func TestRunSamplesEveryInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, err := New(Options{Gatherer: prometheus.NewRegistry(), Token: "t"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		start := time.Now()
		done := make(chan struct{})
		go func() {
			d.Run(ctx, time.Now, func() time.Duration { return time.Since(start) })
			close(done)
		}()
		time.Sleep(3*SampleInterval + SampleInterval/2)
		synctest.Wait()
		if n := len(d.History().View().Times); n != 4 {
			t.Errorf("%d samples after 3.5 intervals, want 4", n)
		}
		cancel()
		<-done
	})
}
