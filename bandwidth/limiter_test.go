package bandwidth

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/time/rate"
)

const testRate = 1 << 20 // 1 MiB/s

func newTestLimiter(t *testing.T, bytesPerS int64, now func() time.Time) *Limiter {
	t.Helper()
	l, err := NewLimiter(bytesPerS, now)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// drain runs a caller of class c that takes MaxGrant after MaxGrant
// until ctx ends, adding what it was granted to got.
func drain(ctx context.Context, l *Limiter, c Class, got *atomic.Int64, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for l.Wait(ctx, c, MaxGrant) == nil {
			got.Add(MaxGrant)
		}
	}()
}

// TestLimiterRate: one caller taking all it can gets the rate, measured
// in fake time over 10 s, within the burst and one grant.
func TestLimiterRate(t *testing.T) {
	for _, r := range []int64{MinBytesPerS, testRate, 8 << 20} {
		synctest.Test(t, func(t *testing.T) {
			l := newTestLimiter(t, r, nil)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			var got atomic.Int64
			var wg sync.WaitGroup
			drain(ctx, l, Stranger, &got, &wg)
			wg.Wait()
			want := float64(r) * 10
			burst := max(MaxGrant, float64(r)*BurstTime.Seconds())
			if g := float64(got.Load()); g > want+burst || g < want-MaxGrant {
				t.Errorf("rate %d: %v bytes in 10 s, want %v (burst %v)", r, g, want, burst)
			}
		})
	}
}

// TestLimiterPriority: while callers with standing take all the rate,
// strangers get nothing past the first burst; when the standing callers
// take half, strangers get the other half.
func TestLimiterPriority(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newTestLimiter(t, testRate, nil)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		var standing, stranger atomic.Int64
		var wg sync.WaitGroup
		drain(ctx, l, Stranger, &stranger, &wg)
		drain(ctx, l, Stranger, &stranger, &wg)
		drain(ctx, l, Standing, &standing, &wg)
		wg.Wait()
		if s := stranger.Load(); s > 2*MaxGrant {
			t.Errorf("strangers got %d bytes while a peer with standing took all", s)
		}
		if s := standing.Load(); s < 10*testRate-2*MaxGrant {
			t.Errorf("the peer with standing got %d bytes of %d", s, 10*testRate)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		l := newTestLimiter(t, testRate, nil)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		var standing, stranger atomic.Int64
		var wg sync.WaitGroup
		drain(ctx, l, Stranger, &stranger, &wg)
		wg.Add(1)
		go func() { // half the rate: a grant every 2 grants' time
			defer wg.Done()
			tick := time.NewTicker(2 * MaxGrant * time.Second / testRate)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				if l.Wait(ctx, Standing, MaxGrant) == nil {
					standing.Add(MaxGrant)
				}
			}
		}()
		wg.Wait()
		half := int64(5 * testRate)
		for name, g := range map[string]int64{"standing": standing.Load(), "stranger": stranger.Load()} {
			if g < half*9/10 || g > half*11/10 {
				t.Errorf("%s got %d bytes in 10 s, want about %d", name, g, half)
			}
		}
	})
}

// TestLimiterFIFO: callers of one class are granted in the order they
// came, and a caller with standing that comes last goes first.
func TestLimiterFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newTestLimiter(t, MinBytesPerS, nil)
		if !l.TryTake(Stranger, MaxGrant) { // empty the bucket
			t.Fatal("a full bucket refused a grant")
		}
		var mu sync.Mutex
		var order []int
		var wg sync.WaitGroup
		start := func(i int, c Class) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := l.Wait(t.Context(), c, MaxGrant); err != nil {
					t.Error(err)
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
			}()
			synctest.Wait() // queued before the next comes
		}
		for i := range 4 {
			start(i, Stranger)
		}
		start(4, Standing)
		wg.Wait()
		want := []int{4, 0, 1, 2, 3}
		for i := range want {
			if order[i] != want[i] {
				t.Fatalf("granted in the order %v, want %v", order, want)
			}
		}
		if w := l.Waits(Stranger); w != 4 {
			t.Errorf("Waits(Stranger) = %d, want 4", w)
		}
	})
}

