package blobs

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
)

// TestAutoFetchWorkers: a job queued wakes an idle worker, which runs it;
// a job whose blob is complete is not queued, and a retry of one
// completed meanwhile ends without a fetch; a fetch that asks for a retry
// runs again after RetryDelay, until MaxRetries, then GaveUp is told;
// past PeerShare a peer's jobs are dropped and Dropped is told.
func TestAutoFetchWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		release := make(chan struct{})
		runs := map[cid.Cid]int{}
		complete := map[cid.Cid]bool{}
		var gaveUp []cid.Cid
		dropped := 0
		a := NewAutoFetch(AutoFetchOptions{
			Schedule: &ScheduleOptions{RetryDelay: func(int) time.Duration { return time.Second }},
			Complete: func(j Job) bool { mu.Lock(); defer mu.Unlock(); return complete[j.CID] },
			Fetch: func(_ context.Context, j Job) bool {
				if j.Source == "hold" {
					<-release
				}
				mu.Lock()
				defer mu.Unlock()
				runs[j.CID]++
				return j.Source == "failing"
			},
			Dropped: func(Job, Verdict) { mu.Lock(); dropped++; mu.Unlock() },
			GaveUp:  func(j Job) { mu.Lock(); gaveUp = append(gaveUp, j.CID); mu.Unlock() },
		})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var wg sync.WaitGroup
		for range AutoFetchWorkers {
			wg.Go(func() { a.Work(ctx) })
		}
		ok, failing, done := testCID(t, "ok"), testCID(t, "failing"), testCID(t, "done")
		complete[done] = true
		if a.Add(Job{CID: done, Size: 1, Source: "gossip"}) {
			t.Fatal("a job for a complete blob was queued")
		}
		if !a.Add(Job{CID: ok, Size: 1, Source: "gossip"}) || !a.Add(Job{CID: failing, Size: 1, Source: "failing"}) {
			t.Fatal("jobs not queued")
		}
		synctest.Wait()
		mu.Lock()
		if runs[ok] != 1 || runs[failing] != 1 {
			t.Fatalf("runs after the queue: %v", runs)
		}
		mu.Unlock()
		time.Sleep(time.Hour) // every retry's time
		synctest.Wait()
		mu.Lock()
		if runs[ok] != 1 || runs[failing] != MaxRetries+1 || len(gaveUp) != 1 || gaveUp[0] != failing {
			t.Fatalf("after the retries: runs %v, gave up %v; want %d runs of the failing one", runs, gaveUp, MaxRetries+1)
		}
		mu.Unlock()

		// Past a peer's share (its jobs held running or waiting): dropped,
		// and told.
		from := peer.ID("flooder")
		for i := range PeerShare + 1 {
			a.Add(Job{CID: testCID(t, "share", i), Size: 1, From: from, Source: "hold"})
		}
		mu.Lock()
		if dropped != 1 {
			t.Errorf("%d jobs dropped past the peer's share of %d, want 1", dropped, PeerShare)
		}
		mu.Unlock()
		close(release)
		cancel()
		wg.Wait()
	})
}

// testCID returns the CID of a raw block of the text of parts.
func testCID(t *testing.T, parts ...any) cid.Cid {
	c, err := cid.V1Builder{Codec: cid.Raw, MhType: 0x1e}.Sum([]byte(fmt.Sprint(parts...)))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
