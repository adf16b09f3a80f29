package node

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/wats-network/wats/peers"
	"github.com/wats-network/wats/proto"
)

// fakeClock is a settable clock for a node (Options.Now): time moves only
// when a test moves it, on top of the real monotonic base.
type fakeClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

// overload makes a node count k extra requests in flight, as if they were
// being handled, until the test ends.
func overload(t *testing.T, n *testNode, k int64) {
	n.inFlight.Add(k)
	t.Cleanup(func() {
		if n.Node != nil {
			n.inFlight.Add(-k)
		}
	})
}

func issued(n *testNode) float64 { return n.m.Value("wats_challenges_issued_total") }
func solved(n *testNode) float64 { return n.m.Value("wats_challenges_solved_total") }

// TestOverloadChallengesOnlyFreshCapablePeers: while a node is overloaded,
// a fresh peer that advertised "challenge" is challenged (and, solving,
// served); a peer that did not advertise it is served as before; a peer
// whose hello is 10 minutes old is served; and, after a restart, a peer
// met in the earlier run is served.
func TestOverloadChallengesOnlyFreshCapablePeers(t *testing.T) {
	clock := &fakeClock{}
	r := mustRepo(t)
	a := startNodeWith(t, r, Options{Now: clock.Now})
	publish(t, a, 5)
	b := startNode(t, testConfig(false, time.Hour)) // solves challenges
	connect(t, b, a)
	waitHead(t, 10*time.Second, 5, b)

	overload(t, a, int64(a.cfg.Limits.OverloadInFlight)+10)
	ctx := context.Background()
	before := issued(a)
	if _, err := b.call(ctx, a.ID(), &proto.SyncRequest{After: 0, Limit: 1}); err != nil {
		t.Fatalf("a fresh capable peer under overload: %v (it should solve and be served)", err)
	}
	if issued(a) != before+1 || solved(a) < 1 {
		t.Fatalf("issued %v (was %v), solved %v: want one challenge, solved", issued(a), before, solved(a))
	}
	// Without solving, the challenge is what it gets.
	if _, err := proto.Call(ctx, b.Host(), a.ID(), &proto.SyncRequest{After: 0, Limit: 1}); err == nil {
		t.Fatal("a fresh capable peer was served under overload without solving")
	}

	// A peer that never advertised "challenge" is served as before.
	older := rawHost(t)
	older.Peerstore().AddAddrs(a.ID(), a.Host().Addrs(), time.Hour)
	exchange(t, older, a.ID(), frame(`{"type":"hello","version":1,"network":"test","head":"0"}`))
	if resp := exchange(t, older, a.ID(), frame(`{"type":"sync","after":"0","limit":1}`)); resp == nil || resp.Sync == nil {
		t.Fatalf("an older peer under overload got %+v, want served", resp)
	}

	// Ten minutes after its hello, b is reputed: served, not challenged.
	clock.Advance(10 * time.Minute)
	before = issued(a)
	if _, err := proto.Call(ctx, b.Host(), a.ID(), &proto.SyncRequest{After: 0, Limit: 1}); err != nil {
		t.Fatalf("a reputed peer under overload: %v, want served", err)
	}
	if issued(a) != before {
		t.Fatal("a reputed peer was challenged")
	}

	// After a restart, b was met in an earlier run: served at once, while
	// c, first met in this run, is challenged until 10 minutes after its
	// hello.
	a.close(t)
	a = startNodeWith(t, r, Options{Now: clock.Now})
	// a redials b, a peer of its cache, as it starts: b's dial must not
	// cross it. Two TCP dials between the listen ports of two peers (both
	// bind them, SO_REUSEPORT) that cross on the wire are one connection
	// that both ends take for their own dial, and its Noise handshake
	// fails on both ("noise: message is too short": each end reads the
	// other's first message where it waits for the second).
	<-a.dialed
	overload(t, a, int64(a.cfg.Limits.OverloadInFlight)+10)
	connect(t, b, a)
	if _, err := proto.Call(ctx, b.Host(), a.ID(), &proto.SyncRequest{After: 0, Limit: 1}); err != nil {
		t.Fatalf("a peer met in an earlier run, under overload: %v, want served", err)
	}
	if issued(a) != 0 {
		t.Fatal("a peer met in an earlier run was challenged")
	}
	c := startNode(t, testConfig(false, time.Hour))
	connect(t, c, a)
	if _, err := proto.Call(ctx, c.Host(), a.ID(), &proto.SyncRequest{After: 0, Limit: 1}); !errors.Is(err, proto.ErrChallenged) {
		t.Fatalf("a peer first met in the second run, under overload: %v, want a challenge", err)
	}
	clock.Advance(10*time.Minute - time.Second)
	if _, err := proto.Call(ctx, c.Host(), a.ID(), &proto.SyncRequest{After: 0, Limit: 1}); !errors.Is(err, proto.ErrChallenged) {
		t.Fatalf("1 s before its 10 minutes: %v, want still a challenge", err)
	}
	clock.Advance(2 * time.Second)
	if _, err := proto.Call(ctx, c.Host(), a.ID(), &proto.SyncRequest{After: 0, Limit: 1}); err != nil {
		t.Fatalf("10 minutes after its hello: %v, want served", err)
	}
}

