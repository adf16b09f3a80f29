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
// releaseEvery the node looks at its heap (heapSample); it collects and
// returns the free memory to the OS at once when either
//
//   - no collection ran since the last look (the node is nearly idle), and
//     what the heap holds (live and dead objects, free spans not yet
//     returned, the unused part of spans) is above releaseAbove, more than
//     releaseSlack above the least it held at any look, and more than
//     releaseStep above what it held after the last release: the garbage
//     a flood left, back within two looks of its end; or
//   - its free spans not yet returned are above releaseFree: spans that
//     objects outliving a flood (gossipsub's memory of seen messages,
//     peers' records kept for minutes) held on to, emptied since.
//
// A node at rest (under releaseAbove) does nothing but the look; a busy
// one, whose collections run anyway, releases only free spans, at most
// once each releaseEvery, a few milliseconds of CPU for a heap of this
// size.
const (
	releaseEvery = 10 * time.Second
	releaseAbove = 16 << 20
	releaseSlack = 8 << 20
	releaseStep  = 1 << 20
	releaseFree  = 4 << 20
)

// releaseLoop runs a releaser every releaseEvery until the node closes.
func (n *Node) releaseLoop() {
	var r releaser
	n.every(releaseEvery, func() { r.release(readHeap()) })
}

// heapSample is what the heap holds and has not returned to the OS, in
// bytes: objects (live and dead), free spans and the unused part of
// spans; and how many collections have run.
type heapSample struct {
	objects, free, unused uint64
	cycles                uint64
}

// held is what s holds: objects, free spans and the unused part of spans.
func (s heapSample) held() uint64 { return s.objects + s.free + s.unused }

var heapSamples = []rtmetrics.Sample{
	{Name: "/memory/classes/heap/objects:bytes"},
	{Name: "/memory/classes/heap/free:bytes"},
	{Name: "/memory/classes/heap/unused:bytes"},
	{Name: "/gc/cycles/total:gc-cycles"},
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
	return heapSample{objects: v(0), free: v(1), unused: v(2), cycles: v(3)}
}

// releaser decides when to return the heap's free memory to the OS.
type releaser struct {
	looked bool
	// floor is the least the heap held at any look; after what it held
	// after the last release (0: none yet); cycles the collections run
	// as of the last look (or release).
	floor, after, cycles uint64
}

// release collects and returns the heap's free memory to the OS when h
// calls for it (see releaseEvery); it reports whether it did.
func (r *releaser) release(h heapSample) bool {
	held := h.held()
	if !r.looked || held < r.floor {
		r.floor, r.looked = held, true
	}
	idle := h.cycles == r.cycles
	r.cycles = h.cycles
	stale := idle && held > releaseAbove && held > r.floor+releaseSlack && held > r.after+releaseStep
	if !stale && h.free <= releaseFree {
		return false
	}
	debug.FreeOSMemory()
	post := readHeap()
	r.after, r.cycles = post.held(), post.cycles
	return true
}
