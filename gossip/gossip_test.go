package gossip

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pubsubpb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/proto"
)

func testEvent(t *testing.T, at time.Time) jsontext.Value {
	t.Helper()
	key, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := eventlog.New(key, at, "note", jsontext.Value(`{"text":"hi"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ev.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func providers(k int) []proto.Provider {
	out := make([]proto.Provider, k)
	for i := range out {
		key, _, _ := crypto.GenerateEd25519Key(nil)
		id, _ := peer.IDFromPrivateKey(key)
		out[i] = proto.Provider{ID: id.String(), Addrs: []string{"/ip4/127.0.0.1/tcp/4001"}}
	}
	return out
}

// envelope builds an envelope by hand, padded with an unknown field to
// exactly size bytes when size > 0.
func envelope(t *testing.T, event jsontext.Value, ps []proto.Provider, size int) []byte {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"event":`)
	b.Write(event)
	b.WriteString(`,"providers":[`)
	for i, p := range ps {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id":%q,"addrs":["%s"]}`, p.ID, strings.Join(p.Addrs, `","`))
	}
	b.WriteString(`]`)
	if size > 0 {
		const pad = `,"_grease_pad":""}`
		fill := size - b.Len() - len(pad)
		if fill < 0 {
			t.Fatalf("envelope already %d bytes, cannot pad to %d", b.Len(), size)
		}
		b.WriteString(`,"_grease_pad":"` + strings.Repeat("x", fill) + `"}`)
	} else {
		b.WriteString("}")
	}
	return []byte(b.String())
}

func TestValidateBounds(t *testing.T) {
	now := time.Now()
	ev := testEvent(t, now)
	future := testEvent(t, now.Add(eventlog.MaxFutureSkew+time.Second))
	tampered := jsontext.Value(strings.Replace(string(ev), `"hi"`, `"ho"`, 1))
	cases := []struct {
		name string
		b    []byte
		ok   bool
	}{
		{"plain", envelope(t, ev, nil, 0), true},
		{"8 providers", envelope(t, ev, providers(proto.MaxProviders), 0), true},
		{"9 providers", envelope(t, ev, providers(proto.MaxProviders+1), 0), false},
		{"exactly 64 KiB", envelope(t, ev, nil, proto.MaxEnvelopeBytes), true},
		{"64 KiB + 1", envelope(t, ev, nil, proto.MaxEnvelopeBytes+1), false},
		{"tampered event", envelope(t, tampered, nil, 0), false},
		{"event from the future", envelope(t, future, nil, 0), false},
		{"not JSON", []byte(`{"event":`), false},
		{"no event", []byte(`{"providers":[]}`), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Validate(tc.b, now)
			if tc.ok && err != nil {
				t.Fatalf("rejected: %v", err)
			}
			if !tc.ok && !errors.Is(err, ErrEnvelope) {
				t.Fatalf("err = %v, want ErrEnvelope", err)
			}
		})
	}
}

