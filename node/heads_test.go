package node

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/peers"
	"github.com/wats-network/wats/proto"
)

func pulls(n *testNode, outcome string) float64 {
	return n.m.Value("wats_heads_pulls_total", outcome)
}

// TestHeadsPullWhatGossipDropped: three nodes in a line A - B - C, sync an
// hour apart; B's gossip drops A's second event unseen, as a full queue on
// the way would (no gap is reported, so no sync follows at once). A's
// announcement names it, and B pulls it within 2 s of its publication;
// then B's announcement names it to C, which pulls it from B. The other
// events came by gossip, and nothing else was pulled.
func TestHeadsPullWhatGossipDropped(t *testing.T) {
	a := startNode(t, testConfig(true, time.Hour))
	b := startNode(t, testConfig(true, time.Hour))
	c := startNode(t, testConfig(true, time.Hour))
	connect(t, b, a)
	connect(t, c, b)
	waitGossipMesh(t, 10*time.Second, map[*testNode]int{a: 1, b: 2, c: 1})

	var dropped atomic.Value // the id to drop
	dropped.Store("")
	drop := func(id string) bool { return id == dropped.Load().(string) }
	b.dropGossip.Store(&drop)

	publish(t, a, 1)
	waitHead(t, 10*time.Second, 1, b, c)
	ev, err := a.sign("note", jsontext.Value(`{"dropped":true}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	dropped.Store(ev.ID)
	start := time.Now()
	if err := a.storeAndGossip(context.Background(), ev, "local", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the dropped event at b", func() bool { return b.has(ev.ID) })
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the dropped event reached b after %v, want within 2 s", d)
	}
	waitFor(t, 10*time.Second, "the dropped event at c", func() bool { return c.has(ev.ID) })
	publish(t, a, 1)
	waitHead(t, 10*time.Second, 3, b, c)
	if got := storedBy(b, "sync"); got != 1 {
		t.Errorf("b stored %v events by sync, want 1 (the dropped one)", got)
	}
	if got := storedBy(c, "sync"); got != 1 {
		t.Errorf("c stored %v events by sync, want 1", got)
	}
	// The events gossip delivered are passed over, not pulled: the cursors
	// reach the heads.
	waitFor(t, 5*time.Second, "the cursors b→a and c→b at 3", func() bool {
		return b.run.Cursor(a.ID()) == 3 && c.run.Cursor(b.ID()) == 3
	})
	if got := pulls(b, "stored") + pulls(c, "stored"); got != 2 {
		t.Errorf("%v pulls stored, want 2", got)
	}
}

// announcer is a raw host that completes hello with the node (advertising
// heads and sync_per_min syncPerMin, head 0), opens a Heads stream and
// announces events the node lacks, each announcement one more, and serves
// them one a page, counting the sync requests and when each came.
type announcer struct {
	h     host.Host
	mu    sync.Mutex
	at    []time.Time
	head  atomic.Int64
	stop  chan struct{}
	evs   []jsontext.Value
	short []core.ShortID
}

func newAnnouncer(t *testing.T, syncPerMin int64, events int) *announcer {
	t.Helper()
	key, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	a := &announcer{stop: make(chan struct{})}
	for i := range events {
		ev := signed(t, key, time.Now(), fmt.Sprint("announced ", i))
		a.evs = append(a.evs, marshal(t, ev))
		id, err := core.ParseShortID(ev.ID[:2*core.ShortIDBytes])
		if err != nil {
			t.Fatal(err)
		}
		a.short = append(a.short, id)
	}
	a.h = respondingPeer(t, func(req *proto.Request) proto.Message {
		if req.Type == proto.TypeHello {
			return &proto.Hello{Version: 1, Network: "test", Agent: "announcer", Features: []string{proto.FeatureHeads},
				Limits: &proto.HelloLimits{SyncPerMin: syncPerMin}}
		}
		a.mu.Lock()
		a.at = append(a.at, time.Now())
		a.mu.Unlock()
		after := req.Sync.After
		page := &proto.SyncResponse{Next: after}
		if after < core.Cursor(len(a.evs)) {
			page.Events, page.Next = a.evs[after:after+1], after+1
			page.More = page.Next < core.Cursor(a.head.Load())
		}
		return page
	})
	t.Cleanup(func() { close(a.stop) })
	return a
}

// announce opens a Heads stream to n and announces one more event every
// every, until the test ends or the events run out.
func (a *announcer) announce(t *testing.T, n *testNode, every time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := a.h.NewStream(ctx, n.ID(), proto.HeadsID)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer func() {
			<-a.stop // reset only at the end of the test: unread frames would go with it
			s.Reset()
		}()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for i := range a.evs {
			a.head.Store(int64(i + 1))
			b, err := proto.MarshalHeads(&proto.Heads{Head: core.Cursor(i + 1), IDs: a.short[i : i+1]})
			if err != nil || proto.WriteFrame(s, b) != nil {
				return
			}
			select {
			case <-a.stop:
				return
			case <-tick.C:
			}
		}
	}()
}

// helloed connects a to n, waits for hello, and opens a Heads stream of
// a's to n (a.announce opens another).
func (a *announcer) helloed(t *testing.T, n *testNode) network.Stream {
	t.Helper()
	dialRaw(t, a.h, n)
	waitFor(t, 10*time.Second, "hello", func() bool { return n.helloed(a.h.ID()) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := a.h.NewStream(ctx, n.ID(), proto.HeadsID)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// requests returns when each sync request came.
func (a *announcer) requests() []time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]time.Time(nil), a.at...)
}

// TestHeadsPullsKeepToThePeersLimits: a stranger that announces an event
// the node lacks every 20 ms makes the node pull, but never faster than
// the sync rate it advertised (120 a minute: a burst of 29 with the
// pacer's reserve, then one every 500 ms), however fast it announces: the
// k-th request comes no sooner than (k - 29) × 500 ms after the first.
func TestHeadsPullsKeepToThePeersLimits(t *testing.T) {
	n := startNode(t, testConfig(false, time.Hour))
	a := newAnnouncer(t, 120, 200)
	dialRaw(t, a.h, n)
	waitFor(t, 10*time.Second, "hello", func() bool { return n.helloed(a.h.ID()) })
	a.announce(t, n, 20*time.Millisecond)
	const k = 36
	waitFor(t, 20*time.Second, fmt.Sprintf("%d sync requests", k), func() bool { return len(a.requests()) >= k })
	at := a.requests()
	for i := 29; i < len(at); i++ {
		if min := time.Duration(i-28) * 500 * time.Millisecond; at[i].Sub(at[0]) < min-50*time.Millisecond {
			t.Fatalf("request %d came %v after the first, sooner than the advertised rate allows (%v)", i+1, at[i].Sub(at[0]), min)
		}
	}
	if got := n.events.Head(); got < k-1 {
		t.Errorf("the node holds %d of the events pulled, want at least %d", got, k-1)
	}
}

// TestHeadsPullBudgetOfStrangers: peers without standing that advertise
// no limit share the strangers' pull budget (peers.StrangerPullPerMin, a burst of
// 60): two of them announcing fast get no more pulls together than that
// burst and its rate allow.
func TestHeadsPullBudgetOfStrangers(t *testing.T) {
	n := startNode(t, testConfig(false, time.Hour))
	var ans []*announcer
	for range 2 {
		a := newAnnouncer(t, 0, 400)
		dialRaw(t, a.h, n)
		waitFor(t, 10*time.Second, "hello", func() bool { return n.helloed(a.h.ID()) })
		ans = append(ans, a)
	}
	start := time.Now()
	for _, a := range ans {
		a.announce(t, n, 5*time.Millisecond)
	}
	waitFor(t, 20*time.Second, "80 pulls", func() bool { return len(ans[0].requests())+len(ans[1].requests()) >= 80 })
	var all []time.Time
	for _, a := range ans {
		all = append(all, a.requests()...)
	}
	// The 80th request needs the burst of 60 and 20 tokens at 4 a second.
	if d := time.Since(start); d < 5*time.Second-100*time.Millisecond {
		t.Errorf("80 pulls from two strangers in %v, faster than their shared budget allows (5 s)", d)
	}
	if len(all) < 80 {
		t.Fatalf("%d requests", len(all))
	}
}

// TestHeadsBadAnnouncement: an announcement that does not decode resets
// the stream and counts as an invalid message of its peer; the node goes
// on reading a new stream of the same peer.
func TestHeadsBadAnnouncement(t *testing.T) {
	n := startNode(t, testConfig(false, time.Hour))
	a := newAnnouncer(t, 0, 3)
	s := a.helloed(t, n)
	if err := proto.WriteFrame(s, []byte(`{"head":"2","ids":["x"]}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(make([]byte, 1)); err == nil {
		t.Fatal("the stream of a bad announcement was not reset")
	}
	waitFor(t, 5*time.Second, "the invalid message counted", func() bool {
		st := n.run.Get(a.h.ID())
		return st != nil && st.Count(peers.Invalid) == 1
	})
	a.announce(t, n, 10*time.Millisecond)
	waitHead(t, 10*time.Second, 3, n)
}

// TestHeadsAnnouncerIdle: a node announces its head once when its stream
// opens (0 for an empty log), nothing more while its log does not grow,
// one announcement when it does, and stops when the peer leaves.
func TestHeadsAnnouncerIdle(t *testing.T) {
	a := startNode(t, testConfig(false, time.Hour))
	b := startNode(t, testConfig(false, time.Hour))
	connect(t, b, a)
	waitFor(t, 10*time.Second, "the heads streams", func() bool {
		return a.m.Value("wats_heads_streams_total") == 1 && b.m.Value("wats_heads_streams_total") == 1
	})
	out := func(n *testNode) float64 { return n.m.Value("wats_heads_announcements_total", "out") }
	waitFor(t, 5*time.Second, "the first announcements (head 0)", func() bool { return out(a) == 1 && out(b) == 1 })
	publish(t, a, 1)
	waitHead(t, 10*time.Second, 1, b)
	waitFor(t, 5*time.Second, "b's cursor at a's head", func() bool { return b.run.Cursor(a.ID()) == 1 })
	waitFor(t, 5*time.Second, "b's announcement of the event it stored", func() bool { return out(b) == 2 })
	if out(a) != 2 {
		t.Errorf("announcements out of a: %v; want 2 (head 0, then the event)", out(a))
	}
	st := a.run.Get(b.ID())
	if st == nil || !st.Link.announcing.Load() {
		t.Fatal("a has no announcer to b")
	}
	if err := a.Host().Network().ClosePeer(b.ID()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the announcer stopped", func() bool { return !st.Link.announcing.Load() })
}

// spamOpenLoop publishes valid events of s's own key at rate a second,
// open loop (never waiting for the targets: what its queues cannot take,
// its gossipsub drops), until ctx ends; it returns how many it published.
func (s *spammer) spamOpenLoop(ctx context.Context, rate int, published *atomic.Int64) int {
	key := s.h.Peerstore().PrivKey(s.h.ID())
	start := time.Now()
	i := 0
	for ; ctx.Err() == nil; i++ {
		published.Store(int64(i))
		if wait := time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))); wait > 0 {
			select {
			case <-ctx.Done():
				return i
			case <-time.After(wait):
			}
		}
		ev, err := eventlog.New(key, time.Now(), "note", jsontext.Value(fmt.Sprintf(`{"spam":%d}`, i)), nil)
		if err != nil {
			return i
		}
		raw, _ := ev.Marshal()
		env, err := proto.MarshalEnvelope(&proto.Envelope{Event: raw})
		if err != nil {
			return i
		}
		_ = s.topic.Publish(ctx, env)
	}
	return i
}

