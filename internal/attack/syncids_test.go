package attack_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/internal/attack"
)

// TestSyncIDsAttacksSmoke runs each attack on sync by ids briefly against
// a node holding 600 events, with the honest load, so that the shapes
// `wats bench attack` runs keep doing what their names say: the closed
// loop's fingerprints are answered, the open loop's streams are opened and
// never read, each Sybil asks for its fingerprint and is answered (those
// the end of the run cut off aside), pages
// by id range are served and held unread; and the honest peers are served.
func TestSyncIDsAttacksSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("runs attacks for a few seconds")
	}
	n := startNodeWith(t, nil)
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var evs []*eventlog.Event
	for i := range 600 {
		e, err := eventlog.New(key, time.Now(), "note", jsontext.Value(fmt.Sprintf(`{"i":%d,"text":"an event to page"}`, i)), nil)
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e)
	}
	if _, err := n.Events().Append(evs); err != nil {
		t.Fatal(err)
	}
	tg, err := attack.ParseTarget(n.FullAddrs()[0], "attack-test")
	if err != nil {
		t.Fatal(err)
	}
	h := attack.Honest{Peers: 2, SyncEvery: 100 * time.Millisecond, HelloEvery: time.Second,
		NewcomerEvery: 300 * time.Millisecond, Warmup: 500 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	warm := make(chan struct{})
	honest := make(chan attack.HonestResult, 1)
	go func() { honest <- attack.RunHonest(ctx, tg, h, warm) }()
	<-warm
	attacksHold(t, tg, attack.Options{IDs: 2, Rate: 20, Hold: 200 * time.Millisecond}, map[string]check{
		attack.FingerprintFlood:     func(s attack.Stats) bool { return s.Answered > 0 && s.Requests >= s.Answered },
		attack.FingerprintFloodOpen: func(s attack.Stats) bool { return s.Streams > 0 && s.Answered == 0 },
		attack.FingerprintSybil:     func(s attack.Stats) bool { return s.IDs > 1 && s.Answered > (s.IDs-s.Cut)/2 },
		attack.IDsPages:             func(s attack.Stats) bool { return s.Streams > 0 && s.Answered > 0 },
	})
	cancel()
	if res := <-honest; res.Requests == 0 || res.ServedPct() < 90 || res.Newcomers == 0 || res.NewcomersPct() < 90 {
		t.Fatalf("honest load: %+v", res)
	}
}
