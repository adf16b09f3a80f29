package limits_test

import (
	"context"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/limits"

	"github.com/wats-network/wats/core"
)

// The node's admission check: one Table for the process, time from a
// monotonic base, a refusal worded as ADR 0014 says, and "peer throttled"
// logged within its caps.
func ExampleTable() {
	table, err := limits.NewTable(limits.DefaultConfig(), nil)
	if err != nil {
		panic(err)
	}
	throttle := limits.NewLogCap()
	start := time.Now()
	now := func() int64 { return int64(time.Since(start)) } // monotonic

	p := peer.ID("a peer id")
	var served, refused int
	for range 160 {
		ok, retryAfter := table.Allow(p, core.Sync, now())
		if ok {
			served++
			continue
		}
		refused++
		// Answer {"type":"refused","reason":limits.Refusal(core.Sync),
		// "retry_after_ms":limits.RetryAfterMs(retryAfter)}.
		_ = retryAfter
		if throttle.ShouldLog(p, limits.ThrottledTopic(core.Sync), now()) {
			fmt.Println("peer throttled: type=sync")
		}
	}
	fmt.Println(served, "served,", refused, "refused:", limits.Refusal(core.Sync))
	fmt.Println(table.Snapshot())
	// Output:
	// peer throttled: type=sync
	// 150 served, 10 refused: rate limited (sync): retry later
	// hello 0/0 sync 150/10 replicate 0/0 crash_report 0/0 (accepted/refused), 0 on the shared budget at cap, 1 peers tracked
}

// The steps of a bucket, with time passed in.
func ExampleBucket() {
	r, _ := limits.NewRate(10) // crash_report's default
	b := limits.NewBucket(r)
	fmt.Println(r)
	for _, at := range []time.Duration{0, 0, 0, 5 * time.Second, 6 * time.Second} {
		ok, retryAfter := b.Allow(int64(at))
		fmt.Println(at, ok, retryAfter)
	}
	// Output:
	// 10/min (burst 2, one every 6s)
	// 0s true 0s
	// 0s true 0s
	// 0s false 6s
	// 5s false 1s
	// 6s true 0s
}

// A sync client pacing itself to the rate the peer advertised in hello.
func ExamplePacer() {
	pacer := limits.NewPacer(600) // the peer's limits.sync_per_min
	ctx := context.Background()
	for page := 0; page < 3; page++ {
		if err := pacer.Wait(ctx); err != nil {
			return
		}
		// send the sync request; on a "refused" response:
		//	pacer.Refused(time.Duration(resp.RetryAfterMs) * time.Millisecond)
	}
	fmt.Println(pacer.Rate())
	// Output:
	// 600/min (burst 149, one every 100ms)
}

// Blob fetch slots: fetch what fits, skip the rest (ADR 0014).
func ExampleSlots() {
	slots, _ := limits.NewSlots(limits.DefaultConfig().BlobFetchesPerPeer)
	p := peer.ID("a peer id")
	var fetching, skipped int
	for range 6 {
		release, ok := slots.TryAcquire(p)
		if !ok {
			skipped++
			continue
		}
		fetching++
		defer release() // when the fetch ends
	}
	fmt.Println(fetching, "fetching,", skipped, "skipped")
	// Output:
	// 4 fetching, 2 skipped
}
