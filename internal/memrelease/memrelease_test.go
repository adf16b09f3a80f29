package memrelease

import (
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"testing"
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
	var r Releaser
	r.Release(ReadHeap())
	burst := func() Sample {
		// The collector is off during the burst, so that it leaves its
		// garbage as a flood's end leaves it on an idle node: dead objects
		// no collection has freed yet.
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
		garbage(64)
		h := ReadHeap()
		r.cycles = h.cycles
		return h
	}
	h := burst()
	before := heapReleased()
	if !r.Release(h) {
		t.Fatal("64 MiB of garbage: nothing released")
	}
	if got := heapReleased() - before; got < 32<<20 {
		t.Errorf("released %d MiB, want at least 32", got>>20)
	}
	if h := ReadHeap(); h.slack() > Slack || h.free > Free {
		t.Errorf("right after a release: %d MiB beyond the live heap, %d MiB free", h.slack()>>20, h.free>>20)
	}
	if r.Release(ReadHeap()) {
		t.Error("nothing new since the last release: released again")
	}
	if h := burst(); !r.Release(h) {
		t.Errorf("a second burst of 64 MiB: nothing released (%+v)", h)
	}
}

// TestReleaseBounds: release looks only at the sample it is given: at and
// just past Slack beyond the live heap, never while collections run;
// at and just past Free, whether they run or not.
func TestReleaseBounds(t *testing.T) {
	const mib = 1 << 20
	var r Releaser
	look := func(objects, live, free uint64, gc bool) bool {
		c := r.cycles
		if gc {
			c++
		}
		return r.Release(Sample{objects: objects, live: live, free: free, cycles: c})
	}
	const live = 10 * mib
	for _, c := range []struct {
		name          string
		objects, free uint64
		gc, want      bool
	}{
		{"slack at the bound, idle", live + Slack - mib, mib, false, false},
		{"slack past the bound, idle", live + Slack - mib, mib + 1, false, true},
		{"objects alone past the bound, idle", live + Slack + 1, 0, false, true},
		{"slack past the bound, a collection since", live + Slack + 1, 0, true, false},
		{"free at its bound, a collection since", live, Free, true, false},
		{"free past its bound, a collection since", live, Free + 1, true, true},
		{"fewer objects than the last collection found live", live / 2, 0, false, false},
	} {
		if got := look(c.objects, live, c.free, c.gc); got != c.want {
			t.Errorf("%s: released %v, want %v", c.name, got, c.want)
		}
	}
}
