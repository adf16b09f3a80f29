package node

import (
	"runtime"
	rtmetrics "runtime/metrics"
	"testing"
)

func heapReleased() uint64 {
	s := []rtmetrics.Sample{{Name: "/memory/classes/heap/released:bytes"}}
	rtmetrics.Read(s)
	return s[0].Value.Uint64()
}

// TestReleaseMemory: after a burst of garbage the heap holds more than
// releaseAbove, and releaseMemory returns the garbage's memory to the OS.
func TestReleaseMemory(t *testing.T) {
	var keep [][]byte
	for range 64 {
		keep = append(keep, make([]byte, 1<<20))
	}
	runtime.KeepAlive(keep)
	keep = nil // 64 MiB of garbage
	before := heapReleased()
	if !releaseMemory() {
		t.Fatal("64 MiB of garbage: nothing released")
	}
	if got := heapReleased() - before; got < 32<<20 {
		t.Errorf("released %d MiB, want at least 32", got>>20)
	}
}