// TestLimiterCancel: a waiter whose context ends returns its error having
// taken nothing, and the tokens gathered for it go to the next waiter,
// which is granted when it would have been had the first never come.
func TestLimiterCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newTestLimiter(t, MinBytesPerS, nil) // one grant a second
		l.TryTake(Stranger, MaxGrant)
		start := time.Now()
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() { errc <- l.Wait(ctx, Stranger, MaxGrant) }()
		synctest.Wait()
		done := make(chan time.Duration, 1)
		go func() {
			if err := l.Wait(t.Context(), Stranger, MaxGrant); err != nil {
				t.Error(err)
			}
			done <- time.Since(start)
		}()
		synctest.Wait()
		time.Sleep(500 * time.Millisecond)
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled Wait = %v", err)
		}
		if d := <-done; d != time.Second {
			t.Errorf("the waiter behind a cancelled one was granted after %v, want 1s", d)
		}
		// A context already ended with tokens short: an error at once.
		if err := l.Wait(ctx, Stranger, MaxGrant); !errors.Is(err, context.Canceled) {
			t.Errorf("Wait with an ended context = %v", err)
		}
	})
}

// TestLimiterReturn: tokens given back are granted again at once.
func TestLimiterReturn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newTestLimiter(t, MinBytesPerS, nil)
		l.TryTake(Stranger, MaxGrant)
		if l.TryTake(Stranger, MaxGrant) {
			t.Fatal("an empty bucket granted")
		}
		l.Return(MaxGrant)
		if !l.TryTake(Standing, MaxGrant) {
			t.Error("tokens returned were not granted")
		}
	})
}

// TestLimiterClockBackwards: a clock stepped back an hour neither stalls
// the bucket nor fills it: the rate over the next 10 s is the rate.
func TestLimiterClockBackwards(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var offset atomic.Int64
		now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
		l := newTestLimiter(t, testRate, now)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		var got atomic.Int64
		var wg sync.WaitGroup
		drain(ctx, l, Stranger, &got, &wg)
		time.Sleep(3 * time.Second)
		offset.Store(int64(-time.Hour))
		time.Sleep(time.Second)
		offset.Store(int64(2 * time.Hour)) // and forward: one burst at most
		wg.Wait()
		burst := max(MaxGrant, testRate*BurstTime.Seconds())
		if g := float64(got.Load()); g < 10*testRate-4*MaxGrant || g > 10*testRate+2*burst {
			t.Errorf("%v bytes in 10 s across clock steps, want about %d", g, 10*testRate)
		}
	})
}

// TestLimiterBounds: rates at and just past their bounds, grants at and
// past MaxGrant, an invalid class.
func TestLimiterBounds(t *testing.T) {
	for r, ok := range map[int64]bool{MinBytesPerS: true, MinBytesPerS - 1: false, MaxBytesPerS: true, MaxBytesPerS + 1: false, 0: false, -1: false} {
		if _, err := NewLimiter(r, nil); (err == nil) != ok {
			t.Errorf("NewLimiter(%d) = %v", r, err)
		}
	}
	l := newTestLimiter(t, MaxBytesPerS, nil)
	if err := l.Wait(t.Context(), Stranger, MaxGrant); err != nil {
		t.Errorf("Wait(MaxGrant) = %v", err)
	}
	if err := l.Wait(t.Context(), Stranger, MaxGrant+1); !errors.Is(err, ErrGrantTooLarge) {
		t.Errorf("Wait(MaxGrant+1) = %v", err)
	}
	if l.TryTake(Stranger, MaxGrant+1) {
		t.Error("TryTake(MaxGrant+1) took")
	}
	if err := l.Wait(t.Context(), NumClasses, 1); err == nil {
		t.Error("Wait of an invalid class took")
	}
	if err := l.Wait(t.Context(), Stranger, 0); err != nil {
		t.Errorf("Wait(0) = %v", err)
	}
}

// BenchmarkLimiter is a grant that does not wait, from parallel callers:
// the cost the limiter adds to each 16 KiB of a stream. Compare with
// BenchmarkXRate, golang.org/x/time/rate's Limiter doing the same.
func BenchmarkLimiter(b *testing.B) {
	l, _ := NewLimiter(MaxBytesPerS, nil)
	ctx := context.Background()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := l.Wait(ctx, Stranger, 1024); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkXRate is BenchmarkLimiter's grant with x/time/rate.
func BenchmarkXRate(b *testing.B) {
	l := rate.NewLimiter(rate.Limit(MaxBytesPerS), MaxGrant)
	ctx := context.Background()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := l.WaitN(ctx, 1024); err != nil {
				b.Fatal(err)
			}
		}
	})
}
