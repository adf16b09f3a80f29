package blobs

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/internal/scripttest"
)

// TestBackoffDelay checks the ladder of ADR 0014 with figures written out
// by hand: 30 s doubling, capped at 1 h exactly.
func TestBackoffDelay(t *testing.T) {
	want := []time.Duration{
		0,
		30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute,
		8 * time.Minute, 16 * time.Minute, 32 * time.Minute,
		time.Hour, time.Hour, time.Hour,
	}
	for n, w := range want {
		if got := BackoffDelay(n); got != w {
			t.Errorf("BackoffDelay(%d) = %v, want %v", n, got, w)
		}
	}
	for _, n := range []int{-1, -1 << 62, 200, 1 << 20, int(^uint(0) >> 1)} {
		want := time.Duration(0)
		if n > 0 {
			want = time.Hour
		}
		if got := BackoffDelay(n); got != want {
			t.Errorf("BackoffDelay(%d) = %v, want %v", n, got, want)
		}
	}
}

// TestBackoffTwoHundredFailures fails one provider 200 times in a row, each
// as soon as its skip ends: the skip grows to 1 h and stays there, never
// shorter, never longer, never negative.
func TestBackoffTwoHundredFailures(t *testing.T) {
	var b Backoff // the zero value is ready
	now := base
	var prev time.Duration
	for i := 1; i <= 200; i++ {
		b.Failed("p", now)
		skipped, until := b.Skipped("p", now)
		if !skipped {
			t.Fatalf("failure %d: not skipped", i)
		}
		d := until.Sub(now)
		if d < prev || d > time.Hour || d < 30*time.Second {
			t.Fatalf("failure %d: skipped for %v after %v", i, d, prev)
		}
		if i >= 8 && d != time.Hour {
			t.Fatalf("failure %d: skipped for %v, want 1h", i, d)
		}
		if skipped, _ := b.Skipped("p", until.Add(-time.Nanosecond)); !skipped {
			t.Fatalf("failure %d: not skipped just before %v", i, d)
		}
		prev = d
		now = until
	}
	if got := b.entries.get("p").val; got != maxFailures {
		t.Fatalf("failure count %d, want saturated at %d", got, maxFailures)
	}
}

// TestBackoffCap fills a Backoff to MaxTracked skipped providers, then
// fails one more: the one whose skip ends soonest is evicted, the newcomer
// is tracked, and the size stays at the cap.
func TestBackoffCap(t *testing.T) {
	var b Backoff
	// Provider i fails at base+i*100µs, so provider 0's skip ends first
	// and all are still skipped at base+7s.
	for i := range MaxTracked {
		b.Failed(peer.ID(fmt.Sprint("p", i)), base.Add(time.Duration(i)*100*time.Microsecond))
	}
	if b.Len() != MaxTracked || b.Evicted() != 0 {
		t.Fatalf("at the cap: len %d evicted %d, want %d and 0", b.Len(), b.Evicted(), MaxTracked)
	}
	now := base.Add(7 * time.Second)
	b.Failed("new", now)
	if b.Len() != MaxTracked || b.Evicted() != 1 {
		t.Fatalf("past the cap: len %d evicted %d, want %d and 1", b.Len(), b.Evicted(), MaxTracked)
	}
	if skipped, _ := b.Skipped("p0", now); skipped {
		t.Error("p0, whose skip ends soonest, was not evicted")
	}
	for _, p := range []peer.ID{"p1", peer.ID(fmt.Sprint("p", MaxTracked-1)), "new"} {
		if skipped, _ := b.Skipped(p, now); !skipped {
			t.Errorf("%s: not skipped", string(p))
		}
	}
	// A known provider failing again at the cap evicts nothing.
	b.Failed("p1", base.Add(time.Hour))
	if b.Evicted() != 1 {
		t.Errorf("evicted %d after a known provider failed, want 1", b.Evicted())
	}
	// Once everything is forgettable, the next failure frees the map.
	b.Failed("last", base.Add(3*time.Hour))
	if b.Len() != 1 || b.Evicted() != 1 {
		t.Errorf("after forgetting: len %d evicted %d, want 1 and 1", b.Len(), b.Evicted())
	}
}

