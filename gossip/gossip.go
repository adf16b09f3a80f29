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

// Options configure a Gossip (Join). Every callback may be nil; the zero
// value, or nil, is the defaults, which EnsureDefaults fills in.
type Options struct {
	// Admit is the budget of envelopes a peer forwards (ADR 0031: a token
	// bucket per forwarding peer, charged by the standing of the event's
	// author). It is called from gossipsub's RPC loop, once for each
	// message on the topic in each RPC a peer sends, before gossipsub
	// checks anything (its signature included), with the event's author as
	// the envelope says ("" when it does not decode: the validator rejects
	// it later). An error (ErrOverPeerBudget, ErrOverAuthorBudget) drops
	// the message: not validated, not forwarded, no change to the peer's
	// score. It must be cheap and must not block. Nil admits every message.
	Admit func(from peer.ID, author string) error
	// Author is the budget of an author's new events (ADR 0031), for an
	// envelope that peer from forwarded, its event of size bytes: called
	// with take false before the event's signature is checked (false
	// ignores the envelope at no cost), and with take true once the event
	// verified (false ignores it; true has taken what it costs), so that
	// forgeries in an author's name never spend its budget. Nil admits
	// every author.
	Author func(from peer.ID, author string, size int, take bool) bool
	// Store is called, from the validator and concurrently, for each valid
	// envelope that another peer forwarded and the node did not hold: it
	// stores the event durably (and records the hints of its providers).
	// The envelope is accepted, so forwarded on, only once Store returns
	// nil; an error ignores it (not forwarded, no score change): an event
	// the log's quota refused, or one that could not be written.
	Store func(Delivery) error
	// Has reports whether the node already holds the event with this id; such
	// envelopes are ignored (not delivered, not forwarded).
	Has func(id string) bool
	// Reject is called with the peer that forwarded each rejected envelope
	// and the reason, for counters and the peer's value history. An event
	// from the future (eventlog.ErrFuture) is dropped as well, but ignored
	// rather than rejected: gossipsub does not lower the forwarder's score
	// for it.
	Reject func(from peer.ID, reason error)
	// Ignored is called with the forwarder and the reason for each envelope
	// ignored by a budget (ErrOverPeerBudget, ErrOverAuthorBudget) or by
	// Store's error, for counters.
	Ignored func(from peer.ID, reason error)
	// Graylisted is called with a peer below the graylist threshold and
	// the count of envelopes in an RPC of its that the inspector dropped
	// whole, undecoded. Nil: nothing.
	Graylisted func(from peer.ID, envelopes int)
	// Missed is called with the forwarder of an envelope gossipsub dropped
	// before validation for want of room (its validation queue full, its
	// validators all busy), or that Store failed to write: an event that
	// may now be missing here, which a sync from that peer recovers (ADR
	// 0031). It must not block.
	Missed func(from peer.ID)
	// AppScore is the application's part of a peer's gossipsub score
	// (ADR 0031: the peer's tier, from its value history); nil is 0.
	AppScore func(p peer.ID) float64
	// Now is the clock for event validation; nil means time.Now.
	Now func() time.Time
	// TracePath, if set, is a file that gossipsub's JSON tracer writes
	// every event of the router to, one JSON object a line (pubsub's
	// TraceEvent: each message published, received in an RPC, validated,
	// delivered, rejected or dropped, with its message id and peers):
	// what follows one message through the nodes (docs/reliability.md).
	// It grows by some hundred bytes an RPC; for diagnosis only.
	TracePath string
}

// ErrOverPeerBudget and ErrOverAuthorBudget are the reasons Options.Ignored
// is given for an envelope over a budget.
var (
	ErrOverPeerBudget   = errors.New("gossip: over the forwarding peer's budget")
	ErrOverAuthorBudget = errors.New("gossip: over the author's budget")
	// ErrHeld is Store's error for an envelope whose event another path
	// stored between the duplicate check (Options.Has) and the write.
	ErrHeld = errors.New("gossip: event already held")
)

// IgnoredReason is the metric's label of an envelope ignored for reason
// (Options.Ignored): peer_budget, author_budget, quota (eventlog.ErrQuota),
// held (ErrHeld) or error.
func IgnoredReason(reason error) string {
	switch {
	case errors.Is(reason, ErrOverPeerBudget):
		return "peer_budget"
	case errors.Is(reason, ErrOverAuthorBudget):
		return "author_budget"
	case errors.Is(reason, eventlog.ErrQuota):
		return "quota"
	case errors.Is(reason, ErrHeld):
		return "held"
	}
	return "error"
}

