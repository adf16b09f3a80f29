package blobs_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/wats-network/wats/blobs"
)

// A replicate request from r for a blob hinted by a and b: r is tried
// first, fails fast and is backed off; a serves the blob.
func ExamplePlan() {
	start := time.Date(2026, 10, 16, 12, 0, 0, 0, time.UTC)
	backoff := blobs.NewBackoff()
	if err := blobs.CheckBeforeFetch(3<<20, blobs.DefaultMaxBlobBytes, 0, blobs.DefaultQuotaBytes); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("chunks:", blobs.ChunksFor(3<<20, blobs.ChunkSize))

	now := start
	src := blobs.Sources{First: "r", Named: []peer.AddrInfo{{ID: "a"}, {ID: "b"}}}
	pl := blobs.NewPlan(src, "self", backoff, now)
	outcomes := map[peer.ID]error{"r": errors.New("not found")}
	for {
		p, deadline, ok := pl.Next(now)
		if !ok {
			break
		}
		fmt.Printf("try %s until +%v\n", string(p), deadline.Sub(start))
		now = now.Add(2 * time.Second)
		pl.Report(p, outcomes[p], now)
	}
	skipped, until := backoff.Skipped("r", now)
	fmt.Println("done:", pl.Done(), pl.Err())
	fmt.Println("r skipped:", skipped, "until +", until.Sub(start))
	// Output:
	// chunks: 3
	// try r until +1m0s
	// try a until +1m2s
	// done: true <nil>
	// r skipped: true until + 32s
}

// ExampleCheckBeforeFetch refuses a blob over max_blob_bytes before any
// request.
func ExampleCheckBeforeFetch() {
	err := blobs.CheckBeforeFetch(blobs.DefaultMaxBlobBytes+1, blobs.DefaultMaxBlobBytes, 0, blobs.DefaultQuotaBytes)
	fmt.Println(errors.Is(err, blobs.ErrTooLarge), err)
	// Output:
	// true blobs: blob too large: declared size 64.0 MiB (67108865 bytes), more than blobs.max_blob_bytes = 67108864 (64.0 MiB)
}
