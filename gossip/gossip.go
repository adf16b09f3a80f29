package gossip

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"lukechampine.com/blake3"

	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/proto"
)

// maxRPCBytes bounds one gossipsub RPC on the wire. An RPC can carry several
// messages and control data, so it is larger than one envelope
// (proto.MaxEnvelopeBytes) but far below pubsub's default of 1 MiB: a peer
// cannot make the node buffer more than this per RPC.
const maxRPCBytes = 4 * proto.MaxEnvelopeBytes

// Delivery is one valid envelope received from the network.
type Delivery struct {
	// From is the peer that forwarded the message to this node (not
	// necessarily its publisher).
	From peer.ID
	// Event is the verified event; Raw its JSON as received.
	Event *eventlog.Event
	Raw   jsontext.Value
	// Providers are the peers the envelope names for the event's blobs.
	Providers []proto.Provider
}

// Options configure a Gossip.
type Options struct {
	// Deliver is called, from one goroutine, for each valid envelope that
	// another peer published and the node did not already hold.
	Deliver func(Delivery)
	// Has reports whether the node already holds the event with this id; such
	// envelopes are ignored (not delivered, not forwarded). Nil means never.
	Has func(id string) bool
	// Reject is called with the peer that forwarded each rejected envelope
	// and the reason, for counters and the peer's value history. Nil means
	// not counted. An event from the future (eventlog.ErrFuture) is
	// dropped as well, but ignored rather than rejected: gossipsub does
	// not lower the forwarder's score for it.
	Reject func(from peer.ID, reason error)
	// Now is the clock for event validation; nil means time.Now.
	Now func() time.Time
}

// Gossip is a node's membership in its network's event topic. Create it
// with Join; Close leaves the topic and waits for the reader to stop.
type Gossip struct {
	ps    *pubsub.PubSub
	topic *pubsub.Topic
	sub   *pubsub.Subscription
	self  peer.ID
	opts  Options
	mesh  *meshTracer

	// scores is the latest map of peer scores gossipsub reported.
	scores atomic.Pointer[map[peer.ID]float64]

	cancel context.CancelFunc
	done   sync.WaitGroup
}

// Join starts gossipsub on h, joins the topic of network and starts
// delivering envelopes to opts.Deliver.
func Join(ctx context.Context, h host.Host, network string, opts Options) (*Gossip, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	name := proto.Topic(network)
	mesh := newMeshTracer(name)
	g := &Gossip{self: h.ID(), opts: opts}
	params, thresholds := scoreParams(name)
	ps, err := pubsub.NewGossipSub(ctx, h,
		pubsub.WithRawTracer(mesh),
		pubsub.WithPeerScore(params, thresholds),
		pubsub.WithPeerScoreInspect(g.setScores, scoreInspectInterval),
		pubsub.WithMaxMessageSize(maxRPCBytes),
		pubsub.WithMessageIdFn(messageID),
		pubsub.WithMessageSignaturePolicy(pubsub.StrictSign),
		pubsub.WithPeerExchange(true),
	)
	if err != nil {
		return nil, fmt.Errorf("gossip: start gossipsub: %w", err)
	}
	g.ps, g.mesh = ps, mesh
	if err := ps.RegisterTopicValidator(name, g.validate); err != nil {
		return nil, fmt.Errorf("gossip: register validator: %w", err)
	}
	if g.topic, err = ps.Join(name); err != nil {
		return nil, fmt.Errorf("gossip: join %s: %w", name, err)
	}
	if g.sub, err = g.topic.Subscribe(); err != nil {
		g.topic.Close()
		return nil, fmt.Errorf("gossip: subscribe %s: %w", name, err)
	}
	rctx, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	g.done.Add(1)
	go g.read(rctx)
	return g, nil
}

// Publish sends an envelope with the event and providers to the topic. The
// envelope is validated like any received one first, so a node never
// publishes what its peers would reject.
func (g *Gossip) Publish(ctx context.Context, event jsontext.Value, providers []proto.Provider) error {
	env := &proto.Envelope{Event: event, Providers: providers}
	b, err := proto.MarshalEnvelope(env)
	if err != nil {
		return fmt.Errorf("gossip: encode envelope: %w", err)
	}
	if _, _, err := Validate(b, g.opts.Now()); err != nil {
		return err
	}
	return g.topic.Publish(ctx, b)
}

// Peers returns the peers this node knows to be in the topic.
func (g *Gossip) Peers() []peer.ID { return g.topic.ListPeers() }

// Mesh returns the peers this node forwards the topic's messages to (its
// gossipsub mesh), and a channel closed at the next change of the mesh.
func (g *Gossip) Mesh() ([]peer.ID, <-chan struct{}) { return g.mesh.Mesh() }

// Close leaves the topic and waits for the delivery goroutine to return.
func (g *Gossip) Close() error {
	g.sub.Cancel()
	g.cancel()
	g.done.Wait()
	return g.topic.Close()
}

// ErrEnvelope is wrapped by every validation error of an envelope.
var ErrEnvelope = errors.New("gossip: invalid envelope")

