package limits

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

func newTestBudget(t *testing.T, br BudgetRate) *Budget {
	t.Helper()
	if br.SuspectPercent == 0 {
		br.SuspectPercent = 10
	}
	if br.ValuedPercent == 0 {
		br.ValuedPercent = 200
	}
	b, err := NewBudget(br)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// takeN calls Allow n times at now and returns how many were allowed.
func takeN(b *Budget, k string, tier Tier, now int64, n int) int {
	got := 0
	for range n {
		if b.Allow(k, tier, now) {
			got++
		}
	}
	return got
}

// TestBudgetTiers: a key gets the burst of its tier's rate (ADR 0014's
// quarter of a minute), at the bound and one past it, and refills at the
// rate.
func TestBudgetTiers(t *testing.T) {
	b := newTestBudget(t, BudgetRate{PerMin: 600})
	for _, c := range []struct {
		tier  Tier
		burst int
	}{{TierNormal, 150}, {TierSuspect, 15}, {TierValued, 300}} {
		k := "peer-" + c.tier.String()
		if got := takeN(b, k, c.tier, 0, c.burst+1); got != c.burst {
			t.Errorf("%v: %d allowed of %d, want the burst %d", c.tier, got, c.burst+1, c.burst)
		}
		// One token comes back after one interval, not before.
		iv := b.Rate(c.tier).Interval()
		if b.Allow(k, c.tier, int64(iv)-1) {
			t.Errorf("%v: a token before its interval", c.tier)
		}
		if !b.Allow(k, c.tier, int64(iv)) {
			t.Errorf("%v: no token after its interval %v", c.tier, iv)
		}
	}
	if b.Allow("x", Tier(9), 0) {
		t.Error("an invalid tier was allowed")
	}
}

// TestBudgetStrangersShare: new and suspect keys also take from one
// shared bucket, so many fresh keys get no more than its burst together;
// keys of the other tiers do not touch it.
func TestBudgetStrangersShare(t *testing.T) {
	b := newTestBudget(t, BudgetRate{PerMin: 600, StrangersPerMin: 120}) // shared burst 30
	got := 0
	for i := range 100 {
		got += takeN(b, "fresh-"+strconv.Itoa(i), TierNew, 0, 2)
	}
	if got != 30 {
		t.Errorf("100 fresh keys got %d tokens together, want the shared burst 30", got)
	}
	if b.Allow("suspect", TierSuspect, 0) {
		t.Error("a suspect took a token past the spent shared bucket")
	}
	if got := takeN(b, "known", TierNormal, 0, 150); got != 150 {
		t.Errorf("a normal key got %d of its burst 150 while the shared bucket is spent", got)
	}
	// A refused stranger took nothing from its own bucket: once the shared
	// bucket refills, it has its whole burst.
	at := int64(30 * time.Second) // the shared bucket is full again
	if got := takeN(b, "fresh-0", TierNew, at, 30); got != 30 {
		t.Errorf("after the refill: %d of 30", got)
	}
}

// TestBudgetHas: Has answers as Allow would and takes nothing.
func TestBudgetHas(t *testing.T) {
	b := newTestBudget(t, BudgetRate{PerMin: 4, StrangersPerMin: 8}) // bursts 1 and 2
	for range 5 {
		if !b.Has("a", TierNew, 0) {
			t.Fatal("Has refused a full bucket")
		}
	}
	if b.Len() != 0 {
		t.Errorf("Has tracked %d keys", b.Len())
	}
	if !b.Allow("a", TierNew, 0) || b.Has("a", TierNew, 0) || b.Allow("a", TierNew, 0) {
		t.Error("after the burst of 1: Has or Allow still true")
	}
	if !b.Has("b", TierNew, 0) || !b.Allow("b", TierNew, 0) {
		t.Error("b refused with a token left in the shared bucket")
	}
	if b.Has("c", TierNew, 0) {
		t.Error("Has true with the shared bucket spent")
	}
}

// TestBudgetUnlimited: 0 is unlimited, and keeps no state.
func TestBudgetUnlimited(t *testing.T) {
	b := newTestBudget(t, BudgetRate{})
	if got := takeN(b, "a", TierNew, 0, 10_000); got != 10_000 || b.Len() != 0 {
		t.Errorf("unlimited: %d allowed, %d keys", got, b.Len())
	}
	// An unlimited per-key rate with a shared strangers' budget: strangers
	// are held to the shared one only.
	b = newTestBudget(t, BudgetRate{StrangersPerMin: 4})
	if got := takeN(b, "a", TierNew, 0, 5); got != 1 || takeN(b, "n", TierNormal, 0, 100) != 100 {
		t.Errorf("strangers got %d of the shared burst 1", got)
	}
}

// TestBudgetCap: at its cap of keys, a new key takes from its shard's
// overflow bucket (NewcomerShare keys' worth), no tracked key is evicted,
// and a sweep makes room once buckets are full again.
func TestBudgetCap(t *testing.T) {
	b := newTestBudget(t, BudgetRate{PerMin: 4, MaxKeys: 64}) // burst 1; one key per shard
	for i := 0; b.Len() < 64 && i < 100_000; i++ {
		b.Allow("k"+strconv.Itoa(i), TierNormal, 0)
	}
	if b.Len() != 64 {
		t.Fatalf("%d keys tracked, want the cap 64", b.Len())
	}
	// Every further key lands on a full shard: the overflow buckets (a
	// burst of NewcomerShare×1 each) allow at most 64×4 in all.
	extra := 0
	for i := range 10_000 {
		extra += takeN(b, "x"+strconv.Itoa(i), TierNormal, 0, 1)
	}
	if extra > 64*NewcomerShare || b.Len() != 64 {
		t.Errorf("%d allowed past the cap (want ≤ %d), %d keys", extra, 64*NewcomerShare, b.Len())
	}
	// Past SweepInterval every bucket is full again: room for new keys.
	later := int64(SweepInterval)
	if !b.Allow("new-after-sweep", TierNormal, later) {
		t.Error("refused after the sweep interval")
	}
}

// TestBudgetClockBack: a clock that steps backwards never credits a
// token: after the burst, every earlier time is refused too.
func TestBudgetClockBack(t *testing.T) {
	b := newTestBudget(t, BudgetRate{PerMin: 60, StrangersPerMin: 60}) // bursts 15
	now := int64(time.Hour)
	if got := takeN(b, "a", TierNew, now, 15); got != 15 {
		t.Fatalf("burst %d", got)
	}
	for _, back := range []time.Duration{time.Nanosecond, time.Second, time.Minute, 100 * time.Hour} {
		if b.Allow("a", TierNew, now-int64(back)) || b.Allow("b", TierNew, now-int64(back)) {
			t.Errorf("a token %v back in time", back)
		}
	}
}

// TestBudgetTierChange: a key whose tier changes keeps its state, rounded
// so that the change never credits a token.
func TestBudgetTierChange(t *testing.T) {
	b := newTestBudget(t, BudgetRate{PerMin: 7, ValuedPercent: 1000}) // 7/min burst 1; valued 70/min burst 17
	if !b.Allow("a", TierValued, 0) || !b.Allow("a", TierValued, 0) {
		t.Fatal("valued burst")
	}
	if b.Allow("a", TierNormal, 0) {
		t.Error("down to normal right after spending: still a token")
	}
}

func TestNewBudgetBounds(t *testing.T) {
	ok := BudgetRate{PerMin: MaxPerMin, StrangersPerMin: MaxPerMin, SuspectPercent: 1, ValuedPercent: MaxValuedPercent, MaxKeys: MaxMaxPeers}
	if _, err := NewBudget(ok); err != nil {
		t.Fatal(err)
	}
	for _, f := range []func(*BudgetRate){
		func(b *BudgetRate) { b.PerMin = MaxPerMin + 1 },
		func(b *BudgetRate) { b.PerMin = -1 },
		func(b *BudgetRate) { b.StrangersPerMin = MaxPerMin + 1 },
		func(b *BudgetRate) { b.SuspectPercent = 0 },
		func(b *BudgetRate) { b.ValuedPercent = MaxValuedPercent + 1 },
		func(b *BudgetRate) { b.MaxKeys = MaxMaxPeers + 1 },
	} {
		br := ok
		f(&br)
		if _, err := NewBudget(br); err == nil {
			t.Errorf("%+v accepted", br)
		}
	}
}

// BenchmarkBudgetVsRate is the gossip budget's check (ADR 0031), run once
// per forwarded message in gossipsub's RPC loop, against its anchor in the
// same run: x/time/rate's Limiter looked up per peer in a sync.Map, plus a
// shared Limiter for strangers, as a node would build it. Both decide an
// allowed message of one new peer (its own bucket and the strangers'
// share). docs/performance.md runs it five times, alternating.
func BenchmarkBudgetVsRate(b *testing.B) {
	const key = "12D3KooWJ1TsijH7H5F74hfAD5XishQz3sxrmAtVY37GtNd9CqYf"
	b.Run("wats", func(b *testing.B) {
		bu, err := NewBudget(DefaultConfig().GossipBudget())
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		now := int64(0)
		for b.Loop() {
			now += int64(time.Second) // well within both rates
			if !bu.Allow(key, TierNew, now) {
				b.Fatal("refused")
			}
		}
	})
	b.Run("x-time-rate", func(b *testing.B) {
		var limiters sync.Map
		limiters.Store(key, rate.NewLimiter(rate.Limit(6000.0/60), 1500))
		shared := rate.NewLimiter(rate.Limit(1200.0/60), 300)
		b.ReportAllocs()
		now := time.Unix(0, 0)
		for b.Loop() {
			now = now.Add(time.Second)
			v, _ := limiters.Load(key)
			if !v.(*rate.Limiter).AllowN(now, 1) || !shared.AllowN(now, 1) {
				b.Fatal("refused")
			}
		}
	})
}

// TestBudgetAllowOwn: AllowOwn takes from the key's own bucket only, so a
// stranger passes it with the shared bucket spent, and spends none of it.
func TestBudgetAllowOwn(t *testing.T) {
	b := newTestBudget(t, BudgetRate{PerMin: 40, StrangersPerMin: 4}) // bursts 10 and 1
	if !b.Allow("a", TierNew, 0) || b.Allow("b", TierNew, 0) {
		t.Fatal("the shared burst of 1")
	}
	got := 0
	for range 11 {
		if b.AllowOwn("b", TierNew, 0) {
			got++
		}
	}
	if got != 10 {
		t.Errorf("AllowOwn gave %d of b's own burst 10", got)
	}
	if b.Allow("b", TierNew, int64(15*time.Second)) != true { // the shared bucket refilled (one token)
		t.Error("the shared bucket was spent by AllowOwn")
	}
}

// TestBudgetHasOwn: HasOwn looks at the key's own bucket only: true for a
// stranger within its rate while the shared bucket is spent, false once
// its own burst is spent, and it takes nothing.
func TestBudgetHasOwn(t *testing.T) {
	b := newTestBudget(t, BudgetRate{PerMin: 8, StrangersPerMin: 4}) // bursts 2 and 1
	if !b.Allow("a", TierNew, 0) {
		t.Fatal("the shared burst of 1")
	}
	if b.Has("b", TierNew, 0) || !b.HasOwn("b", TierNew, 0) {
		t.Error("b: want Has false (the share is spent) and HasOwn true (its own burst is whole)")
	}
	for range 2 {
		if !b.AllowOwn("b", TierNew, 0) {
			t.Fatal("b's own burst of 2")
		}
	}
	if b.HasOwn("b", TierNew, 0) {
		t.Error("HasOwn true with b's own burst spent")
	}
	if !b.HasOwn("c", TierNew, 0) || b.Len() != 2 {
		t.Errorf("HasOwn of a new key: want true and no state kept, tracking %d keys", b.Len())
	}
}

// TestEventTokens: one token per EventTokenBytes started, at least one, at
// and past each step.
func TestEventTokens(t *testing.T) {
	for _, c := range []struct{ size, want int }{
		{0, 1}, {1, 1}, {EventTokenBytes, 1}, {EventTokenBytes + 1, 2},
		{2 * EventTokenBytes, 2}, {2*EventTokenBytes + 1, 3}, {32 << 10, 8}, {32<<10 + 1, 9},
	} {
		if got := EventTokens(c.size); got != c.want {
			t.Errorf("EventTokens(%d) = %d, want %d", c.size, got, c.want)
		}
	}
}

// TestBudgetChargeStrangers: the rest of a large event's cost is charged
// to the strangers' share only, into debt, so that its next tokens wait;
// an unlimited share is not charged.
func TestBudgetChargeStrangers(t *testing.T) {
	b := newTestBudget(t, BudgetRate{PerMin: 600, StrangersPerMin: 120}) // shared burst 30, one every 500 ms
	for i := range 4 {                                                   // 4 events of 7 tokens: 28
		if !b.Allow("fresh-"+strconv.Itoa(i), TierNew, 0) {
			t.Fatalf("event %d refused", i)
		}
		b.ChargeStrangers(6, 0)
	}
	if !b.Allow("fresh-4", TierNew, 0) { // 29: a token is left
		t.Fatal("the 29th token refused")
	}
	b.ChargeStrangers(6, 0) // 35: 5 past empty
	if b.Has("fresh-5", TierNew, 0) || b.Has("fresh-5", TierNew, int64(3*time.Second-1)) {
		t.Error("a token while the share is in debt")
	}
	if !b.Has("fresh-5", TierNew, int64(3*time.Second)) {
		t.Error("no token once the debt of 5 and the next token are earned (3 s)")
	}
	if !b.HasOwn("fresh-5", TierNew, 0) || !b.Allow("known", TierNormal, 0) {
		t.Error("the charge reached a key's own bucket or another tier")
	}
	u := newTestBudget(t, BudgetRate{PerMin: 600})
	u.ChargeStrangers(1000, 0)
	if !u.Allow("fresh", TierNew, 0) {
		t.Error("a budget without a strangers' share was charged")
	}
}
