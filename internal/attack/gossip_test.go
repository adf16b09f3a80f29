package attack_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	noise "github.com/libp2p/go-libp2p/p2p/security/noise"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	"lukechampine.com/blake3"

	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/gossip"
	"github.com/wats-network/wats/internal/attack"
	"github.com/wats-network/wats/proto"
)

const gossipNet = "attack-gossip-test"

// gossipTarget is an in-process gossipsub peer as a node is one (BLAKE3
// message ids, StrictSign, subscribed to the topic), whose validator is
// gossip.Validate; it records what it validated and the control messages
// it received.
type gossipTarget struct {
	h  host.Host
	ps *pubsub.PubSub

	mu      sync.Mutex
	valid   int
	invalid []error
	sizes   []int
	authors map[string]int

	ihaveIDs atomic.Int64 // message ids named in IHAVEs received
	grafts   atomic.Int64 // peers grafted into its mesh
}

func newGossipTarget(t *testing.T) *gossipTarget {
	t.Helper()
	h, err := libp2p.New(
		libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"),
		libp2p.Transport(tcp.NewTCPTransport, tcp.DisableReuseport()),
		libp2p.Security(noise.ID, noise.New),
		libp2p.Muxer(yamux.ID, yamux.DefaultTransport),
		libp2p.DisableRelay(),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	g := &gossipTarget{h: h, authors: map[string]int{}}
	ps, err := pubsub.NewGossipSub(ctx, h,
		pubsub.WithMessageIdFn(func(m *pb.Message) string { s := blake3.Sum256(m.Data); return string(s[:]) }),
		pubsub.WithMessageSignaturePolicy(pubsub.StrictSign),
		pubsub.WithMaxMessageSize(4*proto.MaxEnvelopeBytes),
		pubsub.WithRawTracer(targetTracer{g}),
	)
	if err != nil {
		t.Fatal(err)
	}
	g.ps = ps
	topic := proto.Topic(gossipNet)
	if err := ps.RegisterTopicValidator(topic, func(_ context.Context, from peer.ID, m *pubsub.Message) pubsub.ValidationResult {
		_, ev, err := gossip.Validate(m.Data, time.Now())
		g.mu.Lock()
		defer g.mu.Unlock()
		g.sizes = append(g.sizes, len(m.Data))
		if err != nil {
			g.invalid = append(g.invalid, err)
			return pubsub.ValidationReject
		}
		g.valid++
		g.authors[ev.Author]++
		return pubsub.ValidationAccept
	}); err != nil {
		t.Fatal(err)
	}
	tp, err := ps.Join(topic)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := tp.Subscribe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			if _, err := sub.Next(ctx); err != nil {
				return
			}
		}
	}()
	return g
}

func (g *gossipTarget) info() []peer.AddrInfo {
	return []peer.AddrInfo{{ID: g.h.ID(), Addrs: g.h.Addrs()}}
}

// targetTracer counts, for a gossipTarget, the IHAVE ids it receives and
// the peers grafted into its mesh.
type targetTracer struct{ g *gossipTarget }

func (t targetTracer) RecvRPC(rpc *pubsub.RPC) {
	for _, ih := range rpc.GetControl().GetIhave() {
		t.g.ihaveIDs.Add(int64(len(ih.GetMessageIDs())))
	}
}
func (t targetTracer) Graft(peer.ID, string)                              { t.g.grafts.Add(1) }
func (targetTracer) OnNewOutboundStream(peer.ID, protocol.ID)             {}
func (targetTracer) OnClosedOutboundStream(peer.ID)                       {}
func (targetTracer) Join(string)                                          {}
func (targetTracer) Leave(string)                                         {}
func (targetTracer) Prune(peer.ID, string)                                {}
func (targetTracer) ValidateMessage(*pubsub.Message)                      {}
func (targetTracer) DeliverMessage(*pubsub.Message)                       {}
func (targetTracer) RejectMessage(*pubsub.Message, string)                {}
func (targetTracer) DuplicateMessage(*pubsub.Message)                     {}
func (targetTracer) ThrottlePeer(peer.ID)                                 {}
func (targetTracer) SendRPC(*pubsub.RPC, peer.ID)                         {}
func (targetTracer) SendRPCCompleted(*pubsub.RPC, peer.ID, time.Duration) {}
func (targetTracer) DropRPC(*pubsub.RPC, peer.ID)                         {}
func (targetTracer) UndeliverableMessage(*pubsub.Message)                 {}

// runGossip runs a gossip attack on g for d and checks that Ready came
// with every id connected.
func runGossip(t *testing.T, g *gossipTarget, name string, o attack.GossipOptions, d time.Duration) attack.GossipStats {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	o.Network = gossipNet
	ready := make(chan int, 1)
	o.Ready = func(n int) {
		ready <- n
		time.AfterFunc(d, cancel)
	}
	st, err := attack.GossipAttack(ctx, name, g.info(), o)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-ready:
		if n != o.IDs {
			t.Fatalf("%d of %d ids connected", n, o.IDs)
		}
	default:
		t.Fatal("the attack never started")
	}
	if st.IDs != int64(o.IDs) || st.Connected != int64(o.IDs) {
		t.Fatalf("stats: %+v", st)
	}
	return st
}