// Validate decodes and checks an envelope as received at now: its size and
// shape (proto.DecodeEnvelope: at most proto.MaxEnvelopeBytes, at most
// proto.MaxProviders providers) and its event (eventlog.Event.Verify). It
// returns the envelope and the verified event, or an error wrapping
// ErrEnvelope that says why.
func Validate(b []byte, now time.Time) (*proto.Envelope, *eventlog.Event, error) {
	env, err := proto.DecodeEnvelope(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrEnvelope, err)
	}
	ev, err := eventlog.Decode(env.Event)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: event: %w", ErrEnvelope, err)
	}
	if err := ev.Verify(now); err != nil {
		return nil, nil, fmt.Errorf("%w: event: %w", ErrEnvelope, err)
	}
	return env, ev, nil
}

// scoreInspectInterval is how often gossipsub reports peer scores to Scores.
const scoreInspectInterval = time.Second

func (g *Gossip) setScores(m map[peer.ID]float64) { g.scores.Store(&m) }

// Score returns p's gossipsub score as last reported (at most
// scoreInspectInterval old), and whether there is one. Below
// GraylistThreshold the peer's gossip is ignored.
func (g *Gossip) Score(p peer.ID) (float64, bool) {
	m := g.scores.Load()
	if m == nil {
		return 0, false
	}
	v, ok := (*m)[p]
	return v, ok
}

// GraylistThreshold is the score below which gossipsub ignores a peer.
const GraylistThreshold = graylistThreshold

// Peer scoring (gossipsub v1.1): the only signal wats uses is the one that
// costs a node work, invalid envelopes. Each one a peer forwards adds to its
// invalid-delivery counter; the score's penalty is the counter squared times
// invalidWeight, so a handful (an event from a skewed clock) is forgiven
// while ten counted invalid deliveries send the peer past
// graylistThreshold, after which gossipsub ignores its RPCs. The counter decays
// by invalidDecay each decayInterval, so the peer recovers within minutes of
// stopping.
const (
	invalidWeight      = -10.0
	invalidDecay       = 0.9
	decayInterval      = time.Second
	gossipThreshold    = -100.0
	publishThreshold   = -500.0
	graylistThreshold  = -1000.0
	scoreRetention     = 10 * time.Minute
	scoreDecayToZero   = 0.01
	timeInMeshQuantum  = time.Second
	acceptPXThreshold  = 0.0
	opportunisticGraft = 1.0
)

// scoreParams returns the peer score parameters and thresholds for topic.
func scoreParams(topic string) (*pubsub.PeerScoreParams, *pubsub.PeerScoreThresholds) {
	params := &pubsub.PeerScoreParams{
		Topics: map[string]*pubsub.TopicScoreParams{
			topic: {
				TopicWeight:                    1,
				TimeInMeshQuantum:              timeInMeshQuantum,
				InvalidMessageDeliveriesWeight: invalidWeight,
				InvalidMessageDeliveriesDecay:  invalidDecay,
			},
		},
		AppSpecificScore: func(peer.ID) float64 { return 0 },
		DecayInterval:    decayInterval,
		DecayToZero:      scoreDecayToZero,
		RetainScore:      scoreRetention,
	}
	thresholds := &pubsub.PeerScoreThresholds{
		GossipThreshold:             gossipThreshold,
		PublishThreshold:            publishThreshold,
		GraylistThreshold:           graylistThreshold,
		AcceptPXThreshold:           acceptPXThreshold,
		OpportunisticGraftThreshold: opportunisticGraft,
	}
	return params, thresholds
}

// validated is what the validator hands to the reader through
// pubsub.Message.ValidatorData, so the event is decoded and verified once.
type validated struct {
	env *proto.Envelope
	ev  *eventlog.Event
}

func (g *Gossip) validate(ctx context.Context, from peer.ID, msg *pubsub.Message) pubsub.ValidationResult {
	env, ev, err := Validate(msg.Data, g.opts.Now())
	if err != nil {
		if g.opts.Reject != nil {
			g.opts.Reject(from, err)
		}
		if errors.Is(err, eventlog.ErrFuture) {
			// Ahead of this node's clock, not forged: the forwarder's
			// clock (or the author's) may be right and this one behind,
			// so its score is not lowered (ADR 0030).
			return pubsub.ValidationIgnore
		}
		return pubsub.ValidationReject
	}
	if g.opts.Has != nil && g.opts.Has(ev.ID) && from != g.self {
		return pubsub.ValidationIgnore
	}
	msg.ValidatorData = &validated{env: env, ev: ev}
	return pubsub.ValidationAccept
}

func (g *Gossip) read(ctx context.Context) {
	defer g.done.Done()
	for {
		msg, err := g.sub.Next(ctx)
		if err != nil {
			return // cancelled or closed
		}
		if msg.ReceivedFrom == g.self {
			continue // our own publication
		}
		v, ok := msg.ValidatorData.(*validated)
		if !ok || g.opts.Deliver == nil {
			continue
		}
		g.opts.Deliver(Delivery{
			From:      msg.ReceivedFrom,
			Event:     v.ev,
			Raw:       v.env.Event,
			Providers: v.env.Providers,
		})
	}
}

// messageID names a gossipsub message by the BLAKE3 hash of its data, so the
// same envelope published twice, or reaching a node by two paths, is seen
// once.
func messageID(m *pb.Message) string {
	sum := blake3.Sum256(m.Data)
	return string(sum[:])
}
