package blobs

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/eventlog"
)

// TestAutoFetchQueueBound: the service's wiring of the scheduler's bounds
// (QueueLen blobs wait at most, PeerShare of one peer's; their
// own tests are blobs' testdata/schedule.txt): a blob dropped is counted,
// a blob already queued is not queued twice, and a bad CID is not counted
// as dropped.
func TestAutoFetchQueueBound(t *testing.T) {
	st, _, _ := newStore(t, StoreOptions{})
	counts := map[[2]string]int{}
	s := NewService(ServiceOptions{Host: newHost(t), Store: st, Hints: NewHints(DefaultMaxHintBlobs, DefaultMaxHintBytes),
		AutoFetch: true, Counted: func(source, outcome string) { counts[[2]string{source, outcome}]++ },
		Log: slog.New(slog.DiscardHandler)}) // no workers
	t.Cleanup(s.Close)
	ref := func(i int) eventlog.BlobRef {
		c, err := cid.V1Builder{Codec: cid.Raw, MhType: 0x1e}.Sum([]byte(fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		return eventlog.BlobRef{CID: c.String(), Size: uint64(len(fmt.Sprint(i)))}
	}
	// arrive hands the blobs first..first+k-1, as one event from from, to
	// auto-fetch.
	arrive := func(first, k int, from peer.ID) {
		ev := &eventlog.Event{}
		for i := range k {
			ev.Blobs = append(ev.Blobs, ref(first+i))
		}
		s.Queue([]*eventlog.Event{ev}, from, "gossip")
	}
	dropped := func() int { return counts[[2]string{"gossip", "dropped"}] }
	queued := func() int { return s.AutoFetch().Scheduler().Len() }
	arrive(0, QueueLen, "")
	arrive(0, 1, "") // queued already
	if queued() != QueueLen || dropped() != 0 {
		t.Fatalf("at the bound: %d queued, %v dropped; want %d, 0", queued(), dropped(), QueueLen)
	}
	arrive(QueueLen, 1, "")
	if queued() != QueueLen || dropped() != 1 {
		t.Fatalf("past the bound: %d queued, %v dropped; want %d, 1", queued(), dropped(), QueueLen)
	}
	s.Queue([]*eventlog.Event{{Blobs: []eventlog.BlobRef{{CID: "not a cid", Size: 1}}}}, "", "gossip")
	if dropped() != 1 {
		t.Fatal("a bad CID was counted as dropped from a full queue")
	}
	drain := func() {
		for {
			j, ok := s.AutoFetch().Scheduler().Next()
			if !ok {
				return
			}
			s.AutoFetch().Scheduler().Done(j, false, time.Now())
		}
	}

	// One peer's events hold at most PeerShare places.
	drain()
	const flooder, other = peer.ID("flooder"), peer.ID("other")
	arrive(10_000, PeerShare+1, flooder)
	arrive(20_000, 1, other)
	if _, _, _, share := s.AutoFetch().Scheduler().Stats(flooder); queued() != PeerShare+1 || dropped() != 2 || share != PeerShare {
		t.Fatalf("per peer: %d queued, %v dropped, %d of the flooder's; want %d, 2, %d",
			queued(), dropped(), share, PeerShare+1, PeerShare)
	}
	drain()
	if w, r, rt, share := s.AutoFetch().Scheduler().Stats(flooder); w+r+rt+share != 0 {
		t.Fatalf("after the queue drained: waiting %d running %d retrying %d, flooder's share %d", w, r, rt, share)
	}
}
