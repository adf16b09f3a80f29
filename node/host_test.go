package node

import (
	"errors"
	"strings"
	"testing"
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
