package gossip

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pubsubpb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/proto"
)

// TestInspectTakesOutWhatIsOverBudget: the RPC inspector asks Admit once
// per message of the topic, keeps those admitted in order, leaves other
// topics' messages and the control part alone, and counts each it takes
// out as ErrOverPeerBudget.
func TestInspectTakesOutWhatIsOverBudget(t *testing.T) {
	topic, other := proto.Topic("test"), "other"
	admits := 0
	var ignored []error
	g := &Gossip{topicName: topic, refused: newRefused(time.Now), opts: Options{
		Admit: func(_ peer.ID, author string) error {
			admits++
			if author != "" {
				t.Errorf("author %q of an envelope that does not decode", author)
			}
			if admits <= 2 {
				return nil
			}
			return ErrOverPeerBudget
		},
		Ignored: func(_ peer.ID, err error) { ignored = append(ignored, err) },
	}}
	msg := func(tp string, data string) *pubsubpb.Message {
		return &pubsubpb.Message{Topic: &tp, Data: []byte(data)}
	}
	rpc := &pubsub.RPC{}
	rpc.Publish = []*pubsubpb.Message{msg(topic, "1"), msg(other, "x"), msg(topic, "2"), msg(topic, "3"), msg(topic, "4")}
	rpc.Control = &pubsubpb.ControlMessage{}
	if err := g.inspect("p", rpc); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range rpc.Publish {
		got = append(got, string(m.Data))
	}
	if strings.Join(got, ",") != "1,x,2" || admits != 4 || rpc.Control == nil {
		t.Fatalf("kept %v after %d admits (control %v)", got, admits, rpc.Control)
	}
	if len(ignored) != 2 || !errors.Is(ignored[0], ErrOverPeerBudget) {
		t.Fatalf("ignored %v", ignored)
	}
}

// TestAuthorBudgetTakenOnlyForVerifiedEvents: the author's budget is
// looked at before the signature and taken after it, so forged events in
// an author's name never spend it; over the budget an envelope is
// ignored; Store runs only for what passed, and its error ignores the
// envelope and, unless it is the quota's, reports a gap.
func TestAuthorBudgetTakenOnlyForVerifiedEvents(t *testing.T) {
	now := time.Now()
	tokens := 1
	var peeks, takes int
	var stored int
	var missed []peer.ID
	storeErr := error(nil)
	g := &Gossip{self: "self", opts: Options{
		Now: func() time.Time { return now },
		Author: func(_ peer.ID, _ string, _ int, take bool) bool {
			if !take {
				peeks++
				return tokens > 0
			}
			takes++
			if tokens == 0 {
				return false
			}
			tokens--
			return true
		},
		Store:  func(Delivery) error { stored++; return storeErr },
		Missed: func(p peer.ID) { missed = append(missed, p) },
	}}
	msg := func(data []byte) *pubsub.Message { return &pubsub.Message{Message: &pubsubpb.Message{Data: data}} }
	good := testEvent(t, now)
	forged := jsontext.Value(strings.Replace(string(good), `"hi"`, `"ho"`, 1))

	for range 3 {
		if got := g.validate(context.Background(), "peer", msg(envelope(t, forged, nil, 0))); got != pubsub.ValidationReject {
			t.Fatalf("forged: %v", got)
		}
	}
	if takes != 0 || tokens != 1 || stored != 0 {
		t.Fatalf("forgeries took %d tokens (left %d), stored %d", takes, tokens, stored)
	}
	if got := g.validate(context.Background(), "peer", msg(envelope(t, good, nil, 0))); got != pubsub.ValidationAccept || stored != 1 || tokens != 0 {
		t.Fatalf("valid: %v, stored %d, tokens %d", got, stored, tokens)
	}
	// Over the budget: ignored at the look, before the signature.
	second := testEvent(t, now)
	if got := g.validate(context.Background(), "peer", msg(envelope(t, second, nil, 0))); got != pubsub.ValidationIgnore || stored != 1 {
		t.Fatalf("over the author's budget: %v, stored %d", got, stored)
	}
	// Our own publication takes no budget and is not stored again.
	if got := g.validate(context.Background(), "self", msg(envelope(t, second, nil, 0))); got != pubsub.ValidationAccept || stored != 1 {
		t.Fatalf("own publication: %v, stored %d", got, stored)
	}
	tokens = 2
	storeErr = errors.New("disk full")
	if got := g.validate(context.Background(), "peer", msg(envelope(t, testEvent(t, now), nil, 0))); got != pubsub.ValidationIgnore || len(missed) != 1 {
		t.Fatalf("a failed store: %v, missed %v", got, missed)
	}
	storeErr = eventlog.ErrQuota
	if got := g.validate(context.Background(), "peer", msg(envelope(t, testEvent(t, now), nil, 0))); got != pubsub.ValidationIgnore || len(missed) != 1 {
		t.Fatalf("over the quota: %v, missed %v (a quota refusal is no gap)", got, missed)
	}
}

