package bandwidth

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Class is the priority of a waiter on a Limiter (docs/adr/0048): the
// bytes of peers with standing (peers.Table.Standing, ADR 0041) are
// granted before those of strangers.
type Class uint8

// The Classes, in the order they are served.
const (
	// Standing is a peer with standing: one this node chose to dial (not
	// any it dialled: ADR 0041's addendum), a reputed or valued peer, or
	// an established author.
	Standing Class = iota
	// Stranger is every other peer: it gets what the peers with standing
	// leave.
	Stranger

	// NumClasses is the number of Classes; arrays indexed by Class have
	// this length.
	NumClasses = 2
)

var classNames = [NumClasses]string{Standing: "standing", Stranger: "stranger"}

// String returns "standing" or "stranger" (the class label of
// wats_bandwidth_waits_total), or "class(N)".
func (c Class) String() string {
	if int(c) >= NumClasses {
		return fmt.Sprintf("class(%d)", c)
	}
	return classNames[c]
}

// Bounds of a Limiter.
const (
	// MaxGrant is the most bytes one grant takes: a write is split into
	// grants of at most this, a read reads at most this before it waits,
	// so that one large transfer never holds the bucket while others wait.
	MaxGrant = 16 << 10
	// MinBytesPerS is the lowest rate a Limiter takes, in bytes a second:
	// one MaxGrant a second. Below it, a single grant would be a burst of
	// more than a second.
	MinBytesPerS = MaxGrant
	// MaxBytesPerS is the highest rate a Limiter takes, in bytes a second
	// (1 TiB/s): past any link a node has.
	MaxBytesPerS = 1 << 40
	// BurstTime is the burst of a Limiter, as time at its rate (at least
	// MaxGrant bytes): a transfer measured over seconds stays within its
	// rate but for this much.
	BurstTime = 20 * time.Millisecond
)

// ErrGrantTooLarge is Wait's error for a request of more than MaxGrant
// bytes: its caller splits larger transfers.
var ErrGrantTooLarge = errors.New("bandwidth: a grant is at most MaxGrant bytes")

// Limiter is a token bucket of bytes a second whose waiters are granted
// in priority order (docs/adr/0048): every waiter of class Standing
// before any of class Stranger, first come first served within a class.
// A waiter holds no tokens until it is granted all it asked for at once
// (at most MaxGrant), so a cancelled waiter has taken nothing, and the
// tokens the bucket gathered for it go to the next. Only the first waiter
// (the head) sleeps on a timer, until the bucket holds its grant; the
// others wait on a channel of their own that the grant before them
// signals: no goroutine beyond its callers'. Strangers wait for as long
// as waiters with standing take everything: that is the priority.
//
// It reads the clock through its now func: a reading before the last
// (a clock stepped backwards) adds no tokens and is taken as the new
// base, so that the bucket neither bursts nor stalls.
type Limiter struct {
	rate  float64 // bytes a second
	burst float64 // bytes
	now   func() time.Time

	mu     sync.Mutex
	tokens float64
	last   time.Time
	queues [NumClasses]queue

	waits [NumClasses]atomic.Uint64
}

// NewLimiter returns a Limiter of bytesPerS bytes a second
// (MinBytesPerS..MaxBytesPerS), its bucket full, reading the clock
// through now (time.Now when nil). Its burst is BurstTime at the rate, at
// least MaxGrant.
func NewLimiter(bytesPerS int64, now func() time.Time) (*Limiter, error) {
	if bytesPerS < MinBytesPerS || bytesPerS > MaxBytesPerS {
		return nil, fmt.Errorf("bandwidth: a rate of %d bytes a second is not in %d..%d", bytesPerS, MinBytesPerS, int64(MaxBytesPerS))
	}
	if now == nil {
		now = time.Now
	}
	rate := float64(bytesPerS)
	burst := math.Max(MaxGrant, rate*BurstTime.Seconds())
	return &Limiter{rate: rate, burst: burst, now: now, tokens: burst, last: now()}, nil
}

// Rate returns the Limiter's rate, in bytes a second.
func (l *Limiter) Rate() int64 { return int64(l.rate) }

// Waits returns the grants of class c that had to wait since the Limiter
// was made.
func (l *Limiter) Waits(c Class) uint64 { return l.waits[c].Load() }

// waiter is one caller of Wait queued for its grant.
type waiter struct {
	n          float64
	class      Class
	ready      chan struct{} // signalled when it may be the head
	prev, next *waiter
	queued     bool
}