// TestGossipAttackers runs each gossip attack of `wats bench gossip`
// briefly against an in-process gossipsub peer and checks that it does
// what its name says.
func TestGossipAttackers(t *testing.T) {
	t.Run("valid-spam", func(t *testing.T) {
		t.Parallel()
		g := newGossipTarget(t)
		st := runGossip(t, g, attack.ValidSpam, attack.GossipOptions{IDs: 2}, 2*time.Second)
		g.mu.Lock()
		defer g.mu.Unlock()
		if st.Published == 0 || st.Sent == 0 || g.valid == 0 || len(g.invalid) > 0 {
			t.Fatalf("stats %+v; target: %d valid, invalid %v", st, g.valid, g.invalid)
		}
		if len(g.authors) != 2 {
			t.Fatalf("events by %d authors, want 2 (each id's own key): %v", len(g.authors), g.authors)
		}
		if g.authors[g.h.ID().String()] != 0 {
			t.Fatal("events signed by the target's key")
		}
	})
	t.Run("invalid-flood", func(t *testing.T) {
		t.Parallel()
		g := newGossipTarget(t)
		st := runGossip(t, g, attack.InvalidFlood, attack.GossipOptions{IDs: 2}, 2*time.Second)
		g.mu.Lock()
		defer g.mu.Unlock()
		if st.Published == 0 || g.valid > 0 || len(g.invalid) == 0 {
			t.Fatalf("stats %+v; target: %d valid, %d invalid", st, g.valid, len(g.invalid))
		}
		for _, err := range g.invalid {
			if !errors.Is(err, eventlog.ErrBadSignature) {
				t.Fatalf("rejected for %v, not the event's signature", err)
			}
		}
		for _, n := range g.sizes {
			if n != attack.DefaultInvalidEnvelopeBytes {
				t.Fatalf("an envelope of %d bytes, want %d", n, attack.DefaultInvalidEnvelopeBytes)
			}
		}
	})
	t.Run("ihave-flood", func(t *testing.T) {
		t.Parallel()
		g := newGossipTarget(t)
		st := runGossip(t, g, attack.IHaveFlood, attack.GossipOptions{IDs: 1, Window: 500 * time.Millisecond}, 2*time.Second)
		if st.IHaveRPCs == 0 || g.ihaveIDs.Load() == 0 {
			t.Fatalf("no IHAVE reached the target: stats %+v, target saw %d ids", st, g.ihaveIDs.Load())
		}
		if st.IWantIDs == 0 || st.IWantIDs > st.IHaveIDs {
			t.Fatalf("IWANT ids %d for %d IHAVE ids", st.IWantIDs, st.IHaveIDs)
		}
		var sum int64
		for _, n := range st.IWantPerWindow {
			sum += n
		}
		if len(st.IWantPerWindow) < 2 || sum == 0 || sum > st.IWantIDs {
			t.Fatalf("windows %v, total %d", st.IWantPerWindow, st.IWantIDs)
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.valid+len(g.invalid) > 0 {
			t.Fatal("the IHAVE attacker delivered messages")
		}
	})
	t.Run("mesh-sybil", func(t *testing.T) {
		t.Parallel()
		g := newGossipTarget(t)
		st := runGossip(t, g, attack.MeshSybil, attack.GossipOptions{IDs: 3, PublishEvery: 300 * time.Millisecond}, 2500*time.Millisecond)
		if g.grafts.Load() == 0 || st.Grafts == 0 {
			t.Fatalf("no id in the target's mesh: target grafts %d, stats %+v", g.grafts.Load(), st)
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.valid == 0 || len(g.invalid) > 0 || len(g.authors) < 2 {
			t.Fatalf("stats %+v; target: %d valid by %d authors, invalid %v", st, g.valid, len(g.authors), g.invalid)
		}
	})
}

// TestGossipEnvelopes checks the envelopes of the floods directly: exactly
// the size asked for, the large one just under the cap, and what
// gossip.Validate says of them.
func TestGossipEnvelopes(t *testing.T) {
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{0, attack.DefaultInvalidEnvelopeBytes, proto.MaxEnvelopeBytes} {
		b, err := attack.InvalidEnvelope(key, [8]byte{1}, 7, size)
		if err != nil {
			t.Fatal(err)
		}
		if size > 0 && len(b) != size {
			t.Fatalf("invalid envelope of %d bytes, want %d", len(b), size)
		}
		if _, _, err := gossip.Validate(b, time.Now()); !errors.Is(err, eventlog.ErrBadSignature) {
			t.Fatalf("invalid envelope of %d bytes: %v, want a bad signature", len(b), err)
		}
	}
	b, err := attack.SpamEnvelope(key, 3, 1024)
	if err != nil {
		t.Fatal(err)
	}
	_, ev, err := gossip.Validate(b, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := peer.IDFromPrivateKey(key); ev.Author != id.String() {
		t.Fatalf("author %s, want the key's %s", ev.Author, id)
	}
	large, raw, err := attack.LargeEnvelope(key, 4)
	if err != nil {
		t.Fatal(err)
	}
	// As large as a valid envelope gets: every cap of its event and its
	// providers reached, within proto.MaxEnvelopeBytes.
	if len(large) > proto.MaxEnvelopeBytes || len(large) < 58<<10 {
		t.Errorf("large envelope of %d bytes; want 58 KiB to the cap, %d", len(large), proto.MaxEnvelopeBytes)
	}
	env, ev, err := gossip.Validate(large, time.Now())
	if err != nil {
		t.Fatalf("large envelope: %v", err)
	}
	if len(ev.Blobs) != eventlog.MaxBlobs || len(env.Providers) != proto.MaxProviders || !bytes.Equal(env.Event, raw) {
		t.Errorf("large envelope: %d blobs, %d providers; want %d, %d and its event", len(ev.Blobs), len(env.Providers), eventlog.MaxBlobs, proto.MaxProviders)
	}
	for _, p := range env.Providers {
		if len(p.Addrs) != proto.MaxProviderAddrs || len(p.Addrs[0]) != proto.MaxAddrBytes {
			t.Fatalf("a provider of the large envelope: %d addresses of %d bytes; want %d of %d", len(p.Addrs), len(p.Addrs[0]), proto.MaxProviderAddrs, proto.MaxAddrBytes)
		}
	}
}
