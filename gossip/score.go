package gossip

import (
	"net"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"
)

// Peer scoring (gossipsub v1.1; ADR 0031). A peer's score is the sum of:
//
//   - invalid envelopes it forwarded (P4): −10 × the squared count,
//     decaying 0.9 a second, so a handful (an event from a skewed clock) is
//     forgiven while ten send the peer past graylistThreshold;
//   - broken promises and other misbehaviour (P7): each IHAVE whose
//     message it then does not deliver within 3 s of our IWANT, and each
//     GRAFT while backed off, counts one; past behaviourThreshold the
//     penalty is −10 × the squared excess, decaying 0.998 a second (a
//     half-life of nearly 6 minutes). A peer that advertises ten IHAVEs a
//     second it never keeps is below gossipThreshold within two
//     heartbeats, after which its IHAVEs are ignored and it gets no more
//     IWANTs; the slow decay keeps it there for minutes after it stops,
//     rather than letting it back in to break promises again;
//   - peers sharing an IP address (P6): past colocationThreshold peers on
//     one address, −10 × the squared excess for each of them; loopback and
//     the ranges reserved for tests (198.18.0.0/15) are exempt, so local
//     devnets and tests work;
//   - time in the mesh (P1), a small reward (at most +10 after an hour).
//     First deliveries (P2) earn nothing: a spammer is the first to
//     deliver every event it makes;
//   - the application's score (P5, Options.AppScore): the peer's tier,
//     less what it spammed (the node's).
//
// The thresholds: below gossipThreshold no gossip (IHAVE/IWANT) is sent to
// or accepted from a peer, below publishThreshold our own events are not
// flood-published to it, below graylistThreshold all its RPCs are ignored;
// peer exchange is accepted only from peers at acceptPXThreshold or above
// (and none is sent, see Join).
const (
	invalidWeight = -10.0
	invalidDecay  = 0.9

	behaviourWeight    = -10.0
	behaviourThreshold = 6.0
	behaviourDecay     = 0.998

	colocationWeight    = -10.0
	colocationThreshold = 3

	timeInMeshWeight  = 10.0 / 3600 // +10 after an hour in the mesh
	timeInMeshQuantum = time.Second
	timeInMeshCap     = 3600

	decayInterval    = time.Second
	scoreRetention   = 10 * time.Minute
	scoreDecayToZero = 0.01

	gossipThreshold    = -100.0
	publishThreshold   = -500.0
	graylistThreshold  = -1000.0
	acceptPXThreshold  = 5.0
	opportunisticGraft = 1.0
)

// GraylistThreshold is the score below which gossipsub ignores a peer;
// GossipThreshold the one below which it sends and accepts no gossip.
const (
	GraylistThreshold = graylistThreshold
	GossipThreshold   = gossipThreshold
)

// colocationExempt are the networks whose addresses P6 does not count:
// loopback and the benchmarking range of RFC 2544 that tests use.
var colocationExempt = func() []*net.IPNet {
	var out []*net.IPNet
	for _, c := range []string{"127.0.0.0/8", "::1/128", "198.18.0.0/15"} {
		_, n, err := net.ParseCIDR(c)
		if err != nil {
			panic(err)
		}
		out = append(out, n)
	}
	return out
}()

// scoreParams returns the peer score parameters and thresholds for topic;
// app is the application's score (nil: 0).
func scoreParams(topic string, app func(peer.ID) float64) (*pubsub.PeerScoreParams, *pubsub.PeerScoreThresholds) {
	if app == nil {
		app = func(peer.ID) float64 { return 0 }
	}
	params := &pubsub.PeerScoreParams{
		Topics: map[string]*pubsub.TopicScoreParams{
			topic: {
				TopicWeight:                    1,
				TimeInMeshWeight:               timeInMeshWeight,
				TimeInMeshQuantum:              timeInMeshQuantum,
				TimeInMeshCap:                  timeInMeshCap,
				InvalidMessageDeliveriesWeight: invalidWeight,
				InvalidMessageDeliveriesDecay:  invalidDecay,
			},
		},
		AppSpecificScore:            app,
		AppSpecificWeight:           1,
		IPColocationFactorWeight:    colocationWeight,
		IPColocationFactorThreshold: colocationThreshold,
		IPColocationFactorWhitelist: colocationExempt,
		BehaviourPenaltyWeight:      behaviourWeight,
		BehaviourPenaltyThreshold:   behaviourThreshold,
		BehaviourPenaltyDecay:       behaviourDecay,
		DecayInterval:               decayInterval,
		DecayToZero:                 scoreDecayToZero,
		RetainScore:                 scoreRetention,
		SeenMsgTTL:                  seenTTL,
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

// maxIHaveLength is the most message ids gossipsub takes from one peer's
// IHAVEs a heartbeat, and so the most it asks for with IWANT: wats events
// are few (a busy network publishes tens a second), so 1,000 ids cover
// three heartbeats of history with room, where gossipsub's default, 5,000,
// lets a liar make the node ask for 5,000 ids a heartbeat.
const maxIHaveLength = 1000

// gossipParams returns gossipsub's router parameters: its defaults but
// for maxIHaveLength.
func gossipParams() pubsub.GossipSubParams {
	p := pubsub.DefaultGossipSubParams()
	p.MaxIHaveLength = maxIHaveLength
	return p
}

// scoreInspectInterval is how often gossipsub reports peer scores to Score.
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

// ScoreBands counts the peers of the last score report by band name
// (Band.String), every band named, for metrics without a label per peer;
// a nil g (gossip off) has none.
func (g *Gossip) ScoreBands() map[string]int {
	if g == nil {
		return nil
	}
	out := make(map[string]int, NumBands)
	for b := range Band(NumBands) {
		out[b.String()] = 0
	}
	if m := g.scores.Load(); m != nil {
		for _, s := range *m {
			out[BandOf(s).String()]++
		}
	}
	return out
}

// Band is a range of gossipsub scores with its own treatment.
type Band uint8

// The bands, from the best to the worst score.
const (
	BandPositive   Band = iota // above 0: earned by honest forwarding
	BandZero                   // 0: nothing yet
	BandNegative               // below 0: not grafted, pruned from the mesh
	BandNoGossip               // below GossipThreshold: no IHAVE/IWANT
	BandNoPublish              // below publishThreshold: not published to
	BandGraylisted             // below GraylistThreshold: ignored
	NumBands       = 6
)

var bandNames = [NumBands]string{"positive", "zero", "negative", "no_gossip", "no_publish", "graylisted"}

// String returns the band's name, as the metrics label it.
func (b Band) String() string {
	if b >= NumBands {
		return "band?"
	}
	return bandNames[b]
}

// BandOf returns the band of score s.
func BandOf(s float64) Band {
	switch {
	case s > 0:
		return BandPositive
	case s == 0:
		return BandZero
	case s < graylistThreshold:
		return BandGraylisted
	case s < publishThreshold:
		return BandNoPublish
	case s < gossipThreshold:
		return BandNoGossip
	}
	return BandNegative
}
