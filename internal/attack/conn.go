package attack

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/core/sec"
	"github.com/libp2p/go-libp2p/core/transport"
	"github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	tptu "github.com/libp2p/go-libp2p/p2p/net/upgrader"
	noise "github.com/libp2p/go-libp2p/p2p/security/noise"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	ma "github.com/multiformats/go-multiaddr"
	msmux "github.com/multiformats/go-multistream"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/proto"

	"github.com/wats-network/wats/core"
)

// requestTimeout bounds one request of a client here.
const requestTimeout = 10 * time.Second

// errRequestTimeout is the cause of a fresh id's context that ended at
// requestTimeout, told apart from the end of the run (withFresh).
var errRequestTimeout = errors.New("attack: the id's requests timed out")

// Target is the daemon under attack: its peer ID and a TCP multiaddr.
type Target struct {
	ID   peer.ID
	Addr ma.Multiaddr
	// Network is the network name its hello must carry.
	Network string
	// LAN sends the DHT attacks to the network's LAN DHT
	// (proto.DHTLANProtocol), which a node serves to any peer that asks.
	LAN bool
}

// ParseTarget parses a full multiaddr (ending in /p2p/<id>) and a network.
func ParseTarget(addr, network string) (Target, error) {
	ai, err := peer.AddrInfoFromString(addr)
	if err != nil {
		return Target{}, fmt.Errorf("attack: target %q: %w", addr, err)
	}
	if len(ai.Addrs) != 1 {
		return Target{}, fmt.Errorf("attack: target %q: want one address", addr)
	}
	return Target{ID: ai.ID, Addr: ai.Addrs[0], Network: network}, nil
}

// Identity is one peer id with a transport of its own: TCP, Noise and
// yamux, without a libp2p host (no identify, no peerstore), so that an
// attacker can make thousands a second. Its key is Ed25519, as the node
// requires.
type Identity struct {
	ID  peer.ID
	Raw [32]byte // the raw public key: the requester id of its puzzles
	key crypto.PrivKey
	tpt transport.Transport
}

// NewIdentity makes a fresh identity that dials from the address the
// system chooses.
func NewIdentity() (*Identity, error) { return NewIdentityFrom(nil) }

// NewIdentityFrom makes a fresh identity that dials from the local
// address src (the system's choice when nil): an attacker with an
// address per id, as on the internet, where libp2p's per-IP connection
// limits apply (they exempt loopback).
func NewIdentityFrom(src net.IP) (*Identity, error) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		return nil, err
	}
	key, err := crypto.UnmarshalEd25519PrivateKey(priv)
	if err != nil {
		return nil, err
	}
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return nil, err
	}
	muxers := []tptu.StreamMuxer{{ID: yamux.ID, Muxer: yamux.DefaultTransport}}
	nt, err := noise.New(noise.ID, key, muxers)
	if err != nil {
		return nil, err
	}
	up, err := tptu.New([]sec.SecureTransport{nt}, muxers, nil, &network.NullResourceManager{}, nil)
	if err != nil {
		return nil, err
	}
	t, err := tcp.NewTCPTransport(up, &network.NullResourceManager{}, nil, tcp.DisableReuseport(), tcp.WithDialerForAddr(fromSource(src)))
	if err != nil {
		return nil, err
	}
	ident := &Identity{ID: id, key: key, tpt: t}
	copy(ident.Raw[:], pub)
	return ident, nil
}

// Conn is an Identity's connection to the target.
type Conn struct {
	id *Identity
	c  transport.CapableConn
	t  Target
}