// TestHonestEventsArriveUnderOpenLoopSpam: three nodes in a line A - B - C
// (sync an hour apart: only gossip and heads move events) while a
// stranger floods A and B with valid events of its own, open loop; A is a
// new author, as in a network whose nodes all just started, so the flood
// spends the new authors' share. Every event A publishes during the flood
// reaches B, its direct neighbour, and C after it: when B dialled A (A
// has standing at B: its events take from its own budgets only) by
// gossip; when A dialled B (A is a stranger at B, its events held to the
// share the flood spends), by the pull of A's heads.
func TestHonestEventsArriveUnderOpenLoopSpam(t *testing.T) {
	for _, bDialsA := range []bool{true, false} {
		name := map[bool]string{true: "B dialled A", false: "A dialled B"}[bDialsA]
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			a := startNode(t, testConfig(true, time.Hour))
			b := startNode(t, testConfig(true, time.Hour))
			c := startNode(t, testConfig(true, time.Hour))
			if bDialsA {
				connect(t, b, a)
			} else {
				connect(t, a, b)
			}
			connect(t, c, b)
			waitGossipMesh(t, 10*time.Second, map[*testNode]int{a: 1, b: 2, c: 1})
			s := newSpammer(t, ctx, a)
			dialRaw(t, s.h, b)

			sctx, stop := context.WithCancel(ctx)
			spammed := make(chan int, 1)
			var progress atomic.Int64
			go func() { spammed <- s.spamOpenLoop(sctx, 400, &progress) }()
			const honest = 12
			var ids []string
			for i := range honest {
				// One honest event for every 60 of the flood's: A's
				// events spread over it, as a publisher's would be.
				waitFor(t, 10*time.Second, "the flood", func() bool { return progress.Load() >= int64(60*i) })
				ev, err := a.AddEvent(ctx, "note", jsontext.Value(fmt.Sprintf(`{"honest":%d}`, i)), nil)
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, ev.ID)
			}
			stop()
			t.Logf("the spammer published %d events", <-spammed)
			for _, n := range []*testNode{b, c} {
				waitFor(t, 15*time.Second, "A's events at "+n.ID().String(), func() bool {
					for _, id := range ids {
						if !n.has(id) {
							return false
						}
					}
					return true
				})
			}
			if ignoredBy(b, "author_budget")+ignoredBy(b, "peer_budget") == 0 {
				t.Error("no spam was held to a budget at b: the flood did not press")
			}
			if pulled := pulls(b, "stored"); !bDialsA && pulled == 0 {
				t.Error("A is a stranger at B, yet nothing was pulled: the share did not hold A's events")
			}
			// A published within one author's rate: no spam of its own,
			// whatever the flood did to the share; the flood is spam.
			if st := b.run.Get(a.ID()); st == nil || st.Spammed() != 0 {
				t.Errorf("A counted as a spammer at B (%v)", st)
			}
			if sst := b.run.Get(s.h.ID()); b.m.Value("wats_peers_banned_total", "gossip spam") == 0 && (sst == nil || sst.Spammed() == 0) {
				t.Error("the flood was not counted as spam at B")
			}
		})
	}
}

