package gossip

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"
)

// TestFloodOfInvalidEnvelopesLowersTheSendersScore: a peer that forwards
// invalid envelopes gets a negative gossipsub score (the penalty is −10 ×
// the squared count of invalid deliveries, decaying 0.9 a second; below
// GraylistThreshold its gossip is ignored). How many envelopes of a burst
// reach validation depends on the machine (gossipsub prunes the sender
// from the mesh after the first ones), so the test checks the sign, which
// any invalid delivery sets, not the depth.
func TestFloodOfInvalidEnvelopesLowersTheSendersScore(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := newHost(t)
	rejected := make(chan error, 1000)
	g, err := Join(ctx, a, "test", Options{Reject: func(_ peer.ID, err error) { rejected <- err }})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	// An attacker sends to every topic peer, in the mesh or not (a prunes
	// it from its mesh after the first invalid envelopes).
	b, topic := rawPublisher(ctx, t, a, g, pubsub.WithFloodPublish(true))
	bad := envelope(t, jsontext.Value(strings.Replace(string(testEvent(t, time.Now())), `"hi"`, `"ho"`, 1)), nil, 0)
	const flood = 30
	for i := range flood {
		// Distinct envelopes (an unknown member differs), so none is a
		// duplicate that gossipsub would drop before validation.
		msg := append([]byte(fmt.Sprintf(`{"_grease_%d":0,`, i)), bad[1:]...)
		if err := topic.Publish(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-rejected:
	case <-time.After(20 * time.Second):
		t.Fatal("no invalid envelope was rejected within 20 s")
	}
	deadline := time.After(20 * time.Second)
	for {
		if s, ok := g.Score(b.ID()); ok && s < 0 {
			return
		}
		select {
		case <-deadline:
			s, _ := g.Score(b.ID())
			t.Fatalf("the flooding peer's score is %v, want below 0", s)
		case <-time.After(scoreInspectInterval / 4): // the score is reported once a second
		}
	}
}
