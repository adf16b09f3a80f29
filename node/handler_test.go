package node

import (
	"bytes"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p/core/network"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/proto"
)

// TestSyncPageShrinksWhenMemoryIsShort: the sync handler reserves twice the
// page budget from the page pool before reading the page, and keeps twice
// the page's bytes once it is read; with less memory it serves smaller
// pages, with too little it answers "too busy", and it releases what it
// reserved.
func TestSyncPageShrinksWhenMemoryIsShort(t *testing.T) {
	n := startNode(t, testConfig(false, time.Hour))
	publish(t, n, 250) // about 80 KB, more than minPageBytes
	req := &proto.SyncRequest{After: 0, Limit: core.MaxPageEvents}
	pageBytes := func(m proto.Message) int {
		total := 0
		for _, ev := range m.(*proto.SyncResponse).Events {
			total += len(ev)
		}
		return total
	}
	pool := func(capacity int64) *limits.Pool {
		p, err := limits.NewPool(capacity)
		if err != nil {
			t.Fatal(err)
		}
		n.pages = p
		return p
	}
	valued := limits.TierValued

	full := pool(1 << 30)
	resp, done := n.serveSync(valued, req)
	if held, want := full.Held(valued), int64(2*pageBytes(resp)); held != want {
		t.Fatalf("held %d bytes while writing the page, want twice its %d bytes", held, want/2)
	}
	if got := len(resp.(*proto.SyncResponse).Events); got != 250 {
		t.Fatalf("a page with memory to spare has %d events, want 250", got)
	}
	done()
	if held := full.Held(valued); held != 0 {
		t.Fatalf("%d bytes still held after done", held)
	}

	short := pool(2 * minPageBytes)
	resp, done = n.serveSync(valued, req)
	if held, want := short.Held(valued), int64(2*pageBytes(resp)); held != want {
		t.Fatalf("held %d, want twice the short page's %d bytes", held, want/2)
	}
	if got := pageBytes(resp); got > minPageBytes || got == 0 {
		t.Fatalf("short page of %d bytes, want 1..%d", got, minPageBytes)
	}
	if got := len(resp.(*proto.SyncResponse).Events); got >= 250 || !resp.(*proto.SyncResponse).More {
		t.Fatalf("short page has %d events (more=%v), want fewer than 250 and more", got, resp.(*proto.SyncResponse).More)
	}
	done()

	none := pool(2*minPageBytes - 1)
	resp, done = n.serveSync(valued, req)
	done()
	if e, ok := resp.(*proto.Error); !ok || e.Code != proto.CodeInternal {
		t.Fatalf("without memory: %+v, want a 'too busy' error", resp)
	}
	if held := none.Held(valued); held != 0 {
		t.Fatalf("%d bytes held after a refusal", held)
	}
}

// TestSyncPagesOfKnownPeersComeFirst: while strangers hold their whole
// share of the page pool, another stranger is told "too busy", and a peer
// that showed value still gets a full page.
func TestSyncPagesOfKnownPeersComeFirst(t *testing.T) {
	n := startNode(t, testConfig(false, time.Hour))
	publish(t, n, 10)
	p, err := limits.NewPool(16 * 2 * proto.MaxPageBytes)
	if err != nil {
		t.Fatal(err)
	}
	n.pages = p
	if !p.Reserve(limits.TierNew, p.Capacity()/4) {
		t.Fatal("strangers could not take their quarter")
	}
	req := &proto.SyncRequest{After: 0, Limit: core.MaxPageEvents}
	resp, done := n.serveSync(limits.TierNew, req)
	done()
	if e, ok := resp.(*proto.Error); !ok || e.Code != proto.CodeInternal {
		t.Fatalf("a stranger past the strangers' share: %+v, want 'too busy'", resp)
	}
	for _, tier := range []limits.Tier{limits.TierNormal, limits.TierValued} {
		resp, done := n.serveSync(tier, req)
		if r, ok := resp.(*proto.SyncResponse); !ok || len(r.Events) != 10 || p.Held(tier) == 0 {
			t.Fatalf("a %v peer while strangers hold their share: %+v (held %d)", tier, resp, p.Held(tier))
		}
		done()
	}
}

// TestStrangersPagesAreSmaller: a stranger's page is at most
// strangerPageBytes, a normal peer's normalPageBytes; a valued peer gets
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
		{limits.TierNew, strangerPageBytes, false},
		{limits.TierSuspect, strangerPageBytes, false},
		{limits.TierNormal, normalPageBytes, false},
		{limits.TierValued, proto.MaxPageBytes, true},
	} {
		resp, done := n.serveSync(tc.tier, req)
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

// TestPagesPerPeer: a peer is served maxPagesPerPeer pages at once; one
// more is "too busy", and costs the pool nothing.
func TestPagesPerPeer(t *testing.T) {
	n := startNode(t, testConfig(false, time.Hour))
	publish(t, n, 3)
	req := &proto.SyncRequest{After: 0, Limit: core.MaxPageEvents}
	st := n.run.Connect("p", network.DirOutbound, "", n.now(), n.mono(n.now())).Peer
	var dones []func()
	for i := range maxPagesPerPeer + 1 {
		resp, done := n.syncPage(st, req)
		dones = append(dones, done)
		_, page := resp.(*proto.SyncResponse)
		if page != (i < maxPagesPerPeer) {
			t.Fatalf("page %d at once: %+v", i+1, resp)
		}
	}
	held := n.pages.Held(limits.TierNew)
	for _, done := range dones {
		done()
	}
	if st.Link.pages.Load() != 0 || n.pages.Held(limits.TierNew) != 0 || held == 0 {
		t.Fatalf("after the pages: %d pages, %d bytes held (%d while served)", st.Link.pages.Load(), n.pages.Held(limits.TierNew), held)
	}
	if resp, done := n.syncPage(st, req); resp.(*proto.SyncResponse) == nil {
		t.Fatal("no page once the others were done")
	} else {
		done()
	}
}

func TestReplyTimeout(t *testing.T) {
	if got := replyTimeout(100); got < proto.PrefixTimeout+3*time.Second || got > proto.PrefixTimeout+3*time.Second+2*time.Millisecond {
		t.Errorf("replyTimeout of a small answer: %v", got)
	}
	if got := replyTimeout(proto.MaxPageBytes + 1<<20); got != proto.ResponseTimeout {
		t.Errorf("replyTimeout of more than a full page: %v, want the call's %v", got, proto.ResponseTimeout)
	}
	if small, large := replyTimeout(64<<10), replyTimeout(1<<20); large-small != 15*time.Second {
		t.Errorf("replyTimeout grows by %v from 64 KiB to 1 MiB, want 15 s (64 KiB/s)", large-small)
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
	held, doneHeld := n.serveSync(limits.TierValued, reqA)
	for range 8 {
		resp, done := n.serveSync(limits.TierValued, reqB)
		check(resp, wantB, "a page served while another is held")
		done()
		check(held, wantA, "the held page, after others were served")
	}
	doneHeld()
	for _, req := range []*proto.SyncRequest{reqB, reqA, reqB, reqA} {
		resp, done := n.serveSync(limits.TierValued, req)
		want := wantA
		if req == reqB {
			want = wantB
		}
		check(resp, want, "a page served after done")
		done()
	}
}