// pagingPeer is a raw host that answers hello (head len(events)) and sync
// with pages of at most core.MaxPageEvents of events.
func pagingPeer(t *testing.T, events []jsontext.Value) host.Host {
	return respondingPeer(t, func(req *proto.Request) proto.Message {
		if req.Type == proto.TypeHello {
			return &proto.Hello{Version: 1, Network: "test", Agent: "pager", Head: core.Cursor(len(events))}
		}
		after := min(req.Sync.After, core.Cursor(len(events)))
		end := min(after+core.MaxPageEvents, core.Cursor(len(events)))
		return &proto.SyncResponse{Events: events[after:end], Next: end, More: end < core.Cursor(len(events))}
	})
}

// ownEvents signs k events of a fresh key: a new author's history.
func ownEvents(t *testing.T, k int) []jsontext.Value {
	t.Helper()
	key, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]jsontext.Value, k)
	for i := range out {
		out[i] = marshal(t, signed(t, key, time.Now(), fmt.Sprint("own ", i)))
	}
	return out
}

// TestStrangersSyncShare: the events of new authors that a peer without
// standing brings by sync are held to limits.stranger_sync_per_min (120
// here: a burst of 30, then 2 a second): a stranger that connected to the
// node and serves 600 events of its own gets its first page stored (a page
// is charged once stored, into debt) and no more for a minute, while a
// peer the node dialled itself, with as many, is synced whole.
func TestStrangersSyncShare(t *testing.T) {
	cfg := testConfig(false, time.Hour)
	cfg.Limits.StrangerSyncPerMin = 120
	n := startNode(t, cfg)
	strangerEvents, dialledEvents := ownEvents(t, 600), ownEvents(t, 600)
	stranger, dialled := pagingPeer(t, strangerEvents), pagingPeer(t, dialledEvents)
	dialRaw(t, stranger, n) // it connected to the node: no standing
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := n.Connect(ctx, dialled.Addrs()[0].String()+"/p2p/"+dialled.ID().String()); err != nil {
		t.Fatal(err)
	}
	authorOf := func(events []jsontext.Value) string {
		ev, err := eventlog.Decode(events[0])
		if err != nil {
			t.Fatal(err)
		}
		return ev.Author
	}
	held := func(events []jsontext.Value) uint64 {
		u, _ := n.events.AuthorUsage(authorOf(events))
		return u.Events
	}
	waitFor(t, 20*time.Second, "the dialled peer's 600 events", func() bool { return held(dialledEvents) == 600 })
	waitFor(t, 10*time.Second, "the stranger's first page", func() bool { return held(strangerEvents) >= core.MaxPageEvents })
	if got := held(strangerEvents); got != core.MaxPageEvents {
		t.Errorf("the stranger has %d events stored, want one page (%d): the share is in debt for a minute", got, core.MaxPageEvents)
	}
}

