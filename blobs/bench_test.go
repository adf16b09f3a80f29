package blobs

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// BenchmarkPlan runs a whole plan over 16 hints (half under backoff) with
// 4 failed attempts: NewPlan, 5 Next, 4 Report, on a Backoff holding
// 10,000 providers.
func BenchmarkPlan(b *testing.B) {
	bo := NewBackoff()
	for i := range 10000 {
		bo.Failed(peer.ID(fmt.Sprint("x", i)), base)
	}
	hints := ids(16, "h")
	for i := 0; i < 16; i += 2 {
		bo.Failed(hints[i], base)
	}
	src := hinted(hints)
	errFail := errors.New("failed")
	now := base.Add(time.Second)
	b.ReportAllocs()
	for b.Loop() {
		pl := NewPlan(src, "", bo, now)
		for {
			p, _, ok := pl.Next(now)
			if !ok {
				break
			}
			pl.Report(p, errFail, now)
			bo.Succeeded(p) // keep the backoff steady between iterations
		}
	}
}

// BenchmarkBackoffSkipped is the check Next makes per candidate.
func BenchmarkBackoffSkipped(b *testing.B) {
	bo := NewBackoff()
	for i := range 10000 {
		bo.Failed(peer.ID(fmt.Sprint("x", i)), base)
	}
	p := peer.ID("x5000")
	b.ReportAllocs()
	for b.Loop() {
		bo.Skipped(p, base)
	}
}

// BenchmarkBackoffFailedAtCap is a new failing provider when MaxTracked are
// tracked: one eviction and one insertion per op, the worst case. The
// 2^17 new ids cycle and time advances 1 ns per op, so each id has been
// evicted by the time it fails again.
func BenchmarkBackoffFailedAtCap(b *testing.B) {
	bo := NewBackoff()
	for i := range MaxTracked {
		bo.Failed(peer.ID(fmt.Sprint("x", i)), base)
	}
	newIDs := ids(1<<17, "n")
	now := base.Add(time.Second)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		bo.Failed(newIDs[i%len(newIDs)], now)
		now = now.Add(time.Nanosecond)
		i++
	}
	if bo.Len() != MaxTracked || bo.Evicted() < uint64(i) {
		b.Fatalf("len %d evicted %d after %d ops", bo.Len(), bo.Evicted(), i)
	}
}