// Gossip is a node's membership in its network's event topic. Create it
// with Join; Close leaves the topic and waits for the reader to stop.
type Gossip struct {
	topicName string
	ps        *pubsub.PubSub
	topic     *pubsub.Topic
	sub       *pubsub.Subscription
	self      peer.ID
	opts      Options
	mesh      *meshTracer

	// scores is the latest map of peer scores gossipsub reported.
	scores atomic.Pointer[map[peer.ID]float64]

	cancel context.CancelFunc
	done   sync.WaitGroup
	// validators counts the topic validator's calls in progress; Close
	// waits for them, so that none reaches Options' callbacks (and the
	// stores behind them) after it returns. closed, under validatorsMu,
	// turns away the calls that come after Close began.
	validatorsMu sync.Mutex
	validators   sync.WaitGroup
	closed       bool
	// trace is the file of Options.TracePath, nil without.
	trace *fileTracer
	// refused remembers what the inspector dropped, to take it out of
	// IHAVEs (refused.go).
	refused *refused
}

// Validation capacity (ADR 0031). Gossipsub validates in two steps: a few
// workers check each message's signature, fed by a queue; then the topic
// validator (decode, budgets, the event's signature, the durable write)
// runs in goroutines up to a concurrency. A message that finds the queue
// full, or every validator busy, is dropped, and reported to
// Options.Missed. The budgets admit at most one burst per peer at once
// (limits.gossip_per_min/4, 1,500 by default), so the queue holds one
// honest peer's burst with room; the validators are many because each
// waits for a group commit (ADR 0031), which is I/O, not CPU.
const (
	validateQueue       = 2048
	validatorConcurrent = 512
	subscriptionBuffer  = 1024
)

// outboundQueue is the RPCs gossipsub queues for one peer before it drops
// what it sends that peer (pubsub's default is 32; ADR 0041). At the start
// of a flood the budgets let a burst through (a stranger share's burst of
// 150, each accepted envelope forwarded and, past 1 KiB, answered with an
// IDONTWANT to every mesh peer), and 32 entries dropped forwards within
// milliseconds. Queued RPCs point at messages shared by every peer's
// queue, so a full queue costs some tens of KiB of its own; a peer that
// does not read fills only its own.
const outboundQueue = 512

// seenTTL is how long gossipsub remembers a message id it has seen and
// the deliveries its scoring counts (a record, with the set of peers that
// sent it, for every message validated, the refused ones too; set in both
// places, WithSeenMessagesTTL and PeerScoreParams.SeenMsgTTL), against its
// default of two minutes
// (ADR 0031). An event spreads within seconds and is announced by IHAVE
// for gossipsub's history of 5 heartbeats (5 s); one that comes again
// later is in the log, and the validator ignores it (Options.Has) without
// a signature check. A shorter memory frees what a flood of messages
// leaves behind a minute sooner.
const seenTTL = 30 * time.Second