// TestHeadsOneStreamPerPeer: a peer's second Heads stream replaces its
// first, which the node resets; announcements on the second are read.
func TestHeadsOneStreamPerPeer(t *testing.T) {
	n := startNode(t, testConfig(false, time.Hour))
	a := newAnnouncer(t, 0, 3)
	first := a.helloed(t, n)
	b, _ := proto.MarshalHeads(&proto.Heads{Head: 0})
	if err := proto.WriteFrame(first, b); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the first stream read", func() bool {
		st := n.run.Get(a.h.ID())
		return st != nil && st.Link.headsIn.Load() != nil
	})
	a.announce(t, n, 10*time.Millisecond) // a second stream
	if _, err := first.Read(make([]byte, 1)); err == nil {
		t.Error("the first stream was not reset when the second came")
	}
	waitHead(t, 10*time.Second, 3, n)
}

// TestStandingForwarderNotHeldToTheShare: a peer this node dialled has
// standing (ADR 0041): the events of a new author it forwards take from
// that author's own budget and the forwarder's, not from the new authors'
// share a stranger's flood spends. A, a new author that B dialled, gets
// 40 events to B (past the share's burst of 30) while a stranger floods
// B, and B's author budget admits A's events from A while it refuses
// them from a stranger. (Whether one of them also came by a pull is a race
// with gossip's latency, 100 ms after an announcement, not a refusal.)
func TestStandingForwarderNotHeldToTheShare(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := testConfig(true, time.Hour)
	cfg.Limits.StrangerAuthorPerMin, cfg.Limits.StrangerGossipPerMin = 120, 120
	b := startNode(t, cfg)
	a := startNode(t, testConfig(true, time.Hour))
	connect(t, b, a) // b dials a: a has standing at b
	waitGossipMesh(t, 10*time.Second, map[*testNode]int{a: 1, b: 1})
	s := newSpammer(t, ctx, b)
	s.spam(t, ctx, 200) // the share's burst spent, and more
	waitFor(t, 10*time.Second, "the share spent", func() bool { return ignoredBy(b, "author_budget") > 0 })
	publish(t, a, 40)
	waitFor(t, 10*time.Second, "a's 40 events at b", func() bool {
		u, _ := b.events.AuthorUsage(a.ID().String())
		return u.Events == 40
	})
	// The share spent again (it earns a token every 500 ms), then both
	// forwarders of one of a's events asked at once.
	now := int64(b.mono(b.now()))
	_, authors, _ := b.run.Budgets()
	for i := 0; authors.Allow(fmt.Sprint("fresh-", i), limits.TierNew, now); i++ {
	}
	author, size := a.ID().String(), 200
	if !b.admitAuthor(a.ID(), author, size, false) || !b.admitAuthor(a.ID(), author, size, true) {
		t.Error("a's event from a refused: a forwarder with standing was held to the spent share")
	}
	if b.admitAuthor(s.h.ID(), author, size, false) {
		t.Error("a's event from the stranger admitted: the share was not spent")
	}
}
