package bandwidth

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// Host returns h with every stream it opens (NewStream) metered by m, and
// m told of disconnections (to forget a peer's counts). The node's
// inbound streams are wrapped where it accepts them (Wrap). Nothing in
// libp2p, kad-dht, gossipsub or boxo's bitswap type-asserts the host, so
// the wrapper is what they all open streams through; the basic host's own
// services (identify, ping, AutoNAT, hole punching) open theirs on the
// basic host and are not metered, but their inbound streams are
// (docs/adr/0048).
func (m *Meter) Host(h host.Host) host.Host {
	h.Network().Notify(&network.NotifyBundle{DisconnectedF: m.disconnected})
	return &meteredHost{Host: h, m: m}
}

// meteredHost is a host.Host whose NewStream meters the stream.
type meteredHost struct {
	host.Host
	m *Meter
}

func (h *meteredHost) NewStream(ctx context.Context, p peer.ID, pids ...protocol.ID) (network.Stream, error) {
	s, err := h.Host.NewStream(ctx, p, pids...)
	if err != nil {
		return nil, err
	}
	return h.m.Wrap(s), nil
}

// Wrap returns s counted and held to the caps: a write waits for up
// tokens before each MaxGrant of it; a read reads at most MaxGrant and
// then waits for down tokens, so that a peer sending too fast is slowed
// by the stream's flow control. A wait ends with the stream's deadline
// (os.ErrDeadlineExceeded), with its Close or Reset, or when the Meter
// closes.
func (m *Meter) Wrap(s network.Stream) network.Stream {
	return &stream{Stream: s, m: m, p: s.Conn().RemotePeer(), pc: m.peer(s.Conn().RemotePeer())}
}

// stream is a metered network.Stream.
type stream struct {
	network.Stream
	m  *Meter
	p  peer.ID
	pc *peerCount

	mu       sync.Mutex
	rdl, wdl time.Time                        // the deadlines set; zero for none
	cancels  map[*context.CancelFunc]struct{} // the waits in progress
	closed   bool
}

// ErrClosed is the error of a read or write whose wait for tokens was
// ended by the stream's Close or Reset, or the Meter's Close.
var ErrClosed = errors.New("bandwidth: stream closed while waiting for bandwidth")

func (s *stream) Read(b []byte) (int, error) {
	l := s.m.down
	if l != nil && len(b) > MaxGrant {
		b = b[:MaxGrant]
	}
	n, err := s.Stream.Read(b)
	s.m.received(s.pc, n)
	if l != nil && n > 0 {
		if werr := s.wait(l, n, true); werr != nil && err == nil {
			err = werr
		}
	}
	return n, err
}

func (s *stream) Write(b []byte) (int, error) {
	l := s.m.up
	if l == nil {
		n, err := s.Stream.Write(b)
		s.m.sent(s.pc, n)
		return n, err
	}
	written := 0
	for len(b) > 0 {
		c := min(len(b), MaxGrant)
		if err := s.wait(l, c, false); err != nil {
			return written, err
		}
		n, err := s.Stream.Write(b[:c])
		s.m.sent(s.pc, n)
		written += n
		if n < c {
			l.Return(c - n)
		}
		if err != nil {
			return written, err
		}
		b = b[c:]
	}
	return written, nil
}

// wait takes n tokens of l for the stream's peer, within the read's (or
// the write's) deadline.
func (s *stream) wait(l *Limiter, n int, read bool) error {
	class := s.m.classOf(s.p, s.pc)
	if l.TryTake(class, n) {
		return nil
	}
	ctx, cancel := context.WithCancel(s.m.ctx)
	defer cancel()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	dl := s.wdl
	if read {
		dl = s.rdl
	}
	if s.cancels == nil {
		s.cancels = make(map[*context.CancelFunc]struct{}, 2)
	}
	s.cancels[&cancel] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.cancels, &cancel)
		s.mu.Unlock()
	}()
	if !dl.IsZero() {
		var c2 context.CancelFunc
		ctx, c2 = context.WithDeadline(ctx, dl)
		defer c2()
	}
	err := l.Wait(ctx, class, n)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		return os.ErrDeadlineExceeded
	default:
		return ErrClosed
	}
}

// end ends the waits in progress, and any to come.
func (s *stream) end() {
	s.mu.Lock()
	s.closed = true
	for c := range s.cancels {
		(*c)()
	}
	s.mu.Unlock()
}

func (s *stream) Close() error {
	s.end()
	return s.Stream.Close()
}

func (s *stream) Reset() error {
	s.end()
	return s.Stream.Reset()
}

func (s *stream) ResetWithError(code network.StreamErrorCode) error {
	s.end()
	return s.Stream.ResetWithError(code)
}

func (s *stream) SetDeadline(t time.Time) error {
	s.mu.Lock()
	s.rdl, s.wdl = t, t
	s.mu.Unlock()
	return s.Stream.SetDeadline(t)
}

func (s *stream) SetReadDeadline(t time.Time) error {
	s.mu.Lock()
	s.rdl = t
	s.mu.Unlock()
	return s.Stream.SetReadDeadline(t)
}

func (s *stream) SetWriteDeadline(t time.Time) error {
	s.mu.Lock()
	s.wdl = t
	s.mu.Unlock()
	return s.Stream.SetWriteDeadline(t)
}
