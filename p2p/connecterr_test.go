package p2p

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	corerouting "github.com/libp2p/go-libp2p/core/routing"
	ma "github.com/multiformats/go-multiaddr"
)

// TestConnectSaysWhatIsWrong: an operator's dial that fails for a reason
// the operator can act on says so in one sentence (a *ConnectError), the
// libp2p error still under it: a node of another peer ID at the address,
// nothing listening there, a peer ID no peer of the DHT knew. A dial that
// connects is not touched.
func TestConnectSaysWhatIsWrong(t *testing.T) {
	a, b, other := relayedHost(t), relayedHost(t), relayedHost(t)
	d := NewDialer(a, nil, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// b's address with another node's peer ID.
	at := b.Addrs()[0]
	err := d.Connect(ctx, peer.AddrInfo{ID: other.ID(), Addrs: []ma.Multiaddr{at}}, nil)
	want := fmt.Sprintf("the node at %s is %s, not %s; check the ID with wats id on that node", at, b.ID(), other.ID())
	var ce *ConnectError
	if !errors.As(err, &ce) || err.Error() != want || strings.Contains(err.Error(), "\n") {
		t.Errorf("wrong peer ID: %v (%T)\nwant %s", err, err, want)
	}

	// A port where nothing listens.
	l, lerr := net.Listen("tcp4", "127.0.0.1:0")
	if lerr != nil {
		t.Fatal(lerr)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	closed := ma.StringCast(fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", port))
	err = d.Connect(ctx, peer.AddrInfo{ID: b.ID(), Addrs: []ma.Multiaddr{closed}}, nil)
	want = fmt.Sprintf("nothing listens at %s (connection refused): check the port against the addresses wats id prints on that node, and that its daemon runs", closed)
	if !errors.As(err, &ce) || err.Error() != want {
		t.Errorf("closed port: %v (%T)\nwant %s", err, err, want)
	}

	// A bare peer ID that no peer of the DHT knew.
	find := func(_ context.Context, p peer.ID) (peer.AddrInfo, error) {
		return peer.AddrInfo{}, fmt.Errorf("find %s on the DHT: %w", p, corerouting.ErrNotFound)
	}
	err = d.Connect(ctx, peer.AddrInfo{ID: other.ID()}, find)
	want = "no peer this node asked on the DHT knew the addresses of " + other.ID().String() +
		"; connect to it by a full multiaddr (…/p2p/" + other.ID().String() + "), as wats id prints it on that node"
	if !errors.As(err, &ce) || err.Error() != want || !errors.Is(err, corerouting.ErrNotFound) {
		t.Errorf("not found on the DHT: %v (%T)\nwant %s", err, err, want)
	}
	// Any other failure of the lookup is passed on as it is.
	other2 := errors.New("lookup timed out")
	err = d.Connect(ctx, peer.AddrInfo{ID: other.ID()}, func(context.Context, peer.ID) (peer.AddrInfo, error) {
		return peer.AddrInfo{}, other2
	})
	if errors.As(err, &ce) || !errors.Is(err, other2) {
		t.Errorf("another lookup failure: %v (%T), want it as it is", err, err)
	}

	if err := d.Connect(ctx, peer.AddrInfo{ID: b.ID(), Addrs: b.Addrs()}, nil); err != nil {
		t.Errorf("a right address: %v", err)
	}
}
