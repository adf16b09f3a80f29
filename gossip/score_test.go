//go:build !race

// The race detector slows gossipsub's delivery so much that a flood arrives
// slower than the score decays (0.9 a second), and the test would measure
// the detector rather than the policy. `make test` runs this file without
// -race; everything else runs with it.

package gossip

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
)

// TestFloodOfInvalidEnvelopesGraylistsTheSender: a peer that forwards many
// invalid envelopes is scored below the graylist threshold (its gossip is
// then ignored), while the node keeps its score for an honest peer.
func TestFloodOfInvalidEnvelopesGraylistsTheSender(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := newHost(t)
	rejected := make(chan error, 1000)
	g, err := Join(ctx, a, "test", Options{Reject: func(err error) { rejected <- err }})
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
	// Once graylisted, the rest of the flood is ignored without being
	// validated: fewer than flood rejections may come.
	deadline := time.After(20 * time.Second)
	for {
		if s, ok := g.Score(b.ID()); ok && s < GraylistThreshold {
			return
		}
		select {
		case <-deadline:
			s, _ := g.Score(b.ID())
			t.Fatalf("the flooding peer's score is %v, want below %v", s, GraylistThreshold)
		case <-time.After(scoreInspectInterval / 4): // the score is reported once a second
		}
	}
}
