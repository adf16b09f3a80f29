package heads

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// failingStream fails every write.
type failingStream struct{}

func (failingStream) Write([]byte) (int, error)        { return 0, errors.New("reset") }
func (failingStream) SetWriteDeadline(time.Time) error { return nil }

// TestAnnouncer: a stream that fails is opened again after
// AnnounceRetryFirst, then twice as long each time up to AnnounceRetryMax,
// and done is told of each failure; ErrNotSpoken from open ends it; so
// does ctx.
func TestAnnouncer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		opens, dones := 0, 0
		var waits []time.Duration
		open := func(context.Context) (Stream, func(error), error) {
			opens++
			if opens == 10 {
				return nil, nil, ErrNotSpoken
			}
			return failingStream{}, func(err error) {
				if err != nil {
					dones++
				}
			}, nil
		}
		start := time.Now()
		Announcer(t.Context(), newMemLog(), open, func(_ error, wait time.Duration) { waits = append(waits, wait) })
		want := []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second,
			160 * time.Second, 5 * time.Minute, 5 * time.Minute, 5 * time.Minute}
		if opens != 10 || dones != 9 || len(waits) != len(want) {
			t.Fatalf("%d opens, %d failures told, waits %v", opens, dones, waits)
		}
		var total time.Duration
		for i, w := range want {
			if waits[i] != w {
				t.Fatalf("wait %d: %v, want %v (all: %v)", i, waits[i], w, waits)
			}
			total += w
		}
		if got := time.Since(start); got != total {
			t.Errorf("ended after %v, want %v", got, total)
		}

		ctx, cancel := context.WithCancel(t.Context())
		opens = 0
		go func() { time.Sleep(7 * time.Second); cancel() }()
		Announcer(ctx, newMemLog(), func(context.Context) (Stream, func(error), error) {
			opens++
			return nil, nil, errors.New("refused")
		}, nil)
		if opens != 2 {
			t.Errorf("%d opens before ctx ended at 7 s, want 2", opens)
		}
	})
}
