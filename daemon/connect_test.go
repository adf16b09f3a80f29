package daemon

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	ma "github.com/multiformats/go-multiaddr"

	"github.com/wats-network/wats/api"
)

// TestAPIConnectSaysWhatIsWrong: a connect that fails for a reason the
// operator can act on answers that reason alone, one sentence naming the
// address and the peers (p2p.ConnectError), without libp2p's chain of
// dial errors: a node of another peer ID at the address, nothing
// listening there.
func TestAPIConnectSaysWhatIsWrong(t *testing.T) {
	a, b, other := startNode(t, nil), startNode(t, nil), startNode(t, nil)
	c := apiClient(t, a)
	ctx := t.Context()

	at := b.Host().Addrs()[0]
	_, err := c.Connect(ctx, at.String()+"/p2p/"+other.ID().String())
	want := fmt.Sprintf("the node at %s is %s, not %s; check the ID with wats id on that node", at, b.ID(), other.ID())
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Message != want {
		t.Errorf("wrong peer ID: %v\nwant the message %s", err, want)
	}

	l, lerr := net.Listen("tcp4", "127.0.0.1:0")
	if lerr != nil {
		t.Fatal(lerr)
	}
	closed := ma.StringCast(fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", l.Addr().(*net.TCPAddr).Port))
	l.Close()
	_, err = c.Connect(ctx, closed.String()+"/p2p/"+b.ID().String())
	if !errors.As(err, &ae) || !strings.HasPrefix(ae.Message, "nothing listens at "+closed.String()+" (connection refused)") ||
		strings.Contains(ae.Message, "\n") {
		t.Errorf("closed port: %v", err)
	}
}
