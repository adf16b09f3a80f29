package challenge

import "time"

// MaxUsedSeeds bounds the replay memory. ADR 0014, "Seeds are stateless":
// "used seeds are kept until they expire, at most 4,096; past that the
// oldest is forgotten and every seed expiring no later is refused". It
// bounds the memory a flood of valid solutions can take (about 60 bytes a
// seed).
const MaxUsedSeeds = 4096

// usedSeed is one entry of the replay memory.
type usedSeed struct {
	expires int64 // unix seconds
	seed    Seed
}

// replayMemory remembers used seeds until they expire, at most max of
// them. When full, it forgets the seed that expires first and raises the
// watermark to its expiry; every seed expiring no later than the watermark
// is refused from then on, so a replay is never accepted. A seed forgotten
// because it expired raises the watermark too: the next call may pass an
// earlier now (the wall clock stepped back, or a caller read it before
// the lock), at which the seed is not expired, and must still refuse it.
//
// Not safe for concurrent use; Issuer guards it with its mutex.
//
// INVARIANT: len(heap) == len(seen) <= max; heap is a min-heap on expires;
// every seed once added is either in seen or expires <= max(watermark,
// expiredMark).
type replayMemory struct {
	max  int
	seen map[Seed]struct{}
	heap []usedSeed
	// Seeds with expires <= watermark or <= expiredMark are refused:
	// watermark is raised by seeds forgotten for room, expiredMark by seeds
	// forgotten because they expired (only a clock that steps back can
	// bring one of those back).
	watermark, expiredMark int64
}

func newReplayMemory(max int) *replayMemory {
	return &replayMemory{
		max:         max,
		seen:        make(map[Seed]struct{}, max),
		heap:        make([]usedSeed, 0, max),
		watermark:   -1 << 63,
		expiredMark: -1 << 63,
	}
}

// prune forgets the seeds that have expired at now, raising the watermark
// to each one's expiry: at now the expiry check refuses them before the
// replay memory is asked, and at an earlier now the watermark does.
func (m *replayMemory) prune(now time.Time) {
	for len(m.heap) > 0 && expired(m.heap[0].expires, now) {
		m.expiredMark = max(m.expiredMark, m.heap[0].expires)
		delete(m.seen, m.heap[0].seed)
		m.pop()
	}
}

// check returns ErrReplayed for a seed in memory, ErrForgotten for one at
// or below the watermark, nil otherwise.
func (m *replayMemory) check(s *Seed, expires int64) error {
	if _, ok := m.seen[*s]; ok {
		return ErrReplayed
	}
	if expires <= m.watermark || expires <= m.expiredMark {
		return ErrForgotten
	}
	return nil
}

// add records s as used.
//
// REQUIRES: check(s, expires) == nil.
func (m *replayMemory) add(s *Seed, expires int64) {
	if len(m.heap) >= m.max {
		if expires <= m.heap[0].expires {
			// s itself is the oldest: forget it at once.
			m.watermark = max(m.watermark, expires)
			return
		}
		m.watermark = max(m.watermark, m.heap[0].expires)
		delete(m.seen, m.heap[0].seed)
		m.pop()
	}
	m.seen[*s] = struct{}{}
	m.push(usedSeed{expires: expires, seed: *s})
}

func (m *replayMemory) len() int { return len(m.heap) }

func (m *replayMemory) push(e usedSeed) {
	h := append(m.heap, e)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h[p].expires <= h[i].expires {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
	m.heap = h
}

func (m *replayMemory) pop() {
	h := m.heap
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	i := 0
	for {
		l, r, s := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].expires < h[s].expires {
			s = l
		}
		if r < len(h) && h[r].expires < h[s].expires {
			s = r
		}
		if s == i {
			break
		}
		h[i], h[s] = h[s], h[i]
		i = s
	}
	m.heap = h
}
