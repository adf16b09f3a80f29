package heads

import (
	"context"
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	msmux "github.com/multiformats/go-multistream"

	"github.com/wats-network/wats/proto"
)

// Open opens a Heads stream (proto.HeadsID) to p on h for Announcer,
// without dialling, attached to the "wats" service scope; done resets it
// after a failure. A peer that refuses the protocol is ErrNotSpoken.
// wrote, if set, is told of each announcement written.
func Open(ctx context.Context, h host.Host, p peer.ID, wrote func()) (s Stream, done func(error), err error) {
	sctx, cancel := context.WithTimeout(ctx, proto.ResponseTimeout)
	ns, err := h.NewStream(network.WithNoDial(sctx, "heads"), p, proto.HeadsID)
	cancel()
	if errors.As(err, new(msmux.ErrNotSupported[protocol.ID])) {
		return nil, nil, fmt.Errorf("%w: %w", ErrNotSpoken, err)
	}
	if err != nil {
		return nil, nil, err
	}
	if ns.Protocol() != proto.HeadsID {
		ns.Reset()
		return nil, nil, ErrNotSpoken
	}
	if err := ns.Scope().SetService(proto.ServiceName); err != nil {
		ns.Reset()
		return nil, nil, err
	}
	s = ns
	if wrote != nil {
		s = counted{ns, wrote}
	}
	return s, func(err error) {
		if err != nil {
			ns.Reset()
		}
	}, nil
}

// counted tells wrote of each announcement written.
type counted struct {
	network.Stream
	wrote func()
}

func (c counted) Write(b []byte) (int, error) {
	c.wrote()
	return c.Stream.Write(b)
}

// Serve reads a peer's Heads stream s into t until it ends, attached to
// the "wats" service scope, at most one announcement every
// MinReadInterval (Read), telling read of each; the stream is reset at
// the end. It returns Read's error: a *proto.Error or one wrapping
// proto.ErrFrameTooLarge is the peer's fault (a bad announcement).
func Serve(s network.Stream, t *Tracker, read func()) error {
	defer s.Reset()
	if err := s.Scope().SetService(proto.ServiceName); err != nil {
		return err
	}
	p := s.Conn().RemotePeer()
	return Read(s, func(h *proto.Heads) {
		if read != nil {
			read()
		}
		t.Announced(p, h)
	})
}

// Bad reports whether err, Serve's, is the peer's fault.
func Bad(err error) bool {
	var perr *proto.Error
	return errors.As(err, &perr) || errors.Is(err, proto.ErrFrameTooLarge)
}
