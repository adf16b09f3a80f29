package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/wats-network/wats/blobs"
	"github.com/wats-network/wats/challenge"
	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/p2p"
	"github.com/wats-network/wats/peercache"
	"github.com/wats-network/wats/peers"
	"github.com/wats-network/wats/proto"
	"github.com/wats-network/wats/repo"
)

// Attacks on real libp2p hosts on 127.0.0.1 (ADR 0030): while each runs, an
// honest peer is served. The figures of the same attacks at scale, from
// outside, are `wats bench attack`'s (docs/reliability.md).

// dialRaw connects h to n and returns once connected.
func dialRaw(t *testing.T, h host.Host, n *testNode) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Connect(ctx, peer.AddrInfo{ID: n.ID(), Addrs: n.Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
}

// holdStreams opens k streams from h to n (negotiating proto when it is not
// empty, and writing first when it is not nil) and returns them; the
// caller reads them to see which the node reset.
func holdStreams(t *testing.T, h host.Host, n *testNode, k int, protoID string, first []byte) []network.Stream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []network.Stream
	for range k {
		var s network.Stream
		var err error
		if protoID == "" {
			s, err = h.Network().NewStream(ctx, n.ID()) // never negotiated
		} else {
			s, err = h.NewStream(ctx, n.ID(), protocol.ID(protoID))
		}
		if err != nil {
			t.Fatal(err)
		}
		if first != nil {
			if _, err := s.Write(first); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, s)
	}
	return out
}

// resetWithin reads each stream (the node's multistream header, then
// nothing) until wait passes and counts those the node reset by then; the
// others stay held.
func resetWithin(streams []network.Stream, wait time.Duration) (reset int) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	deadline := time.Now().Add(wait)
	for _, s := range streams {
		wg.Go(func() {
			_ = s.SetReadDeadline(deadline)
			buf := make([]byte, 256)
			for {
				_, err := s.Read(buf)
				if err == nil {
					continue
				}
				if !proto.IsTimeout(err) {
					mu.Lock()
					reset++
					mu.Unlock()
				}
				return
			}
		})
	}
	wg.Wait()
	return reset
}

// honestSync checks that an honest node syncs all of n's events now.
func honestSync(t *testing.T, honest, n *testNode) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := honest.SyncPeer(ctx, n.ID(), nil)
	if err != nil {
		t.Fatalf("the honest peer's sync during the attack: %v", err)
	}
	if st.Cursor != n.events.Head() {
		t.Fatalf("the honest peer synced to %d of %d", st.Cursor, n.events.Head())
	}
}

// TestHoardedUnnegotiatedStreams: a peer that opens streams and never names
// a protocol holds at most its cap of them (the rest are reset at once);
// those are reset at the negotiation deadline and counted, which makes the
// peer a suspect; an honest peer is served throughout.
func TestHoardedUnnegotiatedStreams(t *testing.T) {
	n := startNode(t, testConfig(false, time.Hour))
	publish(t, n, 5)
	attacker := rawHost(t)
	dialRaw(t, attacker, n)
	cap := int(p2p.UnnegotiatedCap[limits.TierNew])
	streams := holdStreams(t, attacker, n, cap+1, "", nil)
	// Past the cap: reset at once; at the cap: held.
	if got := resetWithin(streams, 500*time.Millisecond); got != 1 {
		t.Fatalf("%d of %d un-negotiated streams reset at once, want 1 (the one past the cap of %d)", got, cap+1, cap)
	}
	honest := startNode(t, testConfig(false, time.Hour))
	connect(t, honest, n)
	honestSync(t, honest, n)
	// The held ones are reset at the negotiation deadline.
	if got := resetWithin(streams, p2p.NegotiationTimeout+3*time.Second); got != cap+1 {
		t.Fatalf("%d of %d streams reset after the deadline, want all", got, cap+1)
	}
	// Each is counted after its reset, which the attacker may see first.
	st := n.run.Get(attacker.ID())
	waitFor(t, 5*time.Second, "the hoarder's timeouts counted", func() bool {
		return st != nil && st.Count(peers.Timeouts) >= uint64(cap)
	})
	if st.Count(peers.Timeouts) != uint64(cap) || st.Tier() != limits.TierSuspect {
		t.Fatalf("the hoarder: %+v, want %d timeouts and suspect", st.History(), cap)
	}
	// A suspect holds fewer.
	streams = holdStreams(t, attacker, n, 3, "", nil)
	if got := resetWithin(streams, 500*time.Millisecond); got != 3-int(p2p.UnnegotiatedCap[limits.TierSuspect]) {
		t.Fatalf("a suspect: %d of 3 reset at once, want %d", got, 3-int(p2p.UnnegotiatedCap[limits.TierSuspect]))
	}
	honestSync(t, honest, n)
}