// EnsureDefaults sets each zero field of o that has a default (Now) to it
// and returns o; on a nil o it returns new Options of the defaults.
func (o *Options) EnsureDefaults() *Options {
	if o == nil {
		o = &Options{}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Join starts gossipsub on h, joins the topic of network and starts
// validating and storing envelopes through opts (nil: the defaults; opts
// itself is not changed).
func Join(ctx context.Context, h host.Host, network string, opts *Options) (*Gossip, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	o.EnsureDefaults()
	name := proto.Topic(network)
	mesh := newMeshTracer(name)
	g := &Gossip{self: h.ID(), opts: o, topicName: name, refused: newRefused(o.Now)}
	mesh.dropped = g.dropped
	params, thresholds := scoreParams(name, o.AppScore)
	var extra []pubsub.Option
	if o.TracePath != "" {
		tr, err := newFileTracer(o.TracePath)
		if err != nil {
			return nil, fmt.Errorf("gossip: trace: %w", err)
		}
		g.trace = tr
		extra = append(extra, pubsub.WithEventTracer(tr))
	}
	ps, err := pubsub.NewGossipSub(ctx, h, append(extra,
		pubsub.WithRawTracer(mesh),
		pubsub.WithPeerScore(params, thresholds),
		pubsub.WithPeerScoreInspect(g.setScores, scoreInspectInterval),
		pubsub.WithGossipSubParams(gossipParams()),
		pubsub.WithMaxMessageSize(maxRPCBytes),
		pubsub.WithMessageIdFn(messageID),
		pubsub.WithSeenMessagesTTL(seenTTL),
		pubsub.WithMessageSignaturePolicy(pubsub.StrictSign),
		// No peer exchange sent (ADR 0031): gossipsub would name this
		// node's peers to any pruned peer whose score is not negative, a
		// fresh Sybil's included. PX from well-scored peers is accepted
		// (acceptPXThreshold).
		pubsub.WithPeerExchange(false),
		pubsub.WithAppSpecificRpcInspector(g.inspect),
		pubsub.WithValidateQueueSize(validateQueue),
		pubsub.WithPeerOutboundQueueSize(outboundQueue),
		// This node's own events go to every peer of the topic whose
		// score is above publishThreshold, not only to its mesh (ADR
		// 0041): a neighbour pruned from the mesh, or not yet grafted,
		// still hears them at once.
		pubsub.WithFloodPublish(true),
	)...)
	if err != nil {
		return nil, fmt.Errorf("gossip: start gossipsub: %w", err)
	}
	g.ps, g.mesh = ps, mesh
	if err := ps.RegisterTopicValidator(name, g.validate, pubsub.WithValidatorConcurrency(validatorConcurrent)); err != nil {
		return nil, fmt.Errorf("gossip: register validator: %w", err)
	}
	if g.topic, err = ps.Join(name); err != nil {
		return nil, fmt.Errorf("gossip: join %s: %w", name, err)
	}
	if g.sub, err = g.topic.Subscribe(pubsub.WithBufferSize(subscriptionBuffer)); err != nil {
		g.topic.Close()
		return nil, fmt.Errorf("gossip: subscribe %s: %w", name, err)
	}
	rctx, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	g.done.Add(1)
	go g.drain(rctx)
	return g, nil
}

// Publish sends an envelope with the event and providers to the topic,
// naming the providers only for an event with blobs (docs/design.md §6).
// The envelope is validated like any received one first, so a node never
// publishes what its peers would reject.
func (g *Gossip) Publish(ctx context.Context, ev *eventlog.Event, providers []proto.Provider) error {
	event, err := ev.Marshal()
	if err != nil {
		return err
	}
	if len(ev.Blobs) == 0 {
		providers = nil
	}
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

// Close leaves the topic and waits for the subscription's reader and the
// topic validator's calls in progress to return; a call that comes after
// Close began ignores its message and calls none of Options' callbacks.
func (g *Gossip) Close() error {
	g.stopValidators()
	g.sub.Cancel()
	g.cancel()
	g.done.Wait()
	g.refused.close()
	err := g.topic.Close()
	if g.trace != nil {
		err = errors.Join(err, g.trace.Close())
	}
	return err
}

// enterValidator counts a call of the topic validator in progress, or
// says false once Close began.
func (g *Gossip) enterValidator() bool {
	g.validatorsMu.Lock()
	defer g.validatorsMu.Unlock()
	if g.closed {
		return false
	}
	g.validators.Add(1)
	return true
}

// stopValidators turns away the topic validator's later calls and waits
// for those in progress.
func (g *Gossip) stopValidators() {
	g.validatorsMu.Lock()
	g.closed = true
	g.validatorsMu.Unlock()
	g.validators.Wait()
}

// ErrEnvelope is wrapped by every validation error of an envelope.
var ErrEnvelope = errors.New("gossip: invalid envelope")

// Validate decodes and checks an envelope as received at now: its size and
// shape (proto.DecodeEnvelope: at most proto.MaxEnvelopeBytes, at most
// proto.MaxProviders providers) and its event (eventlog.Event.Verify). It
// returns the envelope and the verified event, or an error wrapping
// ErrEnvelope that says why.
func Validate(b []byte, now time.Time) (*proto.Envelope, *eventlog.Event, error) {
	env, ev, err := decode(b)
	if err != nil {
		return nil, nil, err
	}
	if err := ev.Verify(now); err != nil {
		return nil, nil, fmt.Errorf("%w: event: %w", ErrEnvelope, err)
	}
	return env, ev, nil
}

// decode is Validate without the event's verification: the cheap part.
func decode(b []byte) (*proto.Envelope, *eventlog.Event, error) {
	env, err := proto.DecodeEnvelope(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrEnvelope, err)
	}
	ev, err := eventlog.Decode(env.Event)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: event: %w", ErrEnvelope, err)
	}
	return env, ev, nil
}

// validate is the topic validator (ADR 0031), in order of cost: decode
// the envelope; for another peer's, the duplicate check and a look at the
// author's budget; the event's signature; then, for another peer's, the
// author's token and the durable store (Options.Store). It accepts, and so
// lets gossipsub forward, only what is stored; our own publications were
// stored before they were published.
func (g *Gossip) validate(ctx context.Context, from peer.ID, msg *pubsub.Message) pubsub.ValidationResult {
	if !g.enterValidator() {
		return pubsub.ValidationIgnore // leaving the topic
	}
	defer g.validators.Done()
	env, ev, err := decode(msg.Data)
	if err == nil && from != g.self {
		// Budgets and duplicates first: each is cheaper than a signature.
		switch {
		case g.opts.Has != nil && g.opts.Has(ev.ID):
			return pubsub.ValidationIgnore
		case g.opts.Author != nil && !g.opts.Author(from, ev.Author, len(env.Event), false):
			g.ignored(from, ErrOverAuthorBudget)
			return pubsub.ValidationIgnore
		}
	}
	if err == nil {
		if verr := ev.Verify(g.opts.Now()); verr != nil {
			err = fmt.Errorf("%w: event: %w", ErrEnvelope, verr)
		}
	}
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
	if from == g.self {
		return pubsub.ValidationAccept // our own publication, stored before
	}
	if g.opts.Author != nil && !g.opts.Author(from, ev.Author, len(env.Event), true) {
		g.ignored(from, ErrOverAuthorBudget)
		return pubsub.ValidationIgnore
	}
	if g.opts.Store != nil {
		d := Delivery{From: from, Event: ev, Raw: env.Event, Providers: env.Providers}
		if err := g.opts.Store(d); err != nil {
			g.ignored(from, err)
			if !errors.Is(err, eventlog.ErrQuota) && g.opts.Missed != nil {
				g.opts.Missed(from)
			}
			return pubsub.ValidationIgnore
		}
	}
	return pubsub.ValidationAccept
}

func (g *Gossip) ignored(from peer.ID, reason error) {
	if g.opts.Ignored != nil {
		g.opts.Ignored(from, reason)
	}
}

// inspect is gossipsub's RPC inspector: the forwarding peer's budget
// (Options.Admit) for each message of the topic, before gossipsub checks
// or queues anything; the envelope is decoded (not verified) for its
// author, about 4 µs. Messages over the budget are taken out of the RPC,
// and their ids out of the IHAVEs of this RPC and the next ones for
// refusedFor (refused.go); the rest of it (other messages, control) is
// handled as usual.
func (g *Gossip) inspect(from peer.ID, rpc *pubsub.RPC) error {
	if g.opts.Admit == nil {
		return nil
	}
	if s, ok := g.Score(from); ok && s < graylistThreshold {
		if g.opts.Graylisted != nil && len(rpc.Publish) > 0 {
			g.opts.Graylisted(from, len(rpc.Publish))
		}
		return errGraylisted // gossipsub drops it next; no need to decode it first
	}
	defer g.refused.strip(rpc.Control) // after this RPC's own drops
	if len(rpc.Publish) == 0 {
		return nil
	}
	kept := rpc.Publish[:0]
	for _, m := range rpc.Publish {
		if m.GetTopic() != g.topicName {
			kept = append(kept, m)
			continue
		}
		var author string
		if _, ev, err := decode(m.GetData()); err == nil {
			author = ev.Author
		}
		if err := g.opts.Admit(from, author); err != nil {
			g.ignored(from, err)
			g.refused.add(m)
			continue
		}
		kept = append(kept, m)
	}
	clear(rpc.Publish[len(kept):])
	rpc.Publish = kept
	return nil
}

// errGraylisted drops the RPC of a graylisted peer at the inspector.
var errGraylisted = errors.New("gossip: graylisted peer")

// dropped is told by the tracer of each message gossipsub dropped; those
// dropped for want of room are reported to Options.Missed.
func (g *Gossip) dropped(msg *pubsub.Message, reason string) {
	switch reason {
	case pubsub.RejectValidationQueueFull, pubsub.RejectValidationThrottled:
		if g.opts.Missed != nil && msg.ReceivedFrom != g.self {
			g.opts.Missed(msg.ReceivedFrom)
		}
	}
}

// drain reads the subscription, which gossipsub requires to deliver the
// topic to this node; everything was done at validation, so it only keeps
// the subscription from filling.
func (g *Gossip) drain(ctx context.Context) {
	defer g.done.Done()
	for {
		if _, err := g.sub.Next(ctx); err != nil {
			return // cancelled or closed
		}
	}
}

// messageID names a gossipsub message by the BLAKE3 hash of its data, so the
// same envelope published twice, or reaching a node by two paths, is seen
// once.
func messageID(m *pb.Message) string {
	sum := blake3.Sum256(m.Data)
	return string(sum[:])
}
