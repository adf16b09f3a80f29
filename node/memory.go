package node

import (
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"time"
)

// Giving memory back after a flood (ADR 0031). A flood (a Sybil churn of
// tens of thousands of connections a minute, a spam flood) grows the Go
// heap; once it is over, the garbage it left and the free spans stay with
// the process until the next collections and the runtime's slow scavenger
// return them, which can take many minutes on a node that is then nearly
// idle. Once a minute, when the heap holds more than releaseAbove (a node
// at rest holds well under it), the node collects and returns the free
// memory to the OS at once: one collection a minute at most, a few
// milliseconds of CPU for a heap of this size. On a node at rest that is
// one check a minute and nothing more.
const (
	releaseEvery = time.Minute
	releaseAbove = 16 << 20
)

// releaseLoop runs releaseMemory every releaseEvery until the node closes.
func (n *Node) releaseLoop() { n.every(releaseEvery, func() { releaseMemory() }) }

var releaseSamples = []rtmetrics.Sample{
	{Name: "/memory/classes/heap/objects:bytes"},
	{Name: "/memory/classes/heap/free:bytes"},
	{Name: "/memory/classes/heap/unused:bytes"},
}

// releaseMemory collects and returns the heap's free memory to the OS
// when the heap (objects, free and unused spans not yet returned) holds
// more than releaseAbove; it reports whether it did.
func releaseMemory() bool {
	s := make([]rtmetrics.Sample, len(releaseSamples))
	copy(s, releaseSamples)
	rtmetrics.Read(s)
	var held uint64
	for i := range s {
		if s[i].Value.Kind() == rtmetrics.KindUint64 {
			held += s[i].Value.Uint64()
		}
	}
	if held <= releaseAbove {
		return false
	}
	debug.FreeOSMemory()
	return true
}