// queue is a FIFO of waiters, linked through them (no allocation of its
// own; a waiter leaves from anywhere when its context ends).
type queue struct{ head, tail *waiter }

func (q *queue) push(w *waiter) {
	w.prev, w.next, w.queued = q.tail, nil, true
	if q.tail != nil {
		q.tail.next = w
	} else {
		q.head = w
	}
	q.tail = w
}

func (q *queue) remove(w *waiter) {
	if !w.queued {
		return
	}
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		q.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		q.tail = w.prev
	}
	w.prev, w.next, w.queued = nil, nil, false
}

// refill adds the tokens of the time since the last reading, up to the
// burst. l.mu is held.
func (l *Limiter) refill() {
	now := l.now()
	if d := now.Sub(l.last); d > 0 {
		l.tokens = math.Min(l.burst, l.tokens+d.Seconds()*l.rate)
	}
	l.last = now // a reading before the last one becomes the base
}

// head returns the waiter served next: the first of the highest class
// that has one. l.mu is held.
func (l *Limiter) head() *waiter {
	for c := range l.queues {
		if w := l.queues[c].head; w != nil {
			return w
		}
	}
	return nil
}

// ahead reports whether a waiter of class c would queue behind another.
// l.mu is held.
func (l *Limiter) ahead(c Class) bool {
	for k := Class(0); k <= c; k++ {
		if l.queues[k].head != nil {
			return true
		}
	}
	return false
}

// signalHead tells the head that it may take its turn. l.mu is held.
func (l *Limiter) signalHead() {
	if w := l.head(); w != nil {
		select {
		case w.ready <- struct{}{}:
		default:
		}
	}
}

// TryTake takes n bytes (at most MaxGrant) for class c if nobody of c or a
// higher class waits and the bucket holds them, and reports whether it
// did. It never waits.
func (l *Limiter) TryTake(c Class, n int) bool {
	if n <= 0 {
		return true
	}
	if n > MaxGrant || int(c) >= NumClasses {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refill()
	if !l.ahead(c) && l.tokens >= float64(n) {
		l.tokens -= float64(n)
		return true
	}
	return false
}

// Wait takes n bytes (1..MaxGrant; 0 or less takes nothing) for class c,
// waiting in its class's queue until the waiters of its class before it,
// and every waiter of a higher class, have been granted and the bucket
// holds n. It returns ctx's error if ctx ends first, having taken
// nothing; ErrGrantTooLarge for n above MaxGrant; an error for an invalid
// class.
func (l *Limiter) Wait(ctx context.Context, c Class, n int) error {
	if n <= 0 {
		return nil
	}
	if n > MaxGrant {
		return ErrGrantTooLarge
	}
	if int(c) >= NumClasses {
		return fmt.Errorf("bandwidth: invalid class %d", c)
	}
	l.mu.Lock()
	l.refill()
	if !l.ahead(c) && l.tokens >= float64(n) {
		l.tokens -= float64(n)
		l.mu.Unlock()
		return nil
	}
	if err := ctx.Err(); err != nil {
		l.mu.Unlock()
		return err
	}
	w := &waiter{n: float64(n), class: c, ready: make(chan struct{}, 1)}
	l.queues[c].push(w)
	l.waits[c].Add(1)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		var wake <-chan time.Time
		if l.head() == w {
			l.refill()
			if l.tokens >= w.n {
				l.tokens -= w.n
				l.queues[c].remove(w)
				l.signalHead()
				l.mu.Unlock()
				return nil
			}
			d := time.Duration(math.Ceil((w.n - l.tokens) / l.rate * float64(time.Second)))
			if timer == nil {
				timer = time.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			wake = timer.C
		}
		l.mu.Unlock()
		select {
		case <-wake:
		case <-w.ready:
		case <-ctx.Done():
			l.mu.Lock()
			l.queues[c].remove(w)
			l.signalHead() // w may have been the head, or just made it
			l.mu.Unlock()
			return ctx.Err()
		}
		l.mu.Lock()
	}
}

// Return gives back n bytes taken and not used (a write that failed part
// way), up to the burst.
func (l *Limiter) Return(n int) {
	if n <= 0 {
		return
	}
	l.mu.Lock()
	l.tokens = math.Min(l.burst, l.tokens+float64(n))
	l.signalHead()
	l.mu.Unlock()
}
