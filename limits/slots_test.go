package limits

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

// TestSlotsBounds: NewSlots at and past MinBlobFetchesPerPeer and
// MaxBlobFetchesPerPeer.
func TestSlotsBounds(t *testing.T) {
	for n, ok := range map[int]bool{-1: false, 0: false, 1: true, 4: true, 64: true, 65: false} {
		s, err := NewSlots(n)
		if (err == nil) != ok {
			t.Errorf("NewSlots(%d): %v", n, err)
			continue
		}
		if !ok {
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("NewSlots(%d): %v is not ErrInvalid", n, err)
			}
			continue
		}
		if s.PerPeer() != n {
			t.Errorf("PerPeer %d", s.PerPeer())
		}
	}
}

// TestSlots: a peer gets exactly its slots; a release frees one, once; a
// peer's slots do not touch another's; no entry is left when all are free.
func TestSlots(t *testing.T) {
	for _, per := range []int{1, 4, 64} {
		s, _ := NewSlots(per)
		a, b := testPeer(1), testPeer(2)
		var releases []func()
		for i := range per {
			rel, ok := s.TryAcquire(a)
			if !ok || rel == nil {
				t.Fatalf("%d slots: acquire %d refused", per, i)
			}
			releases = append(releases, rel)
		}
		if rel, ok := s.TryAcquire(a); ok || rel != nil {
			t.Fatalf("%d slots: slot %d granted", per, per+1)
		}
		if s.InUse(a) != per {
			t.Fatalf("in use %d", s.InUse(a))
		}
		relB, ok := s.TryAcquire(b)
		if !ok {
			t.Fatal("b refused while a is full")
		}
		releases[0]()
		releases[0]() // no effect
		if s.InUse(a) != per-1 {
			t.Fatalf("after one release (twice): %d in use, want %d", s.InUse(a), per-1)
		}
		rel, ok := s.TryAcquire(a)
		if !ok {
			t.Fatal("refused after a release")
		}
		if _, ok := s.TryAcquire(a); ok {
			t.Fatal("a double release freed two slots")
		}
		rel()
		for _, r := range releases {
			r()
		}
		relB()
		if s.Len() != 0 || s.InUse(a) != 0 || s.InUse(b) != 0 {
			t.Fatalf("%d entries left", s.Len())
		}
	}
}

// TestSlotsConcurrent: under the race detector, no peer ever holds more
// than its slots, every slot acquired is released, and nothing is left.
func TestSlotsConcurrent(t *testing.T) {
	const per = 4
	s, _ := NewSlots(per)
	peers := testPeers(3)
	var held [3]atomic.Int32
	var granted, overflow atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				j := (g + i) % len(peers)
				rel, ok := s.TryAcquire(peers[j])
				if !ok {
					continue
				}
				granted.Add(1)
				if held[j].Add(1) > per {
					overflow.Add(1)
				}
				held[j].Add(-1)
				rel()
				rel()
			}
		})
	}
	wg.Wait()
	if overflow.Load() != 0 || granted.Load() == 0 || s.Len() != 0 {
		t.Fatalf("overflow %d, granted %d, %d entries left", overflow.Load(), granted.Load(), s.Len())
	}
}

// TestSlotsManyPeers: memory follows the slots in use, not the peers seen.
func TestSlotsManyPeers(t *testing.T) {
	s, _ := NewSlots(4)
	for i := range 100_000 {
		rel, ok := s.TryAcquire(testPeer(i))
		if !ok {
			t.Fatal("refused")
		}
		rel()
	}
	if s.Len() != 0 {
		t.Fatalf("%d entries", s.Len())
	}
}
