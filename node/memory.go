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
// the runtime's forced one, two minutes on). Every releaseEvery the node
// looks at what its heap holds (live and dead objects, free spans not yet
// returned, the unused part of spans); when that is above releaseAbove
// and has grown by releaseSlack since the last release, it collects and
// returns the free memory to the OS at once. So memory is back within
// about releaseEvery of a flood's end; a node at rest (a heap well under
// releaseAbove, or steady since the last release) does nothing but the
// check; a busy one with a big live heap collects at most once each
// releaseEvery, a few milliseconds of CPU for a heap of this size.
const (
	releaseEvery = 10 * time.Second
	releaseAbove = 16 << 20
	releaseSlack = 8 << 20
)

// releaseLoop runs a releaser every releaseEvery until the node closes.
func (n *Node) releaseLoop() {
	var r releaser
	n.every(releaseEvery, func() { r.release(heapHeld()) })
}

var heldSamples = []rtmetrics.Sample{
	{Name: "/memory/classes/heap/objects:bytes"},
	{Name: "/memory/classes/heap/free:bytes"},
	{Name: "/memory/classes/heap/unused:bytes"},
}

// heapHeld returns the bytes the heap holds and has not returned to the
// OS: objects (live and dead), free spans and the unused part of spans.
func heapHeld() uint64 {
	s := make([]rtmetrics.Sample, len(heldSamples))
	copy(s, heldSamples)
	rtmetrics.Read(s)
	var held uint64
	for i := range s {
		if s[i].Value.Kind() == rtmetrics.KindUint64 {
			held += s[i].Value.Uint64()
		}
	}
	return held
}

// releaser decides when to return the heap's free memory to the OS.
type releaser struct {
	// after is what the heap held after the last release (0: none yet).
	after uint64
}

// release collects and returns the heap's free memory to the OS when held
// (heapHeld) is above releaseAbove and releaseSlack above what it held
// after the last release; it reports whether it did.
func (r *releaser) release(held uint64) bool {
	if held <= releaseAbove || held <= r.after+releaseSlack {
		return false
	}
	debug.FreeOSMemory()
	r.after = heapHeld()
	return true
}
