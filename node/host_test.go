package node

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	ma "github.com/multiformats/go-multiaddr"

	"github.com/wats-network/wats/p2p"
	"github.com/wats-network/wats/repo"
)

// TestPortInUseIsAnError: a second node configured on a port the first
// already listens on fails to start and names the address, instead of
// sharing the port (SO_REUSEPORT) or starting without that transport.
func TestPortInUseIsAnError(t *testing.T) {
	a := startNode(t, testConfig(false, time.Hour))
	var port string
	for _, addr := range a.Host().Network().ListenAddresses() {
		if v, err := addr.ValueForProtocol(ma.P_TCP); err == nil {
			port = v
		}
	}
	taken := "/ip4/127.0.0.1/tcp/" + port
	for _, tc := range []struct {
		name   string
		listen []string
	}{
		// With a second, free address libp2p itself would start on that
		// one alone; the node must not.
		{"one of two", []string{taken, "/ip4/127.0.0.1/udp/0/quic-v1"}},
		// With none free, libp2p fails with an error of its own; the
		// node's must still name the address and the key.
		{"all", []string{taken}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(false, time.Hour)
			cfg.P2P.Listen = tc.listen
			r, err := repo.Init(t.TempDir(), &repo.InitOptions{Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
			n, err := newOnRepo(r, Options{Logger: quietLogger()})
			if err == nil {
				n.Close()
				t.Fatalf("a second node started on %s, in use by the first", taken)
			}
			var le *p2p.ListenError
			if !errors.As(err, &le) || !errors.Is(err, p2p.ErrListen) {
				t.Fatalf("error %q (%T) is not a p2p.ListenError", err, err)
			}
			if len(le.Failed) != 1 || le.Failed[0] != taken {
				t.Errorf("failed addresses %q, want just %s", le.Failed, taken)
			}
			for _, want := range []string{taken, "p2p.listen", "address already in use"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

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
				err := againAfterHandshake(context.Background(), func(again bool) error {
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
		err := againAfterHandshake(ctx, func(bool) error { calls++; cancel(); return handshake })
		if err != handshake || calls != 1 {
			t.Fatalf("a context done in the pause: %v after %d calls; want the first failure after 1", err, calls)
		}
	})
}
