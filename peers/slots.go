package peers

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// Slots are the stranger connection slots (ADR 0030, after Bitcoin Core's
// inbound eviction): the peers that connect to the node and are not
// reputed (ADR 0014's rule: met in an earlier run, or first hello here at
// least core.ReputationAge ago; ADR 0031: a record made in this run is
// earned in seconds, and does not exempt) share a number of slots (a
// quarter of p2p.max_conns). A stranger that is reputed by the time
// another needs its slot leaves the slots. When a new stranger arrives and
// they are all taken, one stranger is evicted to make room, never the
// newcomer and never a reputed peer (Order): a suspect first; then,
// sparing the strangers served the most requests on this connection and
// the most recently connected, the one whose last served request (or
// connection) is oldest. So no number of ids holds more than the slots,
// and a newcomer, active from its first moment, gets in past ids that
// connect and idle, hoard streams or misbehave, while the strangers that
// keep using the node stay.
//
// Slots decide; the node carries out their verdicts (it bans an evicted
// stranger and closes its connections). K is whatever the node keys its
// peers by. The methods are safe for concurrent use.
type Slots[K comparable] struct {
	n     int
	facts func(k K, mono time.Duration) Stranger

	mu   sync.Mutex
	held map[K]struct{}
	// evicted are the strangers evicted and not yet gone (Gone): they
	// still hold connections, which Admit counts against the slack.
	evicted map[K]struct{}
}

// Stranger is what the slots read of a stranger when they choose whom to
// evict: its facts at that moment.
type Stranger struct {
	// Suspect: its tier is limits.TierSuspect.
	Suspect bool
	// Reputed: it has ADR 0014's established reputation by now.
	Reputed bool
	// Served counts its requests served on this connection.
	Served uint32
	// ConnectedAt and LastActive are monotonic readings (ns): its first
	// connection of this stay, and its last served request, or challenge
	// (or that connection).
	ConnectedAt, LastActive int64
	// Paid: a request of it was served on this stay by a solution this
	// node verified (ADR 0014's challenge), the last at PaidAt (a
	// monotonic reading, ns): it paid for its slot (ADR 0060).
	Paid   bool
	PaidAt int64
}

// NewSlots returns n slots (at least 1) whose holders' facts at a
// monotonic reading are facts' answer.
func NewSlots[K comparable](n int, facts func(k K, mono time.Duration) Stranger) *Slots[K] {
	return &Slots[K]{n: max(1, n), facts: facts, held: make(map[K]struct{}), evicted: make(map[K]struct{})}
}

// N is the number of slots.
func (s *Slots[K]) N() int { return s.n }

// Len is how many strangers hold a slot.
func (s *Slots[K]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.held)
}

// Holds reports whether k holds a slot.
func (s *Slots[K]) Holds(k K) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.held[k]
	return ok
}

// Slack is how many evicted strangers may still be closing, beyond the
// slots, before Admit refuses new strangers: a burst of hundreds of ids
// connecting at once would otherwise hold hundreds of connections (and
// their streams' windows) while the evictions catch up. Half the slots.
func (s *Slots[K]) Slack() int { return max(1, s.n/2) }

// Admit reports whether a new stranger may connect (the gater's check of
// a secured inbound connection): false when the strangers holding slots
// and those evicted but still connected fill the slots and their Slack.
func (s *Slots[K]) Admit() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.held)+len(s.evicted) < s.n+s.Slack()
}

// Take gives k a slot at the monotonic reading mono. When the slots are
// all taken, the strangers reputed by mono leave them first, evicting no
// one; if none did, the first of Order is evicted: its slot is k's, and it
// is returned (evicted true) for the node to close. Never k itself; a k
// that holds a slot already takes nothing.
func (s *Slots[K]) Take(k K, mono time.Duration) (victim K, evicted bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.held[k]; ok {
		return victim, false
	}
	if len(s.held) >= s.n {
		for o := range s.held {
			if s.facts(o, mono).Reputed {
				delete(s.held, o)
			}
		}
	}
	if len(s.held) >= s.n {
		others := make([]K, 0, len(s.held))
		for o := range s.held {
			others = append(others, o)
		}
		victim, evicted = s.Order(others, mono)[0], true
		delete(s.held, victim)
		s.evicted[victim] = struct{}{}
	}
	s.held[k] = struct{}{}
	return victim, evicted
}

// Drop frees k's slot, if it holds one (it is reputed, or dropped).
func (s *Slots[K]) Drop(k K) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.held, k)
}

// Gone is k's last disconnection: its slot is freed, and, if it was
// evicted, it is done closing.
func (s *Slots[K]) Gone(k K) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.held, k)
	delete(s.evicted, k)
}

// Shares of the slots spared from eviction (ADR 0030): the strangers
// served the most requests on this connection (those that keep using the
// node), and the most recently connected (newcomers in their first
// requests); and (ADR 0060) the strangers that paid most recently, within
// PaidFor. Together at most 7/8 of the slots: an eighth at least is
// always there to evict.
const (
	sparedMostServed = 4 // a quarter of the slots
	sparedYoungest   = 8 // an eighth of the slots
	sparedPaid       = 2 // half the slots
)

// PaidFor is how long a stranger that paid (a request served by a verified
// solution, Stranger.Paid) is spared from eviction by strangers that did
// not (ADR 0060): long enough for a newcomer's first exchanges on a loaded
// machine (its hello, a sync, its first DHT lookups), short enough that a
// slot is not bought for good with one solution. ADR 0014's ceiling of
// solved requests (1,200 a minute, all peers together) bounds the
// strangers that pay within it; the share (half the slots) bounds those
// spared.
const PaidFor = 10 * time.Second

// Order sorts strangers, in place, from the first to evict to the last,
// by their facts at mono, and returns them: suspects first, least recently active
// first; then the others not spared (the N/4 served the most, if served
// at all; the N/8 connected last; the N/2 that paid most recently, if
// they paid less than PaidFor before mono), least recently active first;
// then the spared ones, least recently active first.
func (s *Slots[K]) Order(strangers []K, mono time.Duration) []K {
	facts := make(map[K]Stranger, len(strangers))
	for _, k := range strangers {
		facts[k] = s.facts(k, mono)
	}
	spared := make(map[K]bool)
	byServed := slices.Clone(strangers)
	slices.SortStableFunc(byServed, func(a, b K) int { return cmp.Compare(facts[b].Served, facts[a].Served) })
	for _, k := range byServed[:min(len(byServed), s.n/sparedMostServed)] {
		if facts[k].Served > 0 {
			spared[k] = true
		}
	}
	byAge := slices.Clone(strangers)
	slices.SortStableFunc(byAge, func(a, b K) int { return cmp.Compare(facts[b].ConnectedAt, facts[a].ConnectedAt) })
	for _, k := range byAge[:min(len(byAge), s.n/sparedYoungest)] {
		spared[k] = true
	}
	paid := slices.DeleteFunc(slices.Clone(strangers), func(k K) bool {
		return !facts[k].Paid || int64(mono)-facts[k].PaidAt >= int64(PaidFor)
	})
	slices.SortStableFunc(paid, func(a, b K) int { return cmp.Compare(facts[b].PaidAt, facts[a].PaidAt) })
	for _, k := range paid[:min(len(paid), s.n/sparedPaid)] {
		spared[k] = true
	}
	rank := func(k K) int {
		switch {
		case facts[k].Suspect:
			return 0
		case !spared[k]:
			return 1
		}
		return 2
	}
	slices.SortStableFunc(strangers, func(a, b K) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(facts[a].LastActive, facts[b].LastActive))
	})
	return strangers
}