// TestStalledLengthPrefix: a peer that opens /wats/1 streams and sends one
// byte of a length prefix holds at most its cap of handlers; they are reset
// at proto.PrefixTimeout and counted; an honest peer is served meanwhile.
func TestStalledLengthPrefix(t *testing.T) {
	n := startNode(t, testConfig(false, time.Hour))
	publish(t, n, 5)
	attacker := rawHost(t)
	dialRaw(t, attacker, n)
	cap := int(p2p.WatsStreamCap[limits.TierNew])
	streams := holdStreams(t, attacker, n, cap+2, string(proto.ID), []byte{0x80}) // a varint's first byte
	if got := resetWithin(streams, 500*time.Millisecond); got != 2 {
		t.Fatalf("%d of %d stalled /wats streams reset at once, want 2 (past the cap of %d)", got, cap+2, cap)
	}
	honest := startNode(t, testConfig(false, time.Hour))
	connect(t, honest, n)
	honestSync(t, honest, n)
	if got := resetWithin(streams, proto.PrefixTimeout+3*time.Second); got != cap+2 {
		t.Fatalf("%d of %d reset after the prefix deadline, want all", got, cap+2)
	}
	if st := n.run.Get(attacker.ID()); st == nil || st.Count(peers.Timeouts) != uint64(cap) {
		t.Fatalf("the hoarder's timeouts: %+v, want %d", st.History(), cap)
	}
}

// TestHeldBitswapStreams: bitswap streams that send no message hold at most
// their cap and are reset at blobs.FirstMessageTimeout.
func TestHeldBitswapStreams(t *testing.T) {
	n := startNode(t, testConfig(false, time.Hour))
	attacker := rawHost(t)
	dialRaw(t, attacker, n)
	cap := int(p2p.BitswapStreamCap[limits.TierNew])
	streams := holdStreams(t, attacker, n, cap+1, string(blobs.Protocols[0]), nil)
	if got := resetWithin(streams, 500*time.Millisecond); got != 1 {
		t.Fatalf("%d of %d idle bitswap streams reset at once, want 1", got, cap+1)
	}
	if got := resetWithin(streams, blobs.FirstMessageTimeout+3*time.Second); got != cap+1 {
		t.Fatalf("%d of %d reset after the first-message deadline, want all", got, cap+1)
	}
	if st := n.run.Get(attacker.ID()); st == nil || st.Count(peers.Timeouts) != uint64(cap) {
		t.Fatalf("timeouts %+v, want %d", st.History(), cap)
	}
}

// nodeWithKnownPeer starts a node of 16 stranger slots holding 5 events,
// and a peer that earned a record in it (the node synced its event).
func nodeWithKnownPeer(t *testing.T) (n, known *testNode) {
	t.Helper()
	cfg := testConfig(false, time.Hour)
	cfg.P2P.MaxConns, cfg.P2P.ConnsHigh, cfg.P2P.ConnsLow = 64, 60, 40 // 16 stranger slots
	n = startNode(t, cfg)
	publish(t, n, 5)
	known = startNode(t, testConfig(false, time.Hour))
	publish(t, known, 1)
	connect(t, known, n)
	waitFor(t, 10*time.Second, "the known peer's record", func() bool { return n.peers.Has(known.ID()) })
	return n, known
}

