package limits

import (
	"fmt"
	"sync"
)

// Shares of a Pool (ADR 0030): what the peers of a tier and of every tier
// below it may hold together, in 1/16ths of the pool. Strangers (new and
// suspect peers) never hold more than a quarter, so the peers that have
// shown value always find at least three quarters; normal peers and below
// never more than three quarters, so valued peers always find a quarter.
var poolShare = [NumTiers]int64{
	TierSuspect: 1,  // suspects: 1/16
	TierNew:     4,  // new and suspect together: 1/4
	TierNormal:  12, // normal, new and suspect together: 3/4
	TierValued:  16, // everyone: all of it
}

// tierOrder lists the tiers from the one given least to the one given
// most: a tier's share covers itself and every tier before it.
var tierOrder = [NumTiers]Tier{TierSuspect, TierNew, TierNormal, TierValued}

// Pool is a budget of bytes (or any unit) that peers of every tier draw
// on, where the lower tiers may hold only a share of it: reservations for
// a peer with value history come before those of never-seen peers, and no
// number of strangers can take what the others need (ADR 0030 §8: "A peer
// that showed value is never "too busy" while strangers hold their
// quarter"). It is safe for concurrent use. Build one with NewPool.
type Pool struct {
	capacity int64
	mu       struct {
		sync.Mutex
		// held is what each tier holds. INVARIANT: for each tier t, the
		// sum of held over t and the tiers before it in tierOrder is at
		// most poolShare[t]·capacity/16.
		held [NumTiers]int64
	}
}

// NewPool returns an empty Pool of capacity units, at least 1.
func NewPool(capacity int64) (*Pool, error) {
	if capacity < 1 {
		return nil, fmt.Errorf("limits: pool capacity %d, want at least 1", capacity)
	}
	return &Pool{capacity: capacity}, nil
}

// Capacity returns the pool's size.
func (p *Pool) Capacity() int64 { return p.capacity }

// Reserve takes n units for a peer of tier t if they fit: every share that
// covers t (its own and those of the tiers above it) must have room for n.
// It reports whether it took them; n <= 0 or an invalid tier takes nothing
// and fails.
func (p *Pool) Reserve(t Tier, n int64) bool {
	if n <= 0 || !t.Valid() {
		return false
	}
	r := rank(t)
	p.mu.Lock()
	defer p.mu.Unlock()
	var sum int64 // what the tiers up to u hold
	for i, u := range tierOrder {
		sum += p.mu.held[u]
		if i >= r && sum+n > poolShare[u]*p.capacity/16 {
			return false
		}
	}
	p.mu.held[t] += n
	return true
}

// rank is t's place in tierOrder.
func rank(t Tier) int {
	for i, u := range tierOrder {
		if u == t {
			return i
		}
	}
	return len(tierOrder)
}

// Release gives back n units that Reserve took for tier t.
func (p *Pool) Release(t Tier, n int64) {
	if n <= 0 || !t.Valid() {
		return
	}
	p.mu.Lock()
	p.mu.held[t] = max(0, p.mu.held[t]-n)
	p.mu.Unlock()
}

// Held returns what the peers of tier t hold.
func (p *Pool) Held(t Tier) int64 {
	if !t.Valid() {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.held[t]
}
