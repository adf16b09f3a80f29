package p2p

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestAgainAfterHandshake: a dial that failed in the security handshake
// (two dials crossed) is tried once more after 50 to 250 ms; any other
// failure, or a second handshake failure, is the answer; a context done
// meanwhile ends it with the first failure.
func TestAgainAfterHandshake(t *testing.T) {
	handshake := errors.New("failed to negotiate security protocol: noise: message is too short")
	other := errors.New("connection refused")
	for _, tc := range []struct {
		name  string
		errs  []error // what each call returns
		calls int
		want  error
	}{
		{"ok at once", []error{nil}, 1, nil},
		{"another failure", []error{other}, 1, other},
		{"crossed, then ok", []error{handshake, nil}, 2, nil},
		{"crossed twice", []error{handshake, handshake}, 2, handshake},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				calls := 0
				start := time.Now()
				var waited time.Duration
				err := AgainAfterHandshake(context.Background(), func(again bool) error {
					if again != (calls > 0) {
						t.Errorf("call %d: again %v", calls, again)
					}
					if calls == 1 {
						waited = time.Since(start)
					}
					calls++
					return tc.errs[calls-1]
				})
				if err != tc.want || calls != tc.calls {
					t.Fatalf("%v after %d calls; want %v after %d", err, calls, tc.want, tc.calls)
				}
				if calls == 2 && (waited < 50*time.Millisecond || waited >= 250*time.Millisecond) {
					t.Fatalf("the second try came after %v; want 50 to 250 ms", waited)
				}
			})
		})
	}
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		err := AgainAfterHandshake(ctx, func(bool) error { calls++; cancel(); return handshake })
		if err != handshake || calls != 1 {
			t.Fatalf("a context done in the pause: %v after %d calls; want the first failure after 1", err, calls)
		}
	})
}
