package gossip

import (
	"context"
	"fmt"
	"net"
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
	g, err := Join(ctx, a, "test", &Options{Reject: func(_ peer.ID, err error) { rejected <- err }})
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

// TestBandOf: each band at and just past its threshold.
func TestBandOf(t *testing.T) {
	const eps = 1e-9
	for _, c := range []struct {
		s    float64
		want Band
	}{
		{eps, BandPositive}, {0, BandZero}, {-eps, BandNegative},
		{GossipThreshold, BandNegative}, {GossipThreshold - eps, BandNoGossip},
		{publishThreshold, BandNoGossip}, {publishThreshold - eps, BandNoPublish},
		{GraylistThreshold, BandNoPublish}, {GraylistThreshold - eps, BandGraylisted},
	} {
		if got := BandOf(c.s); got != c.want {
			t.Errorf("BandOf(%v) = %v, want %v", c.s, got, c.want)
		}
	}
}

// TestColocationExempt: loopback and the test range are exempt from the
// IP-colocation penalty; other addresses are not.
func TestColocationExempt(t *testing.T) {
	params, _ := scoreParams("t", nil)
	exempt := func(ip string) bool {
		for _, n := range params.IPColocationFactorWhitelist {
			if n.Contains(net.ParseIP(ip)) {
				return true
			}
		}
		return false
	}
	for ip, want := range map[string]bool{"127.0.0.1": true, "127.255.255.254": true, "::1": true,
		"198.18.0.1": true, "198.19.255.255": true, "198.20.0.0": false, "198.17.255.255": false, "10.0.0.1": false} {
		if exempt(ip) != want {
			t.Errorf("%s exempt %v, want %v", ip, !want, want)
		}
	}
	if params.IPColocationFactorWeight >= 0 || params.BehaviourPenaltyWeight >= 0 {
		t.Error("colocation or behaviour not penalized")
	}
}

// TestScoreForgetsDeliveriesWithTheSeenCache: the scoring's memory of
// deliveries lasts as long as the seen cache's (seenTTL), not pubsub's
// default of two minutes: a record is kept for every message a flood
// makes the node validate.
func TestScoreForgetsDeliveriesWithTheSeenCache(t *testing.T) {
	params, _ := scoreParams("t", nil)
	if params.SeenMsgTTL != seenTTL {
		t.Errorf("deliveries remembered %v, the seen cache %v", params.SeenMsgTTL, seenTTL)
	}
}
