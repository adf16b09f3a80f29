package node

import (
	"bytes"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p/core/network"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/peers"
	"github.com/wats-network/wats/proto"
)

// TestStrangersPagesAreSmaller: a stranger's page is at most
// peers.StrangerPageBytes, a normal peer's peers.NormalPageBytes; a valued peer gets
// the full proto.MaxPageBytes.
func TestStrangersPagesAreSmaller(t *testing.T) {
	n := startNode(t, testConfig(false, time.Hour))
	publishLarge(t, n, 80, 15<<10) // about 1.2 MB
	req := &proto.SyncRequest{After: 0, Limit: core.MaxPageEvents}
	for _, tc := range []struct {
		tier limits.Tier
		most int
		all  bool
	}{
		{limits.TierNew, peers.StrangerPageBytes, false},
		{limits.TierSuspect, peers.StrangerPageBytes, false},
		{limits.TierNormal, peers.NormalPageBytes, false},
		{limits.TierValued, proto.MaxPageBytes, true},
	} {
		resp, done := servePage(t, n, n.run.PageFor(tc.tier), req)
		page := resp.(*proto.SyncResponse)
		bytes := 0
		for _, ev := range page.Events {
			bytes += len(ev)
		}
		done()
		if bytes > tc.most || bytes == 0 || (len(page.Events) == 80) != tc.all {
			t.Errorf("%v: a page of %d events, %d bytes; want at most %d bytes, all 80: %v", tc.tier, len(page.Events), bytes, tc.most, tc.all)
		}
	}
}

// TestPagesPerPeer: a peer is served peers.MaxPagesPerPeer pages at once; one
// more is refused "too busy" with peers.BusyPeerRetry to wait, and costs
// the pool nothing.
func TestPagesPerPeer(t *testing.T) {
	n := startNode(t, testConfig(false, time.Hour))
	publish(t, n, 3)
	req := &proto.SyncRequest{After: 0, Limit: core.MaxPageEvents}
	st := n.run.Connect("p", network.DirOutbound, "", n.now(), n.mono(n.now())).Peer
	var dones []func()
	for i := range peers.MaxPagesPerPeer + 1 {
		resp, done := n.syncPage(st, req, noReset)
		dones = append(dones, done)
		_, page := resp.(*proto.SyncResponse)
		busy, _ := resp.(*proto.Refused)
		if page != (i < peers.MaxPagesPerPeer) || !page && (busy == nil || busy.RetryAfterMs != peers.BusyPeerRetry.Milliseconds()) {
			t.Fatalf("page %d at once: %+v", i+1, resp)
		}
	}
	held := pagesHeld(n, limits.TierNew)
	for _, done := range dones {
		done()
	}
	after, pages := n.run.PagesHeld(limits.TierNew, st)
	if pages != 0 || after != 0 || held == 0 {
		t.Fatalf("after the pages: %d pages, %d bytes held (%d while served)", pages, after, held)
	}
	if resp, done := n.syncPage(st, req, noReset); resp.(*proto.SyncResponse) == nil {
		t.Fatal("no page once the others were done")
	} else {
		done()
	}
}

// TestSyncPageBuffersAreRecycled: a page is read into a recycled buffer
// that goes back only with done, once the response is written: other
// pages served meanwhile, in other buffers, leave it as it was; the pages
// served after done, which may reuse it, are right.
func TestSyncPageBuffersAreRecycled(t *testing.T) {
	n := startNode(t, testConfig(false, time.Hour))
	publish(t, n, 250)
	page := func(after core.Cursor) (*proto.SyncRequest, []jsontext.Value) {
		evs, _, _, err := n.events.Page(after, core.MaxPageEvents, proto.MaxPageBytes)
		if err != nil || len(evs) == 0 {
			t.Fatalf("page after %d: %d events, %v", after, len(evs), err)
		}
		return &proto.SyncRequest{After: after, Limit: core.MaxPageEvents}, evs
	}
	check := func(resp proto.Message, want []jsontext.Value, when string) {
		t.Helper()
		got := resp.(*proto.SyncResponse).Events
		if len(got) != len(want) {
			t.Fatalf("%s: %d events, want %d", when, len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("%s: event %d is\n%s\nwant\n%s", when, i, got[i], want[i])
			}
		}
	}
	reqA, wantA := page(0)
	reqB, wantB := page(100)
	held, doneHeld := servePage(t, n, n.run.PageFor(limits.TierValued), reqA)
	for range 8 {
		resp, done := servePage(t, n, n.run.PageFor(limits.TierValued), reqB)
		check(resp, wantB, "a page served while another is held")
		done()
		check(held, wantA, "the held page, after others were served")
	}
	doneHeld()
	for _, req := range []*proto.SyncRequest{reqB, reqA, reqB, reqA} {
		resp, done := servePage(t, n, n.run.PageFor(limits.TierValued), req)
		want := wantA
		if req == reqB {
			want = wantB
		}
		check(resp, want, "a page served after done")
		done()
	}
}

// pagesHeld is what the sync pages served to peers of tier t hold.
func pagesHeld(n *testNode, t limits.Tier) int64 {
	held, _ := n.run.PagesHeld(t, nil)
	return held
}

// servePage reads req into pg (peers.Page.Read), as syncPage does.
func servePage(t *testing.T, n *testNode, pg *peers.Page, req *proto.SyncRequest) (proto.Message, func()) {
	t.Helper()
	resp, done, err := pg.Read(n.events, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp, done
}

// noReset is the reset of a stream that syncPage is not given.
func noReset() error { return nil }
