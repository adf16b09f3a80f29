package limits

import (
	"fmt"
	"sync/atomic"
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
// quarter"). It is safe for concurrent use and takes no lock: a
// reservation adds to each share it counts against and takes back what it
// added when one has no room, so the shares are never exceeded; two
// reservations that race for the last room may both fail, and their
// requesters be told "too busy" a moment early. Build one with NewPool.
type Pool struct {
	capacity int64
	// held is what each tier holds; within[i] what the tiers up to
	// tierOrder[i] hold together, counted against limit[i]. INVARIANT:
	// once no Reserve is under way, within[i] is the sum of held over
	// tierOrder[:i+1], at most limit[i] = poolShare·capacity/16.
	held   [NumTiers]atomic.Int64
	within [NumTiers]atomic.Int64
	limit  [NumTiers]int64
}

// NewPool returns an empty Pool of capacity units, at least 1.
func NewPool(capacity int64) (*Pool, error) {
	if capacity < 1 {
		return nil, fmt.Errorf("limits: pool capacity %d, want at least 1", capacity)
	}
	p := &Pool{capacity: capacity}
	for i, u := range tierOrder {
		p.limit[i] = poolShare[u] * capacity / 16
	}
	return p, nil
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
	for i := r; i < len(tierOrder); i++ {
		if p.within[i].Add(n) > p.limit[i] {
			for j := r; j <= i; j++ {
				p.within[j].Add(-n)
			}
			return false
		}
	}
	p.held[t].Add(n)
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

// Release gives back n units that Reserve took for tier t (at most what
// the tier holds).
func (p *Pool) Release(t Tier, n int64) {
	if n <= 0 || !t.Valid() {
		return
	}
	for {
		h := p.held[t].Load()
		take := min(n, h)
		if take <= 0 {
			return
		}
		if p.held[t].CompareAndSwap(h, h-take) {
			for i := rank(t); i < len(tierOrder); i++ {
				p.within[i].Add(-take)
			}
			return
		}
	}
}

// Held returns what the peers of tier t hold.
func (p *Pool) Held(t Tier) int64 {
	if !t.Valid() {
		return 0
	}
	return p.held[t].Load()
}