// Dial connects id to t. Streams the target opens on the connection are
// given to serve (nil resets them all): a Sybil leaves the node's hello and
// identify unanswered, an honest client answers hello.
func (id *Identity) Dial(ctx context.Context, t Target, serve *msmux.MultistreamMuxer[protocol.ID]) (*Conn, error) {
	c, err := id.tpt.Dial(ctx, t.Addr, t.ID)
	if err != nil {
		return nil, err
	}
	go func() {
		for {
			s, err := c.AcceptStream()
			if err != nil {
				return
			}
			go func() {
				if serve == nil {
					_ = s.Reset()
					return
				}
				_ = s.SetDeadline(time.Now().Add(requestTimeout))
				_, handle, err := serve.Negotiate(s)
				if err != nil {
					_ = s.Reset()
					return
				}
				_ = handle("", s)
			}()
		}
	}()
	return &Conn{id: id, c: c, t: t}, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// IsClosed reports whether the connection closed (the node evicted it, say).
func (c *Conn) IsClosed() bool { return c.c.IsClosed() }

// OpenRaw opens a stream and negotiates nothing on it.
func (c *Conn) OpenRaw(ctx context.Context) (network.MuxedStream, error) {
	return c.c.OpenStream(ctx)
}

// OpenProtocol opens a stream and negotiates p on it.
func (c *Conn) OpenProtocol(ctx context.Context, p protocol.ID) (network.MuxedStream, error) {
	s, err := c.c.OpenStream(ctx)
	if err != nil {
		return nil, err
	}
	_ = s.SetDeadline(time.Now().Add(requestTimeout))
	if err := msmux.SelectProtoOrFail(p, s); err != nil {
		_ = s.Reset()
		return nil, err
	}
	_ = s.SetDeadline(time.Time{})
	return s, nil
}

// Request sends m (with solution sol, if not nil) on a new /wats/1 stream
// and returns the decoded response. The protocol is negotiated lazily, in
// the request's first bytes, as a libp2p host does.
func (c *Conn) Request(ctx context.Context, m proto.Message, sol *proto.Solution) (*proto.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	raw, err := c.c.OpenStream(ctx)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { _ = raw.Reset() })
	defer stop()
	s := msmux.NewMSSelect(raw, proto.ID)
	b, err := proto.MarshalWithSolution(m, sol)
	if err != nil {
		_ = raw.Reset()
		return nil, err
	}
	if err := proto.WriteFrame(s, b); err != nil {
		_ = raw.Reset()
		return nil, err
	}
	_ = raw.CloseWrite()
	rb, err := proto.ReadFrame(s, proto.MaxResponseBytes)
	if err != nil {
		_ = raw.Reset()
		return nil, err
	}
	_ = s.Close()
	return proto.DecodeResponse(rb)
}

// Hello is the hello an attacker here sends: the target's network, the
// challenge feature when it claims to solve.
func (c *Conn) Hello(solves bool) *proto.Hello {
	features := []string{}
	if solves {
		features = append(features, proto.FeatureChallenge)
	}
	return &proto.Hello{Version: proto.Version, Network: c.t.Network, Agent: "wats-attack", Features: features,
		Listen: []string{}, Head: 0}
}

// responder is a multistream muxer that answers the node's hello with h
// and its sync requests with events (all of them on the first page), and
// resets every other protocol: what an honest peer serves.
func responder(h *proto.Hello, events []jsontext.Value) *msmux.MultistreamMuxer[protocol.ID] {
	return notifying(h, events, nil)
}

// notifying is responder that also closes synced (if not nil) once it has
// answered the node's first sync request.
func notifying(h *proto.Hello, events []jsontext.Value, synced chan struct{}) *msmux.MultistreamMuxer[protocol.ID] {
	var once sync.Once
	m := msmux.NewMultistreamMuxer[protocol.ID]()
	m.AddHandler(proto.ID, func(_ protocol.ID, rwc io.ReadWriteCloser) error {
		b, err := proto.ReadFrame(rwc, proto.MaxRequestBytes)
		if err != nil {
			return err
		}
		req, err := proto.DecodeRequest(b)
		if err != nil {
			return err
		}
		var resp proto.Message = h
		if req.Sync != nil {
			page := &proto.SyncResponse{Events: []jsontext.Value{}, Next: core.Cursor(len(events))}
			if req.Sync.After < core.Cursor(len(events)) {
				page.Events = events[req.Sync.After:]
			} else {
				page.Next = req.Sync.After
			}
			resp = page
		}
		if err := proto.WriteMessage(rwc, resp, nil); err != nil {
			return err
		}
		if req.Sync != nil && synced != nil {
			once.Do(func() { close(synced) })
		}
		return rwc.Close()
	})
	return m
}

// Events signs k events of id's, to give a node that syncs from it.
func (id *Identity) Events(k int) ([]jsontext.Value, error) {
	return id.notes(k, func(i int) string { return fmt.Sprintf(`{"honest":%d}`, i) })
}

// notes signs k note events of id's, the i-th with the body body(i).
func (id *Identity) notes(k int, body func(i int) string) ([]jsontext.Value, error) {
	out := make([]jsontext.Value, 0, k)
	for i := range k {
		ev, err := eventlog.New(id.key, time.Now(), "note", jsontext.Value(body(i)), nil)
		if err != nil {
			return nil, err
		}
		raw, err := ev.Marshal()
		if err != nil {
			return nil, err
		}
		out = append(out, raw)
	}
	return out, nil
}

// errRefused is a request answered with a refusal (or an error) where a
// served answer was expected.
var errRefused = errors.New("attack: refused")
