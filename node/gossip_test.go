package node

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/peercache"
	"github.com/wats-network/wats/peers"
	"github.com/wats-network/wats/proto"
	"github.com/wats-network/wats/repo"
)

// spammer is a gossipsub peer on the test network's topic that publishes
// valid events signed by its own key, as fast as it can.
type spammer struct {
	h     host.Host
	topic *pubsub.Topic
}

func newSpammer(t *testing.T, ctx context.Context, target *testNode) *spammer {
	t.Helper()
	h := rawHost(t)
	ps, err := pubsub.NewGossipSub(ctx, h, pubsub.WithFloodPublish(true))
	if err != nil {
		t.Fatal(err)
	}
	topic, err := ps.Join(proto.Topic("test"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := topic.Subscribe(); err != nil {
		t.Fatal(err)
	}
	dialRaw(t, h, target)
	waitFor(t, 10*time.Second, "the spammer in the topic", func() bool {
		return len(topic.ListPeers()) > 0
	})
	return &spammer{h: h, topic: topic}
}

// spam publishes k distinct valid events.
func (s *spammer) spam(t *testing.T, ctx context.Context, k int) {
	t.Helper()
	key := s.h.Peerstore().PrivKey(s.h.ID())
	for i := range k {
		ev, err := eventlog.New(key, time.Now(), "note", jsontext.Value(fmt.Sprintf(`{"spam":%d}`, i)), nil)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := ev.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		env, err := proto.MarshalEnvelope(&proto.Envelope{Event: raw})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.topic.Publish(ctx, env); err != nil {
			t.Fatal(err)
		}
	}
}

// newAuthorAge is how long after its first event an author is established
// at n (limits.new_author_minutes).
func newAuthorAge(n *testNode) time.Duration {
	return time.Duration(n.cfg.Limits.NewAuthorMinutes) * time.Minute
}

func ignoredBy(n *testNode, reason string) float64 {
	return n.m.Value("wats_gossip_ignored_total", reason)
}

// TestValidSpamIsHeldToItsBudget: a stranger that floods valid events of
// its own key, a new author, gets no more of them stored than its budgets
// allow (the new authors' share and the strangers' forwarding share: a
// burst of 30 and 2 a second here), while an established author's events,
// published during the flood, all arrive by gossip.
func TestValidSpamIsHeldToItsBudget(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := testConfig(true, time.Hour)
	cfg.Limits.GossipPerMin, cfg.Limits.StrangerGossipPerMin = 120, 120
	r, err := repo.Init(t.TempDir(), &repo.InitOptions{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{}
	b := startNodeWith(t, r, Options{Now: clock.Now})
	a := startNode(t, testConfig(true, time.Hour))
	connect(t, a, b)
	waitGossipMesh(t, 10*time.Second, map[*testNode]int{a: 1, b: 1})
	// a shows value (an event) and gets its record: a normal peer; and
	// limits.new_author_minutes later it is an established author, as an
	// honest peer is when an attack starts.
	publish(t, a, 1)
	waitFor(t, 10*time.Second, "a's record at b", func() bool {
		st := b.run.Get(a.ID())
		return st != nil && st.Tier() == limits.TierNormal
	})
	clock.Advance(newAuthorAge(b))
	s := newSpammer(t, ctx, b)
	author := s.h.ID().String()

	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.spam(t, ctx, 3000)
	}()
	publish(t, a, 20)
	<-done
	waitFor(t, 20*time.Second, "a's 21 events at b", func() bool {
		u, _ := b.events.AuthorUsage(a.ID().String())
		return u.Events == 21
	})
	elapsed := time.Since(start)
	u, err := b.events.AuthorUsage(author)
	if err != nil {
		t.Fatal(err)
	}
	// The bound: the burst (30) plus 2 a second of the flood.
	bound := uint64(30 + 2*elapsed.Seconds() + 2)
	if u.Events == 0 || u.Events > bound {
		t.Errorf("%d of 3000 spam events stored in %v, want 1..%d", u.Events, elapsed, bound)
	}
	over := ignoredBy(b, "peer_budget") + ignoredBy(b, "author_budget")
	if over == 0 {
		t.Error("no envelope counted over a budget")
	}
	t.Logf("spam stored %d of 3000 in %v; %v ignored over the budgets", u.Events, elapsed, over)
}

// TestAuthorQuota: an author at events.max_events_per_author gets no more
// events stored, by gossip or sync, and the refused ones are counted; a
// valued peer's events are stored past it.
func TestAuthorQuota(t *testing.T) {
	const quota = limits.ValuedEvents + 6
	clock := &fakeClock{}
	cfg := testConfig(true, time.Hour)
	cfg.Events.MaxEventsPerAuthor = quota
	r, err := repo.Init(t.TempDir(), &repo.InitOptions{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	b := startNodeWith(t, r, Options{Now: clock.Now})

	v := startNode(t, testConfig(true, time.Hour))
	publish(t, v, limits.ValuedEvents)
	connect(t, v, b) // the hello's sync brings v's events
	waitFor(t, 20*time.Second, "v's events at b", func() bool {
		st := b.run.Get(v.ID())
		return st != nil && st.Count(peers.Events) >= limits.ValuedEvents && st.Persisted()
	})
	clock.Advance(limits.ValuedAge)
	b.foldAll()
	if st := b.run.Get(v.ID()); st.Tier() != limits.TierValued {
		t.Fatalf("v is %v, want valued", st.Tier())
	}

	o := startNode(t, testConfig(true, time.Hour))
	publish(t, o, 1)
	connect(t, o, b) // the hello's sync brings o's first event
	waitFor(t, 10*time.Second, "o's first event at b", func() bool {
		u, _ := b.events.AuthorUsage(o.ID().String())
		return u.Events == 1
	})
	clock.Advance(newAuthorAge(b)) // o is an established author: its own budget
	if tier, ok := b.authorStanding(o.ID().String()); !ok {
		t.Fatalf("o is a new author (%v) %v after its first event", tier, newAuthorAge(b))
	}
	waitGossipMesh(t, 10*time.Second, map[*testNode]int{v: 1, o: 1})
	publish(t, v, 20)      // 84 in all: past the quota, stored (valued)
	publish(t, o, quota+9) // 80 in all: 70 stored, 10 refused
	// A refused event is counted by the path that brought it: gossip, or
	// the pull of a heads announcement (by both, when both did).
	refused := func() float64 { return ignoredBy(b, "quota") + b.m.Value("wats_sync_over_quota_total") }
	waitFor(t, 30*time.Second, "o's refused events counted", func() bool { return refused() >= 10 })
	waitFor(t, 30*time.Second, "v's 84 events", func() bool {
		u, _ := b.events.AuthorUsage(v.ID().String())
		return u.Events == limits.ValuedEvents+20
	})
	uo, _ := b.events.AuthorUsage(o.ID().String())
	if uo.Events != quota {
		t.Errorf("o has %d events at b, want the quota %d", uo.Events, quota)
	}
	// A sync from o brings nothing past the quota either.
	if _, err := b.SyncPeer(context.Background(), o.ID(), nil); err != nil {
		t.Fatal(err)
	}
	if uo, _ := b.events.AuthorUsage(o.ID().String()); uo.Events != quota {
		t.Errorf("after a sync o has %d events at b, want %d", uo.Events, quota)
	}
	if st := b.Status(); st.Log.Events != uint64(limits.ValuedEvents+20+quota) || st.Log.MaxEventsPerAuthor != quota || st.Log.Authors != 2 {
		t.Errorf("status log %+v", st.Log)
	}
}

// TestGapIsSyncedAtOnce: when gossip reports an envelope from a peer it
// dropped for want of room, the node syncs from that peer at once (the
// sync interval is an hour) and gets the event it missed.
func TestGapIsSyncedAtOnce(t *testing.T) {
	b := startNode(t, testConfig(true, time.Hour))
	a := startNode(t, testConfig(true, time.Hour))
	connect(t, b, a)
	waitFor(t, 10*time.Second, "hello", func() bool {
		st := b.run.Get(a.ID())
		return st != nil && st.Helloed()
	})
	// An event a holds that never reached b: as if gossipsub dropped it.
	ev, err := a.sign("note", jsontext.Value(`{"missed":true}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.events.Append([]*eventlog.Event{ev}); err != nil {
		t.Fatal(err)
	}
	if b.has(ev.ID) {
		t.Fatal("b has the event before the gap sync")
	}
	b.syncGap(a.ID()) // what gossip.Options.Missed does
	waitFor(t, 10*time.Second, "the missed event at b", func() bool { return b.has(ev.ID) })
	if got := storedBy(b, "sync"); got != 1 {
		t.Errorf("stored by sync: %v, want 1", got)
	}
}

// TestAppScore: a peer's application score is its tier's only once it is
// reputed; each envelope of its own over its own author budget takes 10
// from it, down to -2,000, and the count halves at each fold.
func TestAppScore(t *testing.T) {
	var mono atomic.Int64
	n := startNodeWith(t, mustRepo(t), Options{Mono: func() time.Duration { return time.Duration(mono.Load()) }})
	// Peers that never connect to the host: their states made as a
	// connection would make them.
	connectFake := func(id string, dir network.Direction) *peerState {
		return n.run.Connect(peer.ID(id), dir, "", n.now(), n.mono(n.now())).Peer
	}
	st := connectFake("peer-a", network.DirInbound)
	n.showedValue(st, peercache.ValueEvents) // a record: normal
	if st.Tier() != limits.TierNormal {
		t.Fatalf("tier %v, want normal", st.Tier())
	}
	n.run.SetHello(st.ID(), &proto.Hello{}, func() *peerState { return st }, func(peer.ID) bool { return true }, n.now(), 0)
	if got := n.appScore(st.ID()); got != 0 {
		t.Errorf("a normal peer met just now scores %v, want 0", got)
	}
	mono.Store(int64(core.ReputationAge))
	if got := n.appScore(st.ID()); got != 5 {
		t.Errorf("a reputed normal peer scores %v, want 5", got)
	}
	for range 3 {
		n.spam(st.ID(), 1)
	}
	if got := n.appScore(st.ID()); got != 5-30 {
		t.Errorf("after 3 spams: %v, want -25", got)
	}
	n.foldAll()
	if got := n.appScore(st.ID()); got != 5-10 {
		t.Errorf("after a fold: %v, want -5 (3 halved to 1)", got)
	}
	st.Spam(1_000 - st.Spammed())
	if got := n.appScore(st.ID()); got != 5-2000 {
		t.Errorf("a flood: %v, want the floor 5-2000", got)
	}
	if got := n.appScore("unknown"); got != 0 {
		t.Errorf("an unknown peer: %v", got)
	}
	// At the floor, a ban: one spam short of it, none. (A stranger: a
	// peer with standing is never banned, below.)
	st = connectFake("peer-d", network.DirInbound) // no hello: no standing
	for range peers.SpamBan - 1 {
		n.spam(st.ID(), 1)
	}
	if n.gater.Banned(st.ID()) {
		t.Fatal("banned one spam short of the floor")
	}
	n.spam(st.ID(), 1)
	if !n.gater.Banned(st.ID()) || n.m.Value("wats_peers_banned_total", "gossip spam") != 1 {
		t.Fatal("not banned at the floor")
	}

	// A graylisted peer's envelopes, dropped whole, count as its spam: a
	// batch that crosses the floor bans it once, and one past it no more.
	other := connectFake("peer-b", network.DirInbound)
	n.graylisted(other.ID(), int(peers.SpamBan)-1)
	if n.gater.Banned(other.ID()) {
		t.Fatal("a graylisted peer banned one envelope short of the floor")
	}
	n.graylisted(other.ID(), 5)
	n.graylisted(other.ID(), 5)
	if !n.gater.Banned(other.ID()) || n.m.Value("wats_peers_banned_total", "gossip spam") != 2 {
		t.Fatalf("a graylisted peer past the floor: banned %v, bans %v; want banned once", n.gater.Banned(other.ID()),
			n.m.Value("wats_peers_banned_total", "gossip spam"))
	}

	// A peer with standing (this node chose to dial it) is descored at
	// the floor, not cut off (ADR 0041).
	chosen := n.run.Choose("peer-c")
	dialled := connectFake("peer-c", network.DirOutbound)
	chosen(true)
	n.graylisted(dialled.ID(), int(peers.SpamBan)+1)
	if n.gater.Banned(dialled.ID()) || n.appScore(dialled.ID()) != -peers.MaxSpamPenalty {
		t.Errorf("a peer with standing at the floor: banned %v, score %v; want not banned, score %v",
			n.gater.Banned(dialled.ID()), n.appScore(dialled.ID()), -peers.MaxSpamPenalty)
	}
}

// TestStrangersShareCountsBytes (ADR 0041): an event of a new author
// forwarded by a stranger costs the new authors' share a token per
// limits.EventTokenBytes started, so that events near the cap buy a
// seventh of what 1 KiB ones do; a forwarder with standing is not
// charged by the share.
func TestStrangersShareCountsBytes(t *testing.T) {
	clock := &fakeClock{}
	cfg := testConfig(false, time.Hour)
	cfg.Limits.StrangerAuthorPerMin = 600 // a burst of 150
	r, err := repo.Init(t.TempDir(), &repo.InitOptions{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	n := startNodeWith(t, r, Options{Now: clock.Now})
	stranger := peer.ID("a stranger")
	admitted := func(size, authors int) int {
		got := 0
		for i := range authors {
			author := fmt.Sprintf("author-%d-%d", size, i)
			if n.admitAuthor(stranger, author, size, false) && n.admitAuthor(stranger, author, size, true) {
				got++
			}
		}
		return got
	}
	// 28 KiB: 7 tokens; the 22nd takes the 148th token and the share is
	// then in debt.
	if got := admitted(28<<10, 200); got != 22 {
		t.Errorf("events of 28 KiB admitted: %d, want 22 of a share of 150 tokens", got)
	}
	clock.Advance(time.Minute) // the debt of 4 and a full burst again
	if got := admitted(limits.EventTokenBytes, 200); got != 150 {
		t.Errorf("events of 4 KiB admitted: %d, want 150", got)
	}
	clock.Advance(time.Minute)
	if got := admitted(limits.EventTokenBytes+1, 200); got != 75 {
		t.Errorf("events of 4 KiB and a byte admitted: %d, want 75", got)
	}
}

// authorStanding is the node's peers.Table.AuthorStanding of author now.
func (n *testNode) authorStanding(author string) (limits.Tier, bool) {
	now, mono := n.clock()
	return n.run.AuthorStanding(author, now, mono)
}
