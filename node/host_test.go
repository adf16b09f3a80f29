package node

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

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
			var le *ListenError
			if !errors.As(err, &le) || !errors.Is(err, ErrListen) {
				t.Fatalf("error %q (%T) is not a ListenError", err, err)
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

// TestGaterRefusesNonEd25519Peers: docs/design.md §3, peers with other key types
// are refused before any stream.
func TestGaterRefusesNonEd25519Peers(t *testing.T) {
	g := newGater(time.Now)
	sk, _, err := crypto.GenerateSecp256k1Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	secp, _ := peer.IDFromPrivateKey(sk)
	ek, _, _ := crypto.GenerateEd25519Key(nil)
	ed, _ := peer.IDFromPrivateKey(ek)
	if g.InterceptPeerDial(secp) || g.InterceptSecured(0, secp, nil) {
		t.Error("a secp256k1 peer passed the gater")
	}
	if !g.InterceptPeerDial(ed) || !g.InterceptSecured(0, ed, nil) {
		t.Error("an Ed25519 peer was refused")
	}
	g.ban(ed, time.Minute)
	if g.InterceptPeerDial(ed) || g.InterceptSecured(0, ed, nil) {
		t.Error("a banned peer passed the gater")
	}
}

func TestTCPFirstDialRanker(t *testing.T) {
	tcp4 := ma.StringCast("/ip4/127.0.0.1/tcp/4001")
	quic4 := ma.StringCast("/ip4/127.0.0.1/udp/4001/quic-v1")
	tcp6 := ma.StringCast("/ip6/::1/tcp/4001")
	ranked := tcpFirstDialRanker([]ma.Multiaddr{quic4, tcp4, tcp6})
	delays := map[string]time.Duration{}
	for _, r := range ranked {
		delays[r.Addr.String()] = r.Delay
	}
	if len(delays) != 3 || delays[tcp4.String()] > delays[tcp6.String()]+time.Second {
		t.Fatalf("ranked %v", ranked)
	}
	first := min(delays[tcp4.String()], delays[tcp6.String()])
	if first != 0 || delays[quic4.String()] < quicHeadStart {
		t.Fatalf("TCP at %v, QUIC at %v: want TCP first and QUIC at least %v later", first, delays[quic4.String()], quicHeadStart)
	}
	// Without TCP addresses the default ranking stands: QUIC at once.
	if r := tcpFirstDialRanker([]ma.Multiaddr{quic4}); len(r) != 1 || r[0].Delay != 0 {
		t.Fatalf("QUIC alone: %v", r)
	}
	if isTCP(ma.StringCast("/ip4/1.2.3.4/tcp/1/ws")) || !isTCP(ma.StringCast("/ip4/1.2.3.4/tcp/1/p2p/12D3KooWQ5idLmdXzYPiqriamQeF7ryWMuRfnJa9mCyks4ey8Su5")) {
		t.Fatal("isTCP: ws is not plain TCP; a /p2p suffix does not change the transport")
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