// TestOverLimitCapablePeerSolvesAndReplayFails: a capable peer over its
// sync limit gets a challenge instead of a refusal, is served once it
// solves, and the same solution replayed is not accepted.
func TestOverLimitCapablePeerSolvesAndReplayFails(t *testing.T) {
	cfg := testConfig(false, time.Hour)
	cfg.Limits.SyncPerMin = 4 // a burst of 1
	a := startNode(t, cfg)
	b := startNode(t, testConfig(false, time.Hour))
	connect(t, b, a)
	ctx := context.Background()
	// The first request takes the one token; the next is over the limit.
	req := &proto.SyncRequest{After: 0, Limit: 1}
	if _, err := proto.Call(ctx, b.Host(), a.ID(), req); err != nil {
		t.Fatalf("the first request: %v", err)
	}
	_, err := proto.Call(ctx, b.Host(), a.ID(), req)
	ce, ok := err.(*proto.ChallengeError)
	if !ok {
		t.Fatalf("over its limit, a capable peer got %v, want a challenge", err)
	}
	sol, err := peers.Solver(b.selfID, a.ID(), b.now)(ctx, &ce.Challenge)
	if err != nil {
		t.Fatal(err)
	}
	resubmit := func() (*proto.Response, error) {
		raw, err := proto.MarshalWithSolution(req, sol)
		if err != nil {
			t.Fatal(err)
		}
		h := b.Host()
		s, err := h.NewStream(ctx, a.ID(), proto.ID)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := proto.WriteFrame(s, raw); err != nil {
			t.Fatal(err)
		}
		s.CloseWrite()
		b, err := proto.ReadFrame(s, proto.MaxResponseBytes)
		if err != nil {
			return nil, err
		}
		return proto.DecodeResponse(b)
	}
	resp, err := resubmit()
	if err != nil || resp.Sync == nil {
		t.Fatalf("with a valid solution: %+v, %v; want served", resp, err)
	}
	resp, err = resubmit()
	if err != nil || resp.Sync != nil {
		t.Fatalf("the replayed solution was served: %+v, %v", resp, err)
	}
	if resp.Challenge == nil {
		t.Fatalf("a replay got %+v, want a new challenge", resp)
	}
	if got := a.m.Value("wats_challenges_failed_total", "replayed"); got != 1 {
		t.Fatalf("replays counted %v, want 1", got)
	}
	st := a.Status()
	if st.ChallengesIssued != 2 || st.ChallengesSolved != 1 || st.ChallengesFailed != 1 || st.ChallengeEffort < 8 {
		t.Fatalf("status %+v: want 2 issued, 1 solved, 1 failed, effort at least 8", st)
	}
}

// TestChallengeOffMeansRefusals: with limits.challenge = false a capable
// peer over its limit is refused, not challenged.
func TestChallengeOffMeansRefusals(t *testing.T) {
	cfg := testConfig(false, time.Hour)
	cfg.Limits.SyncPerMin = 4
	cfg.Limits.Challenge = false
	a := startNode(t, cfg)
	b := startNode(t, testConfig(false, time.Hour))
	connect(t, b, a)
	req := &proto.SyncRequest{After: 0, Limit: 1}
	if _, err := b.call(context.Background(), a.ID(), req); err != nil {
		t.Fatalf("the first request: %v", err)
	}
	_, err := b.call(context.Background(), a.ID(), req)
	if _, ok := err.(*proto.RefusedError); !ok {
		t.Fatalf("with challenges off: %v, want a refusal", err)
	}
	if issued(a) != 0 {
		t.Fatal("a challenge was issued with limits.challenge = false")
	}
}