// TestDropsForWantOfRoomAreGaps: gossipsub's drops for a full validation
// queue or busy validators are reported to Missed with the forwarder;
// other rejections and our own messages are not.
func TestDropsForWantOfRoomAreGaps(t *testing.T) {
	var missed []peer.ID
	g := &Gossip{self: "self", opts: Options{Missed: func(p peer.ID) { missed = append(missed, p) }}}
	m := func(from peer.ID) *pubsub.Message {
		return &pubsub.Message{Message: &pubsubpb.Message{}, ReceivedFrom: from}
	}
	g.dropped(m("a"), pubsub.RejectValidationQueueFull)
	g.dropped(m("b"), pubsub.RejectValidationThrottled)
	g.dropped(m("c"), pubsub.RejectValidationFailed)
	g.dropped(m("d"), pubsub.RejectInvalidSignature)
	g.dropped(m("self"), pubsub.RejectValidationQueueFull)
	if len(missed) != 2 || missed[0] != "a" || missed[1] != "b" {
		t.Fatalf("missed %v, want [a b]", missed)
	}
}

// TestInspectGivesTheAuthor: Admit is told the author of an envelope that
// decodes, before anything is verified.
func TestInspectGivesTheAuthor(t *testing.T) {
	topic := proto.Topic("test")
	ev := testEvent(t, time.Now())
	e, err := eventlog.Decode(ev)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	g := &Gossip{topicName: topic, opts: Options{Admit: func(_ peer.ID, author string) error { got = append(got, author); return nil }}}
	rpc := &pubsub.RPC{}
	rpc.Publish = []*pubsubpb.Message{{Topic: &topic, Data: envelope(t, ev, nil, 0)}}
	if err := g.inspect("p", rpc); err != nil || len(rpc.Publish) != 1 {
		t.Fatal(err, len(rpc.Publish))
	}
	if len(got) != 1 || got[0] != e.Author {
		t.Fatalf("Admit told %q, want %q", got, e.Author)
	}
}

// TestHeldEventIgnoredBeforeVerification: an event the log already holds
// (one that comes again after gossipsub's seenTTL) is ignored, neither
// stored again nor charged to its author, even with a forged signature:
// the check comes before the verification.
func TestHeldEventIgnoredBeforeVerification(t *testing.T) {
	now := time.Now()
	good := testEvent(t, now)
	ev, err := eventlog.Decode(good)
	if err != nil {
		t.Fatal(err)
	}
	var stored, authorCalls int
	held := map[string]bool{}
	g := &Gossip{self: "self", opts: Options{
		Now:    func() time.Time { return now },
		Has:    func(id string) bool { return held[id] },
		Author: func(peer.ID, string, int, bool) bool { authorCalls++; return true },
		Store:  func(Delivery) error { stored++; held[ev.ID] = true; return nil },
	}}
	msg := func(data []byte) *pubsub.Message { return &pubsub.Message{Message: &pubsubpb.Message{Data: data}} }
	if got := g.validate(context.Background(), "peer", msg(envelope(t, good, nil, 0))); got != pubsub.ValidationAccept || stored != 1 {
		t.Fatalf("first copy: %v, stored %d", got, stored)
	}
	calls := authorCalls
	forged := jsontext.Value(strings.Replace(string(good), `"hi"`, `"ho"`, 1))
	for _, data := range []jsontext.Value{good, forged} {
		if got := g.validate(context.Background(), "peer", msg(envelope(t, data, nil, 0))); got != pubsub.ValidationIgnore {
			t.Fatalf("a copy of a held event: %v, want ignore", got)
		}
	}
	if stored != 1 || authorCalls != calls {
		t.Fatalf("copies stored %d times, asked the author budget %d more times", stored, authorCalls-calls)
	}
}

// TestCloseWaitsForValidators: Close waits for a validator still in
// Options.Store (a durable write, ADR 0031), and a validator called after
// Close began ignores its message without a callback, so that none
// reaches the stores once Close returned (the node closes them next).
func TestCloseWaitsForValidators(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := time.Now()
		first, second := testEvent(t, now), testEvent(t, now)
		entered, release := make(chan struct{}), make(chan struct{})
		var calls atomic.Int32
		g := &Gossip{self: "self", opts: Options{
			Now:    func() time.Time { return now },
			Has:    func(string) bool { calls.Add(1); return false },
			Author: func(peer.ID, string, int, bool) bool { return true },
			Store: func(Delivery) error {
				entered <- struct{}{}
				<-release
				return nil
			},
		}}
		msg := func(data []byte) *pubsub.Message { return &pubsub.Message{Message: &pubsubpb.Message{Data: data}} }
		result := make(chan pubsub.ValidationResult, 1)
		go func() { result <- g.validate(context.Background(), "peer", msg(envelope(t, first, nil, 0))) }()
		<-entered
		stopped := make(chan struct{})
		go func() {
			g.stopValidators()
			close(stopped)
		}()
		synctest.Wait()
		select {
		case <-stopped:
			t.Fatal("Close's wait returned while a validator was in Store")
		default:
		}
		before := calls.Load()
		if got := g.validate(context.Background(), "peer", msg(envelope(t, second, nil, 0))); got != pubsub.ValidationIgnore || calls.Load() != before {
			t.Fatalf("a validator after Close: %v, %d callbacks; want ignore and none", got, calls.Load()-before)
		}
		close(release)
		<-stopped
		if got := <-result; got != pubsub.ValidationAccept {
			t.Fatalf("the validator in Store: %v, want accept", got)
		}
	})
}
