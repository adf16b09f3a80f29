package node

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/proto"
)

// spreadEvents signs n events.
func spreadEvents(t *testing.T, n int) []*eventlog.Event {
	t.Helper()
	key, _, _ := crypto.GenerateEd25519Key(nil)
	now := time.Now()
	out := make([]*eventlog.Event, n)
	for i := range out {
		out[i] = signed(t, key, now, fmt.Sprint("spread ", i))
	}
	return out
}

// spreadSources starts k nodes that each hold evs in an order of their
// own, serving sync at syncPerMin pages a minute.
func spreadSources(t *testing.T, k int, evs []*eventlog.Event, syncPerMin int) []*testNode {
	t.Helper()
	var out []*testNode
	for i := range k {
		cfg := testConfig(false, time.Hour)
		cfg.Limits.SyncPerMin = syncPerMin
		n := startNode(t, cfg)
		mine := slices.Clone(evs)
		rand.New(rand.NewPCG(uint64(i), 7)).Shuffle(len(mine), func(a, b int) { mine[a], mine[b] = mine[b], mine[a] })
		if _, err := n.events.Append(mine); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// TestCatchUpFromSeveralPeers: a new node behind four peers, whose logs
// order the same events differently, catches up from all four at once
// over real libp2p hosts (ADR 0052): it ends with every event once, the
// peers served shares, and each peer's cursor is at its head, from which
// sync by position carries on.
func TestCatchUpFromSeveralPeers(t *testing.T) {
	const events = 8000
	evs := spreadEvents(t, events)
	// 60 pages a minute: a burst of 15, then one a second; the catch-up
	// lasts until every peer has joined.
	srcs := spreadSources(t, 4, evs, 60)
	n := startNode(t, testConfig(false, time.Hour))
	n.sync.SpreadLag = 100
	for _, s := range srcs {
		connect(t, n, s)
	}
	waitHead(t, time.Minute, events, n)
	waitFor(t, 30*time.Second, "every peer's cursor at its head", func() bool {
		for _, s := range srcs {
			if n.run.Cursor(s.ID()) != events {
				return false
			}
		}
		return true
	})
	// Each peer that joined while shards were left served a share; one
	// whose hello came after the others' bursts took every shard (a slow
	// machine) only had its shards checked by fingerprint. At least two
	// served, none served every event.
	var served float64
	sharing := 0
	for i, s := range srcs {
		got := s.m.Value("wats_sync_events_served_total")
		if got >= events {
			t.Fatalf("peer %d served %v events of %d, want a share", i, got, events)
		}
		if got > 0 {
			sharing++
		}
		served += got
	}
	if sharing < 2 {
		t.Fatalf("%d peers served a share, want at least 2", sharing)
	}
	if served > 1.5*events {
		t.Fatalf("the peers served %v events for %d", served, events)
	}
	// Sync by position from the cursor carries on: one event more at a
	// peer comes in one page.
	more := spreadEvents(t, 1)
	if _, err := srcs[2].events.Append(more); err != nil {
		t.Fatal(err)
	}
	if _, err := n.SyncPeer(context.Background(), srcs[2].ID(), nil); err != nil {
		t.Fatal(err)
	}
	waitHead(t, 10*time.Second, events+1, n)
}

// liarHost is a host that says hello with sync-ids and a head of head,
// and answers every request by ids with page.
func liarHost(t *testing.T, head core.Cursor, page func(r *proto.SyncRequest) proto.Message) host.Host {
	return respondingPeer(t, func(req *proto.Request) proto.Message {
		if req.Type == proto.TypeHello {
			return &proto.Hello{Version: 1, Network: "test", Agent: "liar", Head: head,
				Features: []string{proto.FeatureSyncIDs}}
		}
		return page(req.Sync)
	})
}

// TestCatchUpDropsALiarAndAStall: among the peers of a catch-up, one
// answers with events outside the range asked for and one never answers;
// both are dropped, their shares go to the honest ones, and the node ends
// with every event once, the honest peers' cursors at their heads and the
// others' where they were.
func TestCatchUpDropsALiarAndAStall(t *testing.T) {
	const events = 3000
	evs := spreadEvents(t, events)
	srcs := spreadSources(t, 2, evs, 0)
	var outside []jsontext.Value
	for _, e := range evs[:10] {
		outside = append(outside, marshal(t, e))
	}
	liar := liarHost(t, events, func(r *proto.SyncRequest) proto.Message {
		return &proto.SyncResponse{Events: outside, Next: events, More: true} // whatever the range
	})
	ended := make(chan struct{})
	t.Cleanup(func() { close(ended) })
	stall := liarHost(t, events, func(r *proto.SyncRequest) proto.Message {
		<-ended // never answers while the test runs
		return &proto.Error{Code: proto.CodeInternal}
	})
	n := startNode(t, testConfig(false, time.Hour))
	n.sync.SpreadLag = 100
	n.sync.StallTimeout = 2 * time.Second
	ctx := context.Background()
	for _, h := range []host.Host{liar, stall} {
		if _, err := n.Connect(ctx, fmt.Sprintf("%s/p2p/%s", h.Addrs()[0], h.ID())); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range srcs {
		connect(t, n, s)
	}
	waitHead(t, time.Minute, events, n)
	waitFor(t, 30*time.Second, "the honest peers' cursors at their heads", func() bool {
		return n.run.Cursor(srcs[0].ID()) == events && n.run.Cursor(srcs[1].ID()) == events
	})
	for _, p := range []peer.ID{liar.ID(), stall.ID()} {
		if c := n.run.Cursor(p); c != 0 {
			t.Fatalf("the cursor of %s moved to %d", p, c)
		}
	}
}

// TestCatchUpReceivesEachEventOnce: a new node catches up from two peers
// over real libp2p hosts, one of which holds 24 events the other lacks
// (ADR 0057). Once the shards are fetched, this node holds those 24, so
// that each shard the first served differs at the second, which lists
// its ids (nothing new: nothing fetched), and each shard the second served
// that holds some of the 24 differs at the first, which lists its ids (the
// missing ones fetched alone). The peers serve every event once in all;
// fetched again whole (ADR 0052 alone), each shard that differs was
// served twice.
func TestCatchUpReceivesEachEventOnce(t *testing.T) {
	const events, extra = 10_000, 24
	evs := spreadEvents(t, events)
	// At most two of the extra events in each of the catch-up's 16 shards
	// (of the first hex digit of their ids, some 625 events each): fewer
	// runs than a shard's pages, fetched apart.
	key, _, _ := crypto.GenerateEd25519Key(nil)
	per := map[byte]int{}
	var more []*eventlog.Event
	for i := 0; len(more) < extra; i++ {
		e := signed(t, key, time.Now(), fmt.Sprint("only at the first peer ", i))
		if per[e.ID[0]] < 2 {
			per[e.ID[0]]++
			more = append(more, e)
		}
	}
	srcs := spreadSources(t, 2, evs, 0)
	if _, err := srcs[0].events.Append(more); err != nil {
		t.Fatal(err)
	}
	// The sources follow no heads: what they serve is the catch-up's, not
	// the sync by position that brings them back the events the new node
	// announces it stored.
	for _, s := range srcs {
		s.heads.Close()
	}
	n := startNode(t, testConfig(false, time.Hour))
	n.sync.SpreadLag = 100
	// The peer that lacks the 24 is greeted first, while this node holds
	// nothing: a peer greeted later syncs from this node what its hello
	// names (recordHello), and this node's first events are that peer's
	// own. Greeted second, it could sync from this node some of the 24
	// and its head move past the one this test waits for.
	connect(t, n, srcs[1])
	connect(t, n, srcs[0])
	waitHead(t, time.Minute, events+extra, n)
	for i, want := range []core.Cursor{events + extra, events} {
		if got := srcs[i].events.Head(); got != want {
			t.Fatalf("peer %d holds %d events, not its own %d: it synced from this node", i, got, want)
		}
	}
	waitFor(t, 30*time.Second, "every peer's cursor at its head", func() bool {
		return n.run.Cursor(srcs[0].ID()) == events+extra && n.run.Cursor(srcs[1].ID()) == events
	})
	var served float64
	for _, s := range srcs {
		served += s.m.Value("wats_sync_events_served_total")
	}
	if served != events+extra {
		t.Fatalf("the peers served %v events for %d", served, events+extra)
	}
}
