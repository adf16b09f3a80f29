package p2p

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/libp2p/go-libp2p/core/peer"
	corerouting "github.com/libp2p/go-libp2p/core/routing"
	"github.com/libp2p/go-libp2p/core/sec"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	ma "github.com/multiformats/go-multiaddr"
)

// ConnectError is a failure of Connect that the operator who asked for the
// dial can act on, said in one sentence: what is at the address given, and
// what to check (docs/adr/0051, second addendum). Error is that sentence
// alone, without libp2p's chain of dial errors, which Unwrap gives.
// Connect returns one for:
//   - a node at the address whose key is not the peer ID given
//     (go-libp2p's sec.ErrPeerIDMismatch);
//   - addresses where nothing listens (every dial refused, ECONNREFUSED);
//   - a bare peer ID whose addresses no peer of the DHT knew
//     (routing.ErrNotFound).
//
// Other failures (a timeout, a mix of causes) are returned as libp2p made
// them.
type ConnectError struct {
	// Msg is the sentence.
	Msg string
	// Err is the dial's or the lookup's own error.
	Err error
}

func (e *ConnectError) Error() string { return e.Msg }

// Unwrap returns the dial's or the lookup's error.
func (e *ConnectError) Unwrap() error { return e.Err }

// explainDial returns err, a failed dial of ai, as a *ConnectError when it
// is one of those ConnectError lists; else err itself.
func explainDial(ai peer.AddrInfo, err error) error {
	if err == nil {
		return nil
	}
	var de *swarm.DialError
	errors.As(err, &de)
	var mm sec.ErrPeerIDMismatch
	if errors.As(err, &mm) {
		at := addrsText(ai.Addrs)
		if de != nil {
			for _, te := range de.DialErrors {
				if errors.As(te.Cause, new(sec.ErrPeerIDMismatch)) {
					at = te.Address.String()
					break
				}
			}
		}
		return &ConnectError{Msg: fmt.Sprintf("the node at %s is %s, not %s; check the ID with wats id on that node",
			at, mm.Actual, mm.Expected), Err: err}
	}
	if de != nil && len(de.DialErrors) > 0 {
		var refused []ma.Multiaddr
		for _, te := range de.DialErrors {
			if errors.Is(te.Cause, syscall.ECONNREFUSED) {
				refused = append(refused, te.Address)
			}
		}
		if len(refused) == len(de.DialErrors) {
			return &ConnectError{Msg: fmt.Sprintf("nothing listens at %s (connection refused): check the port against "+
				"the addresses wats id prints on that node, and that its daemon runs", addrsText(refused)), Err: err}
		}
	}
	return err
}

// explainFind returns ferr, a failed lookup of p on the DHT after the dial
// of the addresses known for it failed with err (nil: none known), as a
// *ConnectError when no peer knew p (routing.ErrNotFound); else the two
// joined.
func explainFind(p peer.ID, err, ferr error) error {
	if !errors.Is(ferr, corerouting.ErrNotFound) {
		return errors.Join(err, ferr)
	}
	known := ""
	if err != nil {
		known = "the addresses this node knew for it did not answer, and "
	}
	return &ConnectError{Msg: fmt.Sprintf("%sno peer this node asked on the DHT knew the addresses of %s; "+
		"connect to it by a full multiaddr (…/p2p/%s), as wats id prints it on that node", known, p, p),
		Err: errors.Join(err, ferr)}
}

// addrsText lists addrs, comma-separated.
func addrsText(addrs []ma.Multiaddr) string {
	s := make([]string, len(addrs))
	for i, a := range addrs {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}
