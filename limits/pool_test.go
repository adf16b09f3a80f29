package limits

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestPoolShares: strangers together hold at most a quarter, normal peers
// and below three quarters, valued peers the rest; each bound at and just
// past it.
func TestPoolShares(t *testing.T) {
	p, err := NewPool(1600)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		t    Tier
		n    int64
		want bool
	}{
		{TierSuspect, 100, true},   // 1/16 exactly
		{TierSuspect, 1, false},    // past it
		{TierNew, 300, true},       // new + suspect = 400: 1/4 exactly
		{TierNew, 1, false},        // past it
		{TierNormal, 800, true},    // normal and below = 1200: 3/4
		{TierNormal, 1, false},     // past it
		{TierValued, 400, true},    // all 1600
		{TierValued, 1, false},     // full
		{TierSuspect, 0, false},    // nothing to take
		{Tier(NumTiers), 1, false}, // invalid tier
	}
	for i, s := range steps {
		if got := p.Reserve(s.t, s.n); got != s.want {
			t.Fatalf("step %d: Reserve(%v, %d) = %v, want %v", i, s.t, s.n, got, s.want)
		}
	}
	// Strangers gone: a normal peer still finds no more than 3/4 in all.
	p.Release(TierSuspect, 100)
	p.Release(TierNew, 300)
	if !p.Reserve(TierNormal, 400) || p.Reserve(TierNormal, 1) {
		t.Fatal("normal peers should reach exactly 3/4 once strangers left")
	}
	if p.Held(TierNormal) != 1200 || p.Held(TierNew) != 0 {
		t.Fatalf("held: normal %d, new %d", p.Held(TierNormal), p.Held(TierNew))
	}
	// While strangers hold their whole quarter, valued and normal peers
	// are not refused below theirs.
	q, _ := NewPool(1600)
	if !q.Reserve(TierNew, 400) || q.Reserve(TierSuspect, 1) || q.Reserve(TierNew, 1) {
		t.Fatal("strangers' quarter")
	}
	if !q.Reserve(TierNormal, 800) || !q.Reserve(TierValued, 400) {
		t.Fatal("normal and valued peers refused while strangers hold only their quarter")
	}
	if _, err := NewPool(0); err == nil {
		t.Fatal("NewPool(0) accepted")
	}
}

// TestPoolConcurrent: reservations racing for a share never take more
// than it holds, whatever their tiers, and once all are released the pool
// is empty again.
func TestPoolConcurrent(t *testing.T) {
	p, _ := NewPool(1600)
	tiers := []Tier{TierSuspect, TierNew, TierNormal, TierValued}
	for round := range 200 {
		var wg sync.WaitGroup
		var got [NumTiers]atomic.Int64
		for i := range 64 {
			wg.Go(func() {
				tier := tiers[i%len(tiers)]
				if p.Reserve(tier, 100) {
					got[tier].Add(100)
				}
			})
		}
		wg.Wait()
		var sum int64
		for i, u := range tierOrder {
			sum += got[u].Load()
			if sum > p.limit[i] {
				t.Fatalf("round %d: the tiers up to %v hold %d, more than their share %d", round, u, sum, p.limit[i])
			}
			if p.Held(u) != got[u].Load() {
				t.Fatalf("round %d: %v holds %d, its reservations %d", round, u, p.Held(u), got[u].Load())
			}
		}
		for _, u := range tiers {
			wg.Go(func() { p.Release(u, got[u].Load()) })
		}
		wg.Wait()
		for i := range tierOrder {
			if h := p.within[i].Load(); h != 0 {
				t.Fatalf("round %d: share %d holds %d after every release", round, i, h)
			}
		}
	}
}
