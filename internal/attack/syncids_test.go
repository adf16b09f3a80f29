package attack_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/internal/attack"
	"github.com/wats-network/wats/node"
	"github.com/wats-network/wats/peers"
	"github.com/wats-network/wats/proto"
)

// holdingEvents appends count events of one fresh author to n's log, the
// body of the i-th body(i), and returns n as a target.
func holdingEvents(t *testing.T, n *node.Node, count int, body func(i int) string) attack.Target {
	t.Helper()
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var evs []*eventlog.Event
	for i := range count {
		e, err := eventlog.New(key, time.Now(), "note", jsontext.Value(body(i)), nil)
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
	return tg
}

// TestSyncIDsAttacksSmoke runs each attack on sync by ids briefly against
// a node holding 600 events, with the honest load, so that the shapes
// `wats bench attack` runs keep doing what their names say: the closed
// loop's fingerprints are answered, the open loop's streams are opened and
// never read, each Sybil asks for its fingerprint and is answered (those
// the end of the run cut off aside), pages
// by id range are served and held unread; and the honest peers are served.
func TestSyncIDsAttacksSmoke(t *testing.T) {
	syncIDsSmoke(t, map[string]check{
		attack.FingerprintFlood:     func(s attack.Stats) bool { return s.Answered > 0 && s.Requests >= s.Answered },
		attack.FingerprintFloodOpen: func(s attack.Stats) bool { return s.Streams > 0 && s.Answered == 0 },
		attack.FingerprintSybil:     func(s attack.Stats) bool { return s.IDs > 1 && s.Answered > (s.IDs-s.Cut)/2 },
		attack.IDsPages:             func(s attack.Stats) bool { return s.Streams > 0 && s.Answered > 0 },
	})
}

// TestIDListsAttacksSmoke does the same for the attacks on id lists (ADR
// 0057), against the same node: the closed loop's lists are answered and
// read, large (from a random point of the id space to its end: 300 ids of
// the 600 on average; 100 at least an answer, summed) or small (a
// 16,384th of the space: fewer ids than answers, summed); the open loop's
// streams are opened and never read; each Sybil is answered its hello and
// its list, which it reads (those the end cut off aside); lists are
// served and held unread.
func TestIDListsAttacksSmoke(t *testing.T) {
	ids := func(s attack.Stats) int64 { return s.Bytes / proto.ListIDBytes }
	syncIDsSmoke(t, map[string]check{
		attack.IDListsFlood: func(s attack.Stats) bool { return s.Answered > 1 && ids(s) >= 100*s.Answered },
		attack.IDListsSmall: func(s attack.Stats) bool { return s.Answered > 8 && ids(s) < s.Answered },
		attack.IDListsOpen:  func(s attack.Stats) bool { return s.Streams > 0 && s.Answered == 0 },
		attack.IDListsSybil: func(s attack.Stats) bool { return s.IDs > 1 && s.Answered > s.IDs-s.Cut && ids(s) > 0 },
		attack.IDListsHold:  func(s attack.Stats) bool { return s.Streams > 0 && s.Answered > 0 },
	})
}

// syncIDsSmoke runs the attacks of checks (attacksHold) against a node
// holding 600 events, with the honest load, and fails unless the honest
// peers and the newcomers are served (90% at least).
func syncIDsSmoke(t *testing.T, checks map[string]check) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs attacks for a few seconds")
	}
	n := startNodeWith(t, nil)
	tg := holdingEvents(t, n, 600, func(i int) string { return fmt.Sprintf(`{"i":%d,"text":"an event to page"}`, i) })
	h := attack.Honest{Peers: 2, SyncEvery: 100 * time.Millisecond, HelloEvery: time.Second,
		NewcomerEvery: 300 * time.Millisecond, Warmup: 500 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	warm := make(chan struct{})
	honest := make(chan attack.HonestResult, 1)
	go func() { honest <- attack.RunHonest(ctx, tg, h, warm) }()
	<-warm
	attacksHold(t, tg, attack.Options{IDs: 2, Rate: 20, Hold: 200 * time.Millisecond}, checks)
	cancel()
	if res := <-honest; res.Requests == 0 || res.ServedPct() < 90 || res.Newcomers == 0 || res.NewcomersPct() < 90 {
		t.Fatalf("honest load: %+v", res)
	}
}

// TestIDsPagesLeaveNewcomersARoom: ids that hold their pages by id range
// unread, filling the strangers' share of the page pool, do not keep a
// newcomer from its page (ADR 0055, addendum): a node whose pool is 4 MiB
// (p2p.max_memory_mib 64), the strangers' quarter one page of 1 MiB
// reserved, the events 16 KiB each, so that a page (512 KiB) is past the
// stream's window and its write waits on a reader that never reads: the
// ids hold the share with such pages. Past peers.UnreadPageGrace, a
// newcomer that holds no page takes back the oldest and is served (of
// five newcomers, a second apart, one at least: the room a newcomer
// frees goes back to the ids, whose new page must age in turn); before
// the rule every one was refused "too busy" for the pages' whole write
// deadline (30 s).
func TestIDsPagesLeaveNewcomersARoom(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an attack for seconds")
	}
	n := startNodeWith(t, func(c *config.Config) { c.P2P.MaxMemoryMiB = config.MinMemoryMiB })
	pad := strings.Repeat("p", eventlog.MaxBodyBytes-64)
	tg := holdingEvents(t, n, 200, func(i int) string { return fmt.Sprintf(`{"i":%d,"p":%q}`, i, pad) })
	const newcomers = 5 // one a second
	ctx, cancel := context.WithTimeout(context.Background(), peers.UnreadPageGrace+(newcomers+10)*time.Second)
	defer cancel()
	done := make(chan attack.Stats, 1)
	go func() {
		st, _ := attack.Attack(ctx, attack.IDsPages, tg, attack.Options{IDs: 2})
		done <- st
	}()
	attack.Pause(ctx, peers.UnreadPageGrace+time.Second)
	served := 0
	for range newcomers {
		if newcomerSynced(t, ctx, tg) {
			served++
		}
		attack.Pause(ctx, time.Second)
	}
	cancel()
	if st := <-done; st.Streams == 0 || served == 0 {
		t.Fatalf("%d of %d newcomers served a page while the ids held %d pages unread", served, newcomers, st.Streams)
	}
}

// newcomerSynced reports whether a fresh id's hello and one sync page
// from the start of the log were answered (not refused).
func newcomerSynced(t *testing.T, ctx context.Context, tg attack.Target) bool {
	t.Helper()
	id, err := attack.NewIdentity()
	if err != nil {
		t.Fatal(err)
	}
	c, err := id.Dial(ctx, tg, nil)
	if err != nil {
		t.Logf("dial: %v", err)
		return false
	}
	defer c.Close()
	if resp, err := c.Request(ctx, c.Hello(false), nil); err != nil || resp.Hello == nil {
		t.Logf("hello: %+v, %v", resp, err)
		return false
	}
	resp, err := c.Request(ctx, &proto.SyncRequest{After: 0, Limit: 64}, nil)
	if err != nil || resp.Sync == nil || len(resp.Sync.Events) == 0 {
		if err == nil && resp.Refused != nil {
			t.Logf("sync refused at %s: %+v", time.Now().Format("15:04:05.000"), *resp.Refused)
		} else {
			t.Logf("sync: %+v, %v", resp, err)
		}
		return false
	}
	return true
}