// monoNodeWithKnownPeer starts a node of cfg on the monotonic clock mono,
// and a peer that connects to it and earns a record in it (the node synced
// its event).
func monoNodeWithKnownPeer(t *testing.T, cfg *config.Config, mono *atomic.Int64) (n, known *testNode) {
	t.Helper()
	r, err := repo.Init(t.TempDir(), &repo.InitOptions{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	n = startNodeWith(t, r, Options{Mono: func() time.Duration { return time.Duration(mono.Load()) }})
	known = startNode(t, testConfig(false, time.Hour))
	publish(t, known, 1)
	connect(t, known, n)
	waitFor(t, 10*time.Second, "the known peer's record", func() bool { return n.peers.Has(known.ID()) })
	return n, known
}

// TestManyHoardersAndANewcomer: 40 ids, each holding its cap of
// un-negotiated and stalled /wats streams, connect to a node of 16 stranger
// slots; an honest peer with a record and an honest newcomer are both
// served, and the hoarders hold no more than the slots.
func TestManyHoardersAndANewcomer(t *testing.T) {
	n, known := nodeWithKnownPeer(t)

	var wg sync.WaitGroup
	for range 40 {
		wg.Go(func() {
			h := rawHost(t)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := h.Connect(ctx, peer.AddrInfo{ID: n.ID(), Addrs: n.Host().Addrs()}); err != nil {
				return // refused or evicted: the slots at work
			}
			for range p2p.UnnegotiatedCap[limits.TierNew] {
				if s, err := h.Network().NewStream(ctx, n.ID()); err == nil {
					defer s.Reset()
				}
			}
			for range p2p.WatsStreamCap[limits.TierNew] {
				if s, err := h.NewStream(ctx, n.ID(), proto.ID); err == nil {
					_, _ = s.Write([]byte{0x80})
					defer s.Reset()
				}
			}
		})
	}
	wg.Wait()
	if used, slots := n.run.Slots().Len(), p2p.StrangerSlots(n.cfg); used > slots {
		t.Fatalf("%d stranger slots held, at most %d", used, slots)
	}
	honestSync(t, known, n)
	newcomer := startNode(t, testConfig(false, time.Hour))
	connect(t, newcomer, n)
	honestSync(t, newcomer, n)
}

// TestStrangerSlotsEvictTheLeastActive: at the bound a new stranger gets in
// and the least recently active stranger is evicted; a suspect goes first
// (a reputed peer takes no slot: TestStrangerSlotsNeedReputation).
func TestStrangerSlotsEvictTheLeastActive(t *testing.T) {
	cfg := testConfig(false, time.Hour)
	cfg.P2P.MaxConns, cfg.P2P.ConnsHigh, cfg.P2P.ConnsLow = 8, 6, 4 // 2 stranger slots, none spared
	n := startNode(t, cfg)
	if got := p2p.StrangerSlots(n.cfg); got != 2 {
		t.Fatalf("slots %d, want 2", got)
	}
	a, b, c := rawHost(t), rawHost(t), rawHost(t)
	dialRaw(t, a, n)
	dialRaw(t, b, n)
	waitFor(t, 5*time.Second, "two strangers", func() bool { return n.run.Slots().Len() == 2 })
	// b is active: a served request.
	if resp := exchange(t, b, n.ID(), frame(`{"type":"sync","after":"0"}`)); resp == nil || resp.Sync == nil {
		t.Fatalf("b's sync: %+v", resp)
	}
	dialRaw(t, c, n) // past the bound: a, the least active, goes
	waitFor(t, 5*time.Second, "a evicted", func() bool { return n.host.Network().Connectedness(a.ID()) != network.Connected })
	if n.host.Network().Connectedness(b.ID()) != network.Connected || n.run.Slots().Len() != 2 {
		t.Fatalf("b connected %v, %d slots used; want b kept and 2 used", n.host.Network().Connectedness(b.ID()), n.run.Slots().Len())
	}
	// A suspect goes before a more idle peer.
	sb := n.run.Get(b.ID())
	sb.Add(peers.Misses, limits.SuspectMinBad)
	d := rawHost(t)
	dialRaw(t, d, n)
	waitFor(t, 5*time.Second, "the suspect evicted", func() bool { return n.host.Network().Connectedness(b.ID()) != network.Connected })
	if n.host.Network().Connectedness(c.ID()) != network.Connected {
		t.Fatal("the idle stranger was evicted instead of the suspect")
	}
}

// TestStrangerSlotsSpareWhoPaid: at the bound, a stranger that paid for a
// request (a challenge solved) less than peers.PaidFor before is spared, and
// the least recently active of those that did not pay goes; PaidFor after,
// it goes as any other (docs/adr/0060; the bounds to the nanosecond:
// peers/testdata/slots.txt).
func TestStrangerSlotsSpareWhoPaid(t *testing.T) {
	var mono atomic.Int64
	mono.Store(int64(time.Second))
	cfg := testConfig(false, time.Hour)
	cfg.P2P.MaxConns, cfg.P2P.ConnsHigh, cfg.P2P.ConnsLow = 8, 6, 4 // 2 stranger slots: one that paid spared
	r, err := repo.Init(t.TempDir(), &repo.InitOptions{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	n := startNodeWith(t, r, Options{Mono: func() time.Duration { return time.Duration(mono.Load()) }})
	overload(t, n, int64(n.cfg.Limits.OverloadInFlight)+10) // a fresh peer that can solve is challenged

	// a pays for a hello at 1 s.
	a, b, c, d := rawHost(t), rawHost(t), rawHost(t), rawHost(t)
	dialRaw(t, a, n)
	hello := &proto.Hello{Version: 1, Network: "test", Agent: "newcomer", Features: []string{proto.FeatureChallenge},
		Listen: []string{}, Head: 0}
	raw, err := proto.Marshal(hello)
	if err != nil {
		t.Fatal(err)
	}
	// Its first hello is served (a peer's features are its last hello's:
	// none before it); its second is challenged.
	if resp := exchange(t, a, n.ID(), frame(string(raw))); resp == nil || resp.Hello == nil {
		t.Fatalf("a's first hello: %+v, want served", resp)
	}
	resp := exchange(t, a, n.ID(), frame(string(raw)))
	if resp == nil || resp.Challenge == nil {
		t.Fatalf("a's hello under overload: %+v, want a challenge", resp)
	}
	aRaw, _ := peers.RawID(a.ID())
	nRaw, _ := peers.RawID(n.ID())
	ch := resp.Challenge
	sol, err := challenge.SolveChallenge(context.Background(),
		challenge.Challenge{Alg: ch.Alg, Seed: ch.Seed, Effort: ch.Effort, Expires: ch.Expires}, aRaw, nRaw, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if raw, err = proto.MarshalWithSolution(hello, &proto.Solution{Alg: sol.Alg, Seed: sol.Seed, Nonce: sol.Nonce}); err != nil {
		t.Fatal(err)
	}
	if resp := exchange(t, a, n.ID(), frame(string(raw))); resp == nil || resp.Hello == nil {
		t.Fatalf("a's solved hello: %+v, want served", resp)
	}

	// b is served after it (it cannot solve: served under overload as
	// before), so a is the less recently active.
	mono.Store(int64(2 * time.Second))
	dialRaw(t, b, n)
	if resp := exchange(t, b, n.ID(), frame(`{"type":"hello","version":1,"network":"test","listen":[],"head":"0"}`)); resp == nil || resp.Hello == nil {
		t.Fatalf("b's hello: %+v", resp)
	}
	mono.Store(int64(3 * time.Second))
	dialRaw(t, c, n) // past the bound: b goes, not a, which paid
	waitFor(t, 5*time.Second, "b evicted", func() bool { return n.host.Network().Connectedness(b.ID()) != network.Connected })
	if n.host.Network().Connectedness(a.ID()) != network.Connected {
		t.Fatal("the stranger that paid was evicted")
	}

	// PaidFor after a paid, the least active goes: a.
	mono.Store(int64(time.Second + peers.PaidFor))
	dialRaw(t, d, n)
	waitFor(t, 5*time.Second, "a evicted", func() bool { return n.host.Network().Connectedness(a.ID()) != network.Connected })
	if n.host.Network().Connectedness(c.ID()) != network.Connected {
		t.Fatal("c, more recently active than a, was evicted")
	}
}

// TestHelloEarnsNoRecord: ids that connect and say hello leave nothing in
// the peer cache; after a restart none of them is reputed, and the real
// peer's record (it gave events) is there.
func TestHelloEarnsNoRecord(t *testing.T) {
	r := mustRepo(t)
	n := startRepo(t, r)
	real := startNode(t, testConfig(false, time.Hour))
	publish(t, real, 1)
	connect(t, real, n)
	waitFor(t, 10*time.Second, "the real peer's record", func() bool { return n.peers.Has(real.ID()) })
	var sybils []peer.ID
	for range 20 {
		h := rawHost(t)
		dialRaw(t, h, n)
		hello := `{"type":"hello","version":1,"network":"test","agent":"sybil","features":["challenge"],"listen":[],"head":"0"}`
		if resp := exchange(t, h, n.ID(), frame(hello)); resp == nil || resp.Hello == nil {
			t.Fatalf("a sybil's hello: %+v", resp)
		}
		sybils = append(sybils, h.ID())
		h.Close()
	}
	if got := n.peers.Len(); got != 1 {
		t.Fatalf("%d records after 20 hellos, want only the real peer's", got)
	}
	n.close(t)
	n = startRepo(t, r)
	for _, p := range sybils {
		if n.peers.Has(p) || n.peers.MetInEarlierRun(p) {
			t.Fatalf("sybil %s remembered after the restart", p)
		}
	}
	if !n.peers.MetInEarlierRun(real.ID()) {
		t.Fatal("the real peer is not met in an earlier run")
	}
}

// TestHelloFloodOfManyIds: 100,000 ids that connect, say hello and leave
// (the node's path for each, without the network) leave the real peers'
// records in place and create none; what the node remembers of them stays
// within peers.MaxRecent; the log gets at most the cap of lines.
func TestHelloFloodOfManyIds(t *testing.T) {
	var logs bytes.Buffer
	r := mustRepo(t)
	// The monotonic clock stands still: the log cap's burst is all that
	// may pass, however long the loop takes on a loaded machine.
	n := startNodeWith(t, r, Options{Logger: slog.New(slog.NewTextHandler(&syncWriter{w: &logs}, nil)),
		Mono: func() time.Duration { return time.Second }})
	real := startNode(t, testConfig(false, time.Hour))
	publish(t, real, 1)
	connect(t, real, n)
	waitFor(t, 10*time.Second, "the real peer's record", func() bool { return n.peers.Has(real.ID()) })
	h := &proto.Hello{Version: 1, Network: "test", Agent: "sybil", Head: 0}
	for i := range 100_000 {
		p := peer.ID(fmt.Sprintf("sybil-%06d", i))
		n.peerState(p, network.DirInbound)
		n.recordHello(p, h)
		n.dropPeerState(p, false)
	}
	if got := n.peers.Len(); got != 1 || !n.peers.Has(real.ID()) {
		t.Fatalf("%d records after 100,000 hellos, want the real peer's alone", got)
	}
	if got := n.run.Recent(); got > peers.MaxRecent {
		t.Fatalf("%d recent peers remembered, at most %d", got, peers.MaxRecent)
	}
	if got := strings.Count(logs.String(), "peer completed hello"); got > limits.LogBurst+1 {
		t.Fatalf("%d 'peer completed hello' lines for 100,000 ids, at most the burst %d", got, limits.LogBurst)
	}
}

// syncWriter serializes writes to w (a test's log buffer).
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// TestValueEarnsARecord: a peer that stays connected peers.ValueAfterConnected
// after hello earns a record; a suspect does not.
func TestValueEarnsARecord(t *testing.T) {
	clock := &fakeClock{}
	r := mustRepo(t)
	n := startNodeWith(t, r, Options{Now: clock.Now})
	a, b := startNode(t, testConfig(false, time.Hour)), startNode(t, testConfig(false, time.Hour))
	connect(t, a, n)
	connect(t, b, n)
	sb := n.run.Get(b.ID())
	sb.Add(peers.Misses, limits.SuspectMinBad)
	clock.Advance(peers.ValueAfterConnected - time.Second)
	n.foldAll()
	if n.peers.Has(a.ID()) {
		t.Fatal("a record before peers.ValueAfterConnected")
	}
	clock.Advance(time.Second)
	n.foldAll()
	if rec, ok := n.peers.Get(a.ID()); !ok || rec.Value != "connected" {
		t.Fatalf("after peers.ValueAfterConnected: %+v %v, want a record by connection", rec, ok)
	} else if !strings.HasPrefix(rec.RemoteAddr, "/ip4/127.0.0.1/") {
		t.Fatalf("the record's remote address is %q, want the connection's", rec.RemoteAddr)
	}
	if n.peers.Has(b.ID()) {
		t.Fatal("a suspect earned a record")
	}
}

// TestMissesMakeASuspect: a peer that asks for what never existed gets the
// miss budget, then is refused; its misses make it a suspect, with
// suspect_percent of the rates, and the API says why.
func TestMissesMakeASuspect(t *testing.T) {
	n := startNode(t, testConfig(false, time.Hour))
	h := rawHost(t)
	dialRaw(t, h, n)
	refused := 0
	for range limits.SuspectMinBad + 4 {
		resp := exchange(t, h, n.ID(), frame(`{"type":"sync","after":"100000"}`))
		switch {
		case resp != nil && resp.Sync != nil:
		case resp != nil && resp.Refused != nil:
			refused++
		default:
			t.Fatalf("a miss answered %+v", resp)
		}
	}
	if burst := limits.DefaultConfig().MissPerMin / 4; refused < limits.SuspectMinBad+4-burst-1 {
		t.Fatalf("%d misses refused, want all past the burst of %d", refused, burst)
	}
	st := n.run.Get(h.ID())
	if st == nil || st.Tier() != limits.TierSuspect {
		t.Fatalf("after %d misses: %+v", limits.SuspectMinBad+4, st.History())
	}
	var found bool
	for _, p := range n.Peers() {
		if p.PeerID == h.ID().String() {
			found = p.Tier == "suspect" && strings.Contains(p.TierReason, "misses")
		}
	}
	if !found {
		t.Fatalf("the API does not show the suspect and why: %+v", n.Peers())
	}
	// Hits are served within the suspect's smaller budget (sync 60 a
	// minute: a burst of 15, less the second the served misses took of
	// the same sync bucket), then refused.
	served := 0
	for range 20 {
		if resp := exchange(t, h, n.ID(), frame(`{"type":"sync","after":"0"}`)); resp != nil && resp.Sync != nil {
			served++
		}
	}
	if want := limits.DefaultConfig().SyncPerMin * limits.DefaultConfig().SuspectPercent / 100 / 4; served < want-1 || served > want+1 {
		t.Fatalf("a suspect was served %d syncs in a burst, want %d", served, want)
	}
}

// TestReputationCountsOnTheMonotonicClock: ADR 0014's ten minutes count on
// the monotonic clock from the first hello, not on the record's first-seen
// wall time: a wall clock that jumps an hour ahead grants no reputation
// (it used to), and ten monotonic minutes do.
func TestReputationCountsOnTheMonotonicClock(t *testing.T) {
	wall := &fakeClock{}
	var mono atomic.Int64
	n := startNodeWith(t, mustRepo(t), Options{Now: wall.Now, Mono: func() time.Duration { return time.Duration(mono.Load()) }})
	b := startNode(t, testConfig(false, time.Hour))
	publish(t, b, 1)
	connect(t, b, n)
	waitFor(t, 10*time.Second, "b's record", func() bool { return n.peers.Has(b.ID()) })
	sb := n.run.Get(b.ID())
	wall.Advance(time.Hour) // the wall clock jumps: the record's first seen is an hour back
	if sb.Reputed(n.mono(n.now())) {
		t.Fatal("reputed after the wall clock jumped an hour")
	}
	mono.Add(int64(core.ReputationAge - time.Nanosecond))
	if sb.Reputed(n.mono(n.now())) {
		t.Fatal("reputed a nanosecond before ten minutes")
	}
	mono.Add(1)
	if !sb.Reputed(n.mono(n.now())) {
		t.Fatal("not reputed ten minutes after its first hello")
	}
}

func mustRepo(t *testing.T) *repo.Repo {
	t.Helper()
	r, err := repo.Init(t.TempDir(), &repo.InitOptions{Config: testConfig(false, time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSybilFloodNewcomerGetsIn: while fresh ids keep connecting, saying
// hello and holding their connections (more of them than the stranger
// slots), a newcomer completes hello and a sync, and so does a peer with a
// record; none of the Sybils gets a record.
func TestSybilFloodNewcomerGetsIn(t *testing.T) {
	n, known := nodeWithKnownPeer(t)

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var sybils atomic.Int64
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				h := rawHost(t)
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				if h.Connect(cctx, peer.AddrInfo{ID: n.ID(), Addrs: n.Host().Addrs()}) == nil {
					if s, err := h.NewStream(cctx, n.ID(), proto.ID); err == nil {
						_ = proto.WriteMessage(s, &proto.Hello{Version: 1, Network: "test", Agent: "sybil", Head: 0}, nil)
						_ = s.CloseWrite()
						_, _ = proto.ReadFrame(s, proto.MaxResponseBytes)
						s.Close()
					}
					sybils.Add(1)
				}
				cancel() // the connection stays open until the node evicts it
			}
		})
	}
	waitFor(t, 20*time.Second, "the flood to pass the slots", func() bool { return sybils.Load() > int64(2*p2p.StrangerSlots(n.cfg)) })
	for range 3 {
		newcomer := startNode(t, testConfig(false, time.Hour))
		connect(t, newcomer, n)
		honestSync(t, newcomer, n)
	}
	honestSync(t, known, n)
	stop()
	wg.Wait()
	if got := n.peers.Len(); got != 1 {
		t.Fatalf("%d records after %d Sybils, want the known peer's alone", got, sybils.Load())
	}
	if used := n.run.Slots().Len(); used > p2p.StrangerSlots(n.cfg) {
		t.Fatalf("%d stranger slots used, at most %d", used, p2p.StrangerSlots(n.cfg))
	}
}

// TestStreamFloodBan: a peer whose streams are reset over its caps 64
// times within a second keeps its connection; the 65th disconnects it, bans
// it at the gater and makes it a suspect. A new second starts the count
// again.
func TestStreamFloodBan(t *testing.T) {
	var mono atomic.Int64
	n := startNodeWith(t, mustRepo(t), Options{Mono: func() time.Duration { return time.Duration(mono.Load()) }})
	h := rawHost(t)
	dialRaw(t, h, n)
	st := n.run.Get(h.ID())
	for range peers.MaxCapRefusals {
		n.overCap(st, "test")
	}
	mono.Add(int64(time.Second)) // a new second: the count starts over
	for range peers.MaxCapRefusals {
		n.overCap(st, "test")
	}
	if n.gater.Banned(h.ID()) || st.Tier() == limits.TierSuspect {
		t.Fatalf("banned or suspect after %d refusals in a second", peers.MaxCapRefusals)
	}
	n.overCap(st, "test")
	if !n.gater.Banned(h.ID()) || st.Tier() != limits.TierSuspect {
		t.Fatalf("not banned and suspect after %d refusals in a second", peers.MaxCapRefusals+1)
	}
	waitFor(t, 5*time.Second, "the flooder disconnected", func() bool {
		return n.host.Network().Connectedness(h.ID()) != network.Connected
	})
}

// publishLarge adds k note events of about size bytes each on n.
func publishLarge(t *testing.T, n *testNode, k, size int) {
	t.Helper()
	for i := range k {
		body := jsontext.Value(fmt.Sprintf(`{"n":%d,"text":%q}`, i, strings.Repeat("x", size)))
		if _, err := n.AddEvent(context.Background(), "note", body, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// TestUnreadSyncPages: a stranger that asks for sync pages over a
// stream's window and never reads them holds at most peers.MaxPagesPerPeer of
// them (its other requests are told "too busy"), each until proto.ReplyTimeout;
// each page it left unread counts as a held stream; a newcomer is served
// while it holds them.
func TestUnreadSyncPages(t *testing.T) {
	n := startNode(t, testConfig(false, time.Hour))
	publishLarge(t, n, 24, 15<<10) // a page of about 370 KB: over the 256 KiB window
	attacker := rawHost(t)
	dialRaw(t, attacker, n)
	sync := frame(`{"type":"sync","after":"0"}`)
	streams := holdStreams(t, attacker, n, peers.MaxPagesPerPeer+2, string(proto.ID), sync)
	waitFor(t, 10*time.Second, "the attacker's pages held", func() bool {
		st := n.run.Get(attacker.ID())
		_, pages := n.run.PagesHeld(limits.TierNew, st)
		return st != nil && pages == peers.MaxPagesPerPeer
	})
	busy := 0
	for _, s := range streams {
		_ = s.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if b, err := io.ReadAll(io.LimitReader(s, 1<<10)); len(b) > 0 && len(b) < 1<<10 && strings.Contains(string(b), "too busy") {
			busy++
		} else if err != nil && !proto.IsTimeout(err) {
			t.Fatalf("an attacker's stream: %v", err)
		}
	}
	if busy != 2 {
		t.Fatalf("%d of the attacker's %d requests told too busy, want 2", busy, len(streams))
	}
	if held, most := pagesHeld(n, limits.TierNew), int64(peers.MaxPagesPerPeer*2*peers.StrangerPageBytes); held == 0 || held > most {
		t.Fatalf("the pool holds %d bytes for strangers, want 1..%d", held, most)
	}
	newcomer := rawHost(t)
	dialRaw(t, newcomer, n)
	if resp := exchange(t, newcomer, n.ID(), sync); resp == nil || resp.Sync == nil || len(resp.Sync.Events) != 24 {
		t.Fatalf("a newcomer's sync while the pages are held: %+v", resp)
	}
	st := n.run.Get(attacker.ID())
	waitFor(t, proto.ReplyTimeout(24*(15<<10))+5*time.Second, "the unread pages' timeouts", func() bool {
		_, pages := n.run.PagesHeld(limits.TierNew, st)
		return st.Count(peers.Timeouts) == peers.MaxPagesPerPeer && pages == 0
	})
	if held := pagesHeld(n, limits.TierNew); held != 0 {
		t.Fatalf("%d bytes still held after the writes timed out", held)
	}
}

// TestStrangersShareACrashReportBudget: strangers' crash reports are held
// to limits.stranger_report_per_min together, on top of each one's own
// rate: at the budget's burst they are stored, one more is refused with
// the wait for the next token, and a peer with a record is not held to it.
func TestStrangersShareACrashReportBudget(t *testing.T) {
	cfg := testConfig(false, time.Hour)
	cfg.Limits.StrangerReportPerMin = 8 // a burst of 2
	var mono atomic.Int64
	n, known := monoNodeWithKnownPeer(t, cfg, &mono)
	ctx := context.Background()
	crash := eventlog.Crash{CrashInfo: core.CrashInfo{Program: "demo", Version: "1.0.0", OS: "linux", Arch: "amd64", Reason: "panic", Stack: "main.main()"}}
	var refused error
	for i := range 3 {
		s := startNode(t, testConfig(false, time.Hour))
		connect(t, s, n)
		crash.Version = fmt.Sprintf("1.0.%d", i)
		_, err := s.ReportCrash(ctx, crash, nil, n.ID())
		switch {
		case i < 2 && err != nil:
			t.Fatalf("stranger %d's report within the shared burst: %v", i, err)
		case i == 2:
			refused = err
		}
	}
	var ref *proto.RefusedError
	if !errors.As(refused, &ref) || ref.RetryAfterMs <= 0 {
		t.Fatalf("the third stranger's report: %v, want refused with a retry_after", refused)
	}
	if got := n.m.Value("wats_stranger_reports_refused_total"); got != 1 {
		t.Fatalf("wats_stranger_reports_refused_total = %v, want 1", got)
	}
	crash.Version = "2.0.0"
	if _, err := known.ReportCrash(ctx, crash, nil, n.ID()); err != nil {
		t.Fatalf("a known peer's report while the strangers' budget is spent: %v", err)
	}
	mono.Add(int64(time.Minute / 8)) // one token's worth
	s := startNode(t, testConfig(false, time.Hour))
	connect(t, s, n)
	crash.Version = "3.0.0"
	if _, err := s.ReportCrash(ctx, crash, nil, n.ID()); err != nil {
		t.Fatalf("a stranger's report once the budget refilled: %v", err)
	}
}

// TestStrangerSlotsNeedReputation: a peer that earned a record in this run
// still takes a stranger slot (a record is earned in seconds, ADR 0031);
// once reputed (its first hello ten minutes ago) it leaves the slots when
// a new stranger needs one, and no one is evicted for it; away, it is
// admitted at the gater while strangers fill the slots and their slack,
// where a peer with a record not yet reputed is refused.
func TestStrangerSlotsNeedReputation(t *testing.T) {
	var mono atomic.Int64
	mono.Store(int64(time.Second))
	cfg := testConfig(false, time.Hour)
	cfg.P2P.MaxConns, cfg.P2P.ConnsHigh, cfg.P2P.ConnsLow = 8, 6, 4 // 2 stranger slots, 1 of slack
	n, known := monoNodeWithKnownPeer(t, cfg, &mono)
	waitFor(t, 10*time.Second, "the known peer's hello", func() bool {
		st := n.run.Get(known.ID())
		return st != nil && st.Helloed()
	})
	st := n.run.Get(known.ID())
	if !n.run.Slots().Holds(st) || n.run.Slots().Len() != 1 {
		t.Fatalf("a peer with a record of this run: stranger %v, %d slots used; want a slot", n.run.Slots().Holds(st), n.run.Slots().Len())
	}
	if !n.admitStranger(known.ID()) {
		t.Fatal("a connected peer refused at the gater")
	}

	mono.Add(int64(core.ReputationAge)) // its first hello is ten minutes old
	a, b := rawHost(t), rawHost(t)
	dialRaw(t, a, n)
	dialRaw(t, b, n) // the slots are full: known leaves them, no one is evicted
	waitFor(t, 5*time.Second, "a and b in the slots", func() bool {
		sa, sb := n.run.Get(a.ID()), n.run.Get(b.ID())
		return sa != nil && sb != nil && n.run.Slots().Holds(sa) && n.run.Slots().Holds(sb)
	})
	if n.run.Slots().Holds(st) || n.run.Slots().Len() != 2 {
		t.Fatalf("reputed: stranger %v, %d slots used; want out of the slots, 2 used", n.run.Slots().Holds(st), n.run.Slots().Len())
	}
	for _, p := range []peer.ID{known.ID(), a.ID()} {
		if n.host.Network().Connectedness(p) != network.Connected {
			t.Fatalf("%s was evicted", p)
		}
	}

	// Away, while the slots and their slack are full.
	known.Host().Network().ClosePeer(n.ID())
	waitFor(t, 5*time.Second, "the known peer gone", func() bool { return n.run.Get(known.ID()) == nil })
	fresh := rawHost(t).ID()
	if err := n.peers.Update(fresh, true, func(*peercache.Record) {}); err != nil { // a record of this run
		t.Fatal(err)
	}
	// A stranger the node has not met yet takes a slot, which evicts one
	// that is then still closing: the slots and their slack are full.
	c := n.run.Connect(rawHost(t).ID(), network.DirInbound, "", n.now(), n.mono(n.now()))
	dummy, victim := c.Peer, c.Evicted
	if victim == nil {
		t.Fatal("a third stranger took a slot of two and evicted no one")
	}
	if n.admitStranger(rawHost(t).ID()) {
		t.Fatal("a new stranger admitted past the full slots and slack")
	}
	if !n.admitStranger(known.ID()) {
		t.Error("a reputed peer away refused at the gater while strangers fill the slots")
	}
	if n.admitStranger(fresh) {
		t.Error("a peer with a record of this run, not reputed, admitted past the full slots")
	}
	n.run.Leave(dummy.ID(), nil, n.now(), n.mono(n.now()))
	n.run.Slots().Gone(victim)
}
