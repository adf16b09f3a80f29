// Package memrelease gives a node's memory back to the OS after a flood
// (ADR 0031, ADR 0042). A flood (a Sybil churn of connections, a spam
// flood) grows the Go heap; once it is over, the garbage it left and the
// free spans stay with the process until the next collections and the
// runtime's slow scavenger return them, which can take minutes on a node
// that is then nearly idle (its next collection is the runtime's forced
// one, two minutes on), and the scavenger keeps free spans up to the
// heap's goal, twice the live heap of the flood.
//
// Every Every the node gives its Releaser a Sample of its heap, and the
// Releaser collects and returns the free memory to the OS at once when
// either
//
//   - no collection ran since the last look (the node is nearly idle), and
//     the heap holds more than Slack beyond the objects the last
//     collection found live: objects allocated since (dead, most of them,
//     on an idle node) and free spans not yet returned; the garbage a
//     flood left, back within two looks of its end; or
//   - its free spans not yet returned are above Free: spans that objects
//     outliving a flood (gossipsub's memory of seen messages, peers'
//     records kept for minutes) held on to, emptied since.
//
// A release leaves the heap at its live objects and no free spans, so a
// node at rest does nothing but the look; a busy one, whose collections
// run anyway, releases only free spans, at most once each Every: a
// collection of a heap of this size, a few milliseconds of CPU.
package memrelease

import (
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"time"
)

const (
	// Every is how often the node looks at its heap (Releaser.Release).
	Every = 10 * time.Second
	// Slack is the heap beyond the live objects, in bytes, that an idle
	// node returns; Free the free spans a busy one returns.
	Slack = 4 << 20
	Free  = 4 << 20
)

// Sample is what the heap holds and has not returned to the OS, in
// bytes: objects (live and dead) and free spans; the objects the last
// collection found live; and how many collections have run.
type Sample struct {
	objects, live, free uint64
	cycles              uint64
}

// slack is what the heap holds beyond the objects the last collection
// found live: objects allocated since and free spans.
func (s Sample) slack() uint64 { return s.objects - min(s.live, s.objects) + s.free }

// samples are the runtime metrics a Sample reads, in its fields' order.
var samples = []rtmetrics.Sample{
	{Name: "/memory/classes/heap/objects:bytes"},
	{Name: "/gc/heap/live:bytes"},
	{Name: "/memory/classes/heap/free:bytes"},
	{Name: "/gc/cycles/total:gc-cycles"},
}

// ReadHeap returns the heap's sample now.
func ReadHeap() Sample {
	s := make([]rtmetrics.Sample, len(samples))
	copy(s, samples)
	rtmetrics.Read(s)
	v := func(i int) uint64 {
		if s[i].Value.Kind() == rtmetrics.KindUint64 {
			return s[i].Value.Uint64()
		}
		return 0
	}
	return Sample{objects: v(0), live: v(1), free: v(2), cycles: v(3)}
}

// Releaser decides when to return the heap's free memory to the OS. Its
// zero value is ready.
type Releaser struct {
	// cycles is the collections run as of the last look (or release).
	cycles uint64
}

// Release collects and returns the heap's free memory to the OS when h
// calls for it (see the package's doc); it reports whether it did.
func (r *Releaser) Release(h Sample) bool {
	idle := h.cycles == r.cycles
	r.cycles = h.cycles
	if !(idle && h.slack() > Slack) && h.free <= Free {
		return false
	}
	debug.FreeOSMemory()
	r.cycles = ReadHeap().cycles
	return true
}