func newHost(t *testing.T) host.Host {
	t.Helper()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// TestInvalidEnvelopesAreRejectedNotDelivered: a raw gossipsub peer
// publishes an invalid envelope and then a valid one; only the valid one is
// delivered, and the invalid one is counted.
func TestInvalidEnvelopesAreRejectedNotDelivered(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := newHost(t)
	delivered := make(chan Delivery, 4)
	rejected := make(chan error, 4)
	g, err := Join(ctx, a, "test", &Options{
		Store:  func(d Delivery) error { delivered <- d; return nil },
		Reject: func(_ peer.ID, err error) { rejected <- err },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()

	b, topic := rawPublisher(ctx, t, a, g)
	now := time.Now()
	bad := envelope(t, jsontext.Value(strings.Replace(string(testEvent(t, now)), `"hi"`, `"ho"`, 1)), nil, 0)
	good := envelope(t, testEvent(t, now), providers(1), 0)
	if err := topic.Publish(ctx, bad); err != nil {
		t.Fatal(err)
	}
	if err := topic.Publish(ctx, good); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-delivered:
		if d.From != b.ID() || len(d.Providers) != 1 {
			t.Fatalf("delivery from %s with %d providers", d.From, len(d.Providers))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the valid envelope was not delivered")
	}
	select {
	case err := <-rejected:
		if !errors.Is(err, ErrEnvelope) {
			t.Fatalf("rejected with %v, want ErrEnvelope", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the invalid envelope was not rejected")
	}
	select {
	case d := <-delivered:
		t.Fatalf("a second delivery: %s", d.Event.ID)
	case err := <-rejected:
		t.Fatalf("a second rejection: %v", err)
	default:
	}
}

// mesher is a gossip mesh that can be waited on: a Gossip, or the
// meshTracer of a raw gossipsub peer.
type mesher interface {
	Mesh() ([]peer.ID, <-chan struct{})
}

// waitMesh waits until each of ms has a peer in its gossip mesh.
func waitMesh(t *testing.T, ms ...mesher) {
	t.Helper()
	for _, m := range ms {
		for {
			mesh, changed := m.Mesh()
			if len(mesh) > 0 {
				break
			}
			select {
			case <-changed:
			case <-time.After(10 * time.Second):
				t.Fatal("no gossip mesh after 10 s")
			}
		}
	}
}

// rawPublisher starts a bare gossipsub peer (no validator: it publishes
// whatever a test gives it) subscribed to the test topic, connects it to a,
// and waits until it and g have each other in their meshes: before that,
// gossipsub may drop a message it has no route for yet.
func rawPublisher(ctx context.Context, t *testing.T, a host.Host, g *Gossip, opts ...pubsub.Option) (host.Host, *pubsub.Topic) {
	t.Helper()
	b := newHost(t)
	bMesh := newMeshTracer(proto.Topic("test"))
	ps, err := pubsub.NewGossipSub(ctx, b, append(opts, pubsub.WithRawTracer(bMesh))...)
	if err != nil {
		t.Fatal(err)
	}
	topic, err := ps.Join(proto.Topic("test"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := topic.Subscribe(); err != nil { // announce interest, to be grafted
		t.Fatal(err)
	}
	if err := b.Connect(ctx, peer.AddrInfo{ID: a.ID(), Addrs: a.Addrs()}); err != nil {
		t.Fatal(err)
	}
	waitMesh(t, g, bMesh)
	return b, topic
}

// TestFutureEventsAreIgnoredNotRejected: an envelope whose event is past
// the clock skew is dropped without lowering its forwarder's score (an
// honest peer's clock may be ahead of this one); a forged one is rejected.
func TestFutureEventsAreIgnoredNotRejected(t *testing.T) {
	now := time.Now()
	var reasons []error
	g := &Gossip{opts: Options{Now: func() time.Time { return now }, Reject: func(_ peer.ID, err error) { reasons = append(reasons, err) }}}
	msg := func(data []byte) *pubsub.Message { return &pubsub.Message{Message: &pubsubpb.Message{Data: data}} }
	future := envelope(t, testEvent(t, now.Add(eventlog.MaxFutureSkew+time.Minute)), nil, 0)
	if got := g.validate(context.Background(), "peer", msg(future)); got != pubsub.ValidationIgnore {
		t.Fatalf("an event from the future: %v, want ignored", got)
	}
	forged := envelope(t, jsontext.Value(strings.Replace(string(testEvent(t, now)), `"hi"`, `"ho"`, 1)), nil, 0)
	if got := g.validate(context.Background(), "peer", msg(forged)); got != pubsub.ValidationReject {
		t.Fatalf("a forged event: %v, want rejected", got)
	}
	if len(reasons) != 2 || !errors.Is(reasons[0], eventlog.ErrFuture) || errors.Is(reasons[1], eventlog.ErrFuture) {
		t.Fatalf("Reject told %v, want the future event's reason, then the forged one's", reasons)
	}
}
