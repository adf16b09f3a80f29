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
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/proto"
)

// TestFloodOfInvalidEnvelopesGraylistsTheSender: a peer that forwards many
// invalid envelopes is scored below the graylist threshold (its gossip is
// then ignored), while the node keeps its score for an honest peer.
func TestFloodOfInvalidEnvelopesGraylistsTheSender(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := newHost(t), newHost(t)
	rejected := make(chan error, 1000)
	g, err := Join(ctx, a, "test", Options{Reject: func(err error) { rejected <- err }})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	bMesh := newMeshTracer(proto.Topic("test"))
	// An attacker sends to every topic peer, in the mesh or not (a prunes
	// it from its mesh after the first invalid envelopes).
	ps, err := pubsub.NewGossipSub(ctx, b, pubsub.WithRawTracer(bMesh), pubsub.WithFloodPublish(true))
	if err != nil {
		t.Fatal(err)
	}
	topic, err := ps.Join(proto.Topic("test"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := topic.Subscribe(); err != nil {
		t.Fatal(err)
	}
	if err := b.Connect(ctx, peer.AddrInfo{ID: a.ID(), Addrs: a.Addrs()}); err != nil {
		t.Fatal(err)
	}
	for {
		mesh, changed := bMesh.Mesh()
		if len(mesh) > 0 {
			break
		}
		select {
		case <-changed:
		case <-time.After(10 * time.Second):
			t.Fatal("no gossip mesh after 10 s")
		}
	}
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
