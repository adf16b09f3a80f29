package node

import (
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"time"
)

// Giving memory back after a flood (ADR 0031). A flood (a Sybil churn of
// connections, a spam flood) grows the Go heap; once it is over, the
// garbage it left and the free spans stay with the process until the next
// collections and the runtime's slow scavenger return them, which can
// take minutes on a node that is then nearly idle (its next collection is
// the runtime's forced one, two minutes on), and the scavenger keeps free
// spans up to the heap's goal, twice the live heap of the flood. Every
// releaseEvery the node looks at what its heap holds (heapSample); it
// collects and returns the free memory to the OS at once when either
//
//   - what the heap holds (live and dead objects, free spans not yet
//     returned, the unused part of spans) is above releaseAbove and has
//     grown by releaseSlack since the last release: the garbage of a
//     flood, freed by the collection; or
//   - its free spans not yet returned are above releaseFree: spans that
//     objects outliving a flood (gossipsub's memory of seen messages,
//     peers' records kept for minutes) held on to, emptied since.
//
// So memory is back within about releaseEvery of a flood's end, and what
// it pinned within releaseEvery of being let go. A node at rest does
// nothing but the check; a busy one collects at most once each
// releaseEvery, a few milliseconds of CPU for a heap of this size.
const (
	releaseEvery = 10 * time.Second
	releaseAbove = 16 << 20
	releaseSlack = 8 << 20
	releaseFree  = 4 << 20
)

// releaseLoop runs a releaser every releaseEvery until the node closes.
func (n *Node) releaseLoop() {
	var r releaser
	n.every(releaseEvery, func() { r.release(readHeap()) })
}

// heapSample is what the heap holds and has not returned to the OS, in
// bytes: objects (live and dead), free spans and the unused part of
// spans.
type heapSample struct {
	objects, free, unused uint64
}

// held is the sum of s.
func (s heapSample) held() uint64 { return s.objects + s.free + s.unused }

var heapSamples = []rtmetrics.Sample{
	{Name: "/memory/classes/heap/objects:bytes"},
	{Name: "/memory/classes/heap/free:bytes"},
	{Name: "/memory/classes/heap/unused:bytes"},
}

// readHeap returns the heap's sample now.
func readHeap() heapSample {
	s := make([]rtmetrics.Sample, len(heapSamples))
	copy(s, heapSamples)
	rtmetrics.Read(s)
	v := func(i int) uint64 {
		if s[i].Value.Kind() == rtmetrics.KindUint64 {
			return s[i].Value.Uint64()
		}
		return 0
	}
	return heapSample{objects: v(0), free: v(1), unused: v(2)}
}

// releaser decides when to return the heap's free memory to the OS.
type releaser struct {
	// after is what the heap held after the last release (0: none yet).
	after uint64
}

// release collects and returns the heap's free memory to the OS when h
// calls for it (see releaseEvery); it reports whether it did.
func (r *releaser) release(h heapSample) bool {
	held := h.held()
	flood := held > releaseAbove && held > r.after+releaseSlack
	if !flood && h.free <= releaseFree {
		return false
	}
	debug.FreeOSMemory()
	r.after = readHeap().held()
	return true
}
