package p2p

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
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

// choiceLog records what a Dialer tells its Choices, as "choose P",
// "done P true|false" and "always P" lines.
type choiceLog struct {
	mu    sync.Mutex
	lines []string
}

func (c *choiceLog) add(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines = append(c.lines, s)
}

func (c *choiceLog) Choose(p peer.ID) func(bool) {
	c.add("choose " + p.String())
	return func(ok bool) { c.add(fmt.Sprintf("done %s %v", p, ok)) }
}

func (c *choiceLog) ChooseAlways(p peer.ID) { c.add("always " + p.String()) }

func (c *choiceLog) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.lines, "\n")
}

// TestDialerRecordsItsChoices: each dial of the Dialer is told to its
// Choices before it starts and when it returns, with whether it connected
// (a dial of a peer connected already connects); a bootstrap peer is
// chosen for the run before it is dialled; a dial of the host itself,
// not through the Dialer, is told nothing (ADR 0041's addendum).
func TestDialerRecordsItsChoices(t *testing.T) {
	a, b, c := relayedHost(t), relayedHost(t), relayedHost(t)
	log := new(choiceLog)
	d := NewDialer(a, log, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	bi := peer.AddrInfo{ID: b.ID(), Addrs: b.Addrs()}
	if err := d.Dial(ctx, bi); err != nil {
		t.Fatal(err)
	}
	if err := a.Connect(ctx, peer.AddrInfo{ID: c.ID(), Addrs: c.Addrs()}); err != nil {
		t.Fatal(err)
	}
	if err := d.Dial(ctx, bi); err != nil {
		t.Fatal(err)
	}
	gone := relayedHost(t)
	gi := peer.AddrInfo{ID: gone.ID(), Addrs: gone.Addrs()}
	_ = gone.Close()
	if err := d.Dial(ctx, gi); err == nil {
		t.Fatal("a dial of a closed host connected")
	}
	d.Bootstrap(ctx, []string{b.Addrs()[0].String() + "/p2p/" + b.ID().String()}, 8,
		func(context.Context, peer.AddrInfo) error { return nil }, func(func()) {})
	want := strings.Join([]string{"choose " + b.ID().String(), "done " + b.ID().String() + " true",
		"choose " + b.ID().String(), "done " + b.ID().String() + " true",
		"choose " + gone.ID().String(), "done " + gone.ID().String() + " false",
		"always " + b.ID().String()}, "\n")
	if got := log.String(); got != want {
		t.Errorf("told:\n%s\nwant:\n%s", got, want)
	}
}
