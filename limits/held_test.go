package limits

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/core"
)

// TestHeldMatchesTable: a peer's requests decided on its held state, held
// and returned at random moments (connections and disconnections), get
// exactly the decisions of a twin Table that never lets it go: holding
// changes no answer, and reconnecting refills no bucket.
func TestHeldMatchesTable(t *testing.T) {
	c := DefaultConfig()
	c.ReportPerMin = 7 // a non-integer interval
	rng := rand.New(rand.NewPCG(3, 4))
	tb, twin := newTableOf(t, c, nil), newTableOf(t, c, nil)
	ps := testPeers(8)
	held := map[peer.ID]*Held{}
	now, onHeld := int64(0), 0
	for i := range 100_000 {
		now += rng.Int64N(40 * int64(time.Millisecond))
		if rng.IntN(50) == 0 {
			now += rng.Int64N(30 * second)
		}
		p := ps[rng.IntN(len(ps))]
		switch h := held[p]; {
		case h == nil && rng.IntN(20) == 0:
			held[p] = tb.Hold(p, now)
		case h != nil && rng.IntN(20) == 0:
			h.Return(now)
			delete(held, p)
		}
		if rng.IntN(300) == 0 {
			tb.Sweep(now)
		}
		f := Facts{Tier: Tier(rng.IntN(NumTiers)), CanSolve: rng.IntN(2) == 0}
		r := Request{Type: core.Request(rng.IntN(core.NumRequests)), Class: Class(rng.IntN(3)), InFlight: 1 + rng.IntN(80)}
		want := twin.Admit(p, f, r, now)
		var got Decision
		if h := held[p]; h != nil {
			got = h.Admit(f, r, now)
			onHeld++
		} else {
			got = tb.Admit(p, f, r, now)
		}
		if got != want {
			t.Fatalf("request %d (%+v of %s at %v, held %v): %+v, twin %+v", i, r, p, time.Duration(now), held[p] != nil, got, want)
		}
	}
	if onHeld < 30_000 || onHeld > 70_000 {
		t.Fatalf("%d of 100,000 decided on held states: the test does not mix both", onHeld)
	}
}

// TestHeldAtCap: a peer that connects while its shard is at its cap, with
// no state there, is decided on the state the shard's untracked peers
// share, as Admit decides it; one with state there keeps its own; the
// held states count against the cap (Len), and Return frees their place.
func TestHeldAtCap(t *testing.T) {
	tb := newTestTable(t, &TableOptions{MaxPeers: numShards}) // one peer per shard
	ids := sameShard(tb, 3)
	a, b, c := ids[0], ids[1], ids[2]
	ha := tb.Hold(a, 0)
	if n := tb.Len(); n != 1 {
		t.Fatalf("%d tracked with a held, want 1", n)
	}
	hb := tb.Hold(b, 0) // the shard is at its cap: b shares
	shared := NewcomerShare * 150
	served := 0
	for range 2 * shared {
		if hb.Admit(Facts{}, Request{Type: core.Sync}, 0).Verdict == Serve {
			served++
		}
	}
	if served != shared {
		t.Fatalf("b at the cap: %d served, want the shared burst %d", served, shared)
	}
	if ok, _ := tb.Allow(c, core.Sync, 0); ok {
		t.Fatal("c served past the shared budget b spent")
	}
	if n := takeHeld(ha, core.Hello, 100); n != 15 {
		t.Fatalf("a, held: %d allowed, want its own burst of 15", n)
	}
	ha.Return(0)
	hb.Return(0)
	ha.Return(0) // again: nothing
	if n := tb.Len(); n != 1 {
		t.Fatalf("%d tracked after the returns, want a's state", n)
	}
	ha = tb.Hold(a, 0)
	if n := takeHeld(ha, core.Hello, 100); n != 0 {
		t.Fatalf("a reconnected at once: %d allowed, want its bucket as it left it", n)
	}
	// A request that began before a left, decided after: refused, and it
	// takes nothing from the state a's next connection holds.
	ha.Return(second)
	hb = tb.Hold(a, second)
	if d := ha.Admit(Facts{}, Request{Type: core.Hello}, second); d.Verdict != Refuse {
		t.Fatalf("a late request after a left: %+v, want refused", d)
	}
	if n := takeHeld(hb, core.Hello, 100, second); n != 1 {
		t.Fatalf("a's next connection at 1 s: %d allowed, want the one token of that second", n)
	}
}

// takeHeld asks h for up to n requests of k at now (0 unless given) and
// returns how many were served.
func takeHeld(h *Held, k core.Request, n int, now ...int64) int {
	at := int64(0)
	if len(now) > 0 {
		at = now[0]
	}
	served := 0
	for range n {
		if h.Admit(Facts{}, Request{Type: k}, at).Verdict == Serve {
			served++
		}
	}
	return served
}

// TestHeldConcurrent: requests of one held peer decided at once from many
// goroutines spend its bucket exactly once; with a Return racing them, no
// more than once, and none after it (run with -race).
func TestHeldConcurrent(t *testing.T) {
	for _, racing := range []bool{false, true} {
		tb := newTestTable(t, nil)
		p := testPeer(1)
		h := tb.Hold(p, 0)
		var served atomic.Int64
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 50 {
					if h.Admit(Facts{}, Request{Type: core.Sync}, 0).Verdict == Serve {
						served.Add(1)
					}
				}
			})
		}
		if racing {
			wg.Go(func() { h.Return(0) })
		}
		wg.Wait()
		if got := served.Load(); got > 150 || !racing && got != 150 {
			t.Fatalf("racing %v: %d served of 400 at once, want the burst of 150 (at most, racing)", racing, got)
		}
		h.Return(0)
		if d := h.Admit(Facts{}, Request{Type: core.Sync}, 0); d.Verdict != Refuse {
			t.Fatalf("after Return: %+v", d)
		}
	}
}