// TestBackoffCapEvictsSoonest checks the eviction order with a small cap:
// the entry whose skip ends soonest goes, whatever the insertion order.
func TestBackoffCapEvictsSoonest(t *testing.T) {
	b := &Backoff{limit: 3}
	b.Failed("a", base)                     // until 30 s
	b.Failed("a", base.Add(30*time.Second)) // until 1m30s
	b.Failed("b", base.Add(10*time.Second)) // until 40 s
	b.Failed("c", base.Add(20*time.Second)) // until 50 s
	b.Failed("d", base.Add(31*time.Second)) // at the cap: b goes
	for p, want := range map[peer.ID]bool{"a": true, "b": false, "c": true, "d": true} {
		if skipped, _ := b.Skipped(p, base.Add(31*time.Second)); skipped != want {
			t.Errorf("%s skipped = %v, want %v", string(p), skipped, want)
		}
	}
	if b.Len() != 3 || b.Evicted() != 1 {
		t.Errorf("len %d evicted %d, want 3 and 1", b.Len(), b.Evicted())
	}
}

// TestBackoffEmptyID: an empty id is never tracked.
func TestBackoffEmptyID(t *testing.T) {
	var b Backoff
	b.Failed("", base)
	if skipped, _ := b.Skipped("", base); skipped || b.Len() != 0 {
		t.Fatalf("empty id tracked: skipped %v len %d", skipped, b.Len())
	}
}

// TestBackoffSucceededUnknown: clearing a provider never seen is harmless,
// and clearing one in the middle of the heap keeps the others right.
func TestBackoffSucceededUnknown(t *testing.T) {
	var b Backoff
	b.Succeeded("nobody")
	for i := range 10 {
		b.Failed(peer.ID(fmt.Sprint("p", i)), base.Add(time.Duration(i)*time.Second))
	}
	b.Succeeded("p4")
	b.Succeeded("p0")
	if b.Len() != 8 {
		t.Fatalf("len %d, want 8", b.Len())
	}
	for i := range 10 {
		_, until := b.Skipped(peer.ID(fmt.Sprint("p", i)), base)
		want := base.Add(time.Duration(i)*time.Second + 30*time.Second)
		if i == 0 || i == 4 {
			want = time.Time{}
		}
		if !until.Equal(want) {
			t.Errorf("p%d until %v, want %v", i, until, want)
		}
	}
	// Prune drops them in order of their skip's end.
	if n := b.Prune(base.Add(time.Hour + 35*time.Second)); n != 4 { // p1, p2, p3, p5
		t.Errorf("pruned %d, want 4", n)
	}
}

// TestBackoffConcurrent exercises the lock under -race.
func TestBackoffConcurrent(t *testing.T) {
	var b Backoff
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 500 {
				p := peer.ID(fmt.Sprint("p", (g*7+i)%50))
				now := base.Add(time.Duration(i) * time.Second)
				switch i % 3 {
				case 0:
					b.Failed(p, now)
				case 1:
					b.Skipped(p, now)
				default:
					b.Succeeded(p)
				}
			}
		})
	}
	wg.Wait()
	if b.Len() > 50 {
		t.Fatalf("len %d > 50 distinct providers", b.Len())
	}
}

// TestBackoffScript steps through testdata/backoff.txt.
func TestBackoffScript(t *testing.T) {
	var b *Backoff
	t0 := time.Unix(1_700_000_000, 0)
	at := func(s string) (time.Time, error) {
		f, err := strconv.ParseFloat(s, 64)
		return t0.Add(time.Duration(f * float64(time.Second))), err
	}
	scripttest.Run(t, "testdata/backoff.txt", 40, func(f []string) (string, error) {
		switch f[0] {
		case "reset":
			b = NewBackoff()
			return "ok", nil
		case "fail":
			now, err := at(f[2])
			if err != nil {
				return "", err
			}
			b.Failed(peer.ID(f[1]), now)
			return "ok", nil
		case "ok":
			b.Succeeded(peer.ID(f[1]))
			return "ok", nil
		case "skipped":
			now, err := at(f[2])
			if err != nil {
				return "", err
			}
			if skipped, until := b.Skipped(peer.ID(f[1]), now); skipped {
				return "skipped until " + strconv.FormatFloat(until.Sub(t0).Seconds(), 'f', -1, 64), nil
			}
			return "tried", nil
		case "prune":
			now, err := at(f[1])
			if err != nil {
				return "", err
			}
			return strconv.Itoa(b.Prune(now)), nil
		case "len":
			return strconv.Itoa(b.Len()), nil
		}
		return "", fmt.Errorf("unknown command %q", f[0])
	})
}
