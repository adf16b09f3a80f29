package attack_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wats-network/wats/blobs"
	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/internal/attack"
	"github.com/wats-network/wats/metrics"
	"github.com/wats-network/wats/node"
)

// startDHTNode starts a node on 127.0.0.1 whose DHT answers queries
// (server mode), bootstrapped to boot.
func startDHTNode(t *testing.T, boot ...*node.Node) *node.Node {
	t.Helper()
	return startNodeWith(t, func(cfg *config.Config) {
		cfg.P2P.DHT = config.DHTServer
		for _, b := range boot {
			cfg.P2P.Bootstrap = append(cfg.P2P.Bootstrap, b.FullAddrs()[0])
		}
	})
}

// victimStrangerDHTPerMin is the victim's limits.stranger_dht_per_min: a
// twentieth of the default (a burst of 150, then 10 a second), so that the
// sybils spend it at once on any machine (under the race detector, some
// 170 of their records a second reach each DHT on an idle machine, and
// under a third of that on one loaded by other tests; at the default's
// 200 a second the budget outlived them on a slow one, and at 20 a second
// with 500 refusals to wait for, in 6 of 10 runs at a load of 2 to 11).
const victimStrangerDHTPerMin = 600

// drainedRefusals is how many strangers' DHT requests the victim must have
// refused over their shared budget for it to count as spent: some
// 17 requests a second on each DHT for drainWait.
const drainedRefusals = 250

// drainWait bounds the wait for the sybils to spend the strangers'
// budgets: a few seconds, on any machine.
const drainWait = 60 * time.Second

// TestDHTAttacksHonestFetchServed: while one id floods the DHT of a node
// and fresh ids put provider records by the hundred, an honest node still
// fetches a blob by its CID alone through that node's DHT; the flood is
// refused past its budget, and the records other peers put stay within
// their bound. The honest node starts once the strangers' shared budget
// of DHT requests is spent (the victim refuses strangers over it), so
// that what serves it is the allowance its hello gave it (docs/adr/0059),
// not what is left of the budget's burst: however loaded the machine.
func TestDHTAttacksHonestFetchServed(t *testing.T) {
	if testing.Short() {
		t.Skip("runs DHT attacks for a few seconds")
	}
	victim := startNodeWith(t, func(cfg *config.Config) {
		cfg.P2P.DHT = config.DHTServer
		cfg.Limits.StrangerDHTPerMin = victimStrangerDHTPerMin
	})
	holder := startDHTNode(t, victim)
	data := make([]byte, 2<<20)
	_, _ = rand.Read(data)
	c, size, err := holder.ImportBlob(context.Background(), bytes.NewReader(data), int64(len(data)), "", metrics.ImportUpload)
	if err != nil {
		t.Fatal(err)
	}
	// Before the attacks: a first honest node finds the holder's record
	// through the victim (the DHT server both know) and fetches the blob.
	before := startDHTNode(t, victim)
	fetch := func(n *node.Node) error {
		ctx, cancel := context.WithTimeout(context.Background(), blobs.FetchTimeout)
		defer cancel()
		return n.Fetching().Fetch(ctx, blobs.Request{CID: c, Size: size})
	}
	// The holder provides in the background: until its record is on the
	// victim, a fetch finds no provider.
	for deadline := time.Now().Add(30 * time.Second); ; {
		err := fetch(before)
		if err == nil {
			break
		}
		if !errors.Is(err, blobs.ErrNoProvider) || time.Now().After(deadline) {
			t.Fatalf("honest fetch by CID before the attacks: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	tg, err := attack.ParseTarget(victim.FullAddrs()[0], "attack-test")
	if err != nil {
		t.Fatal(err)
	}
	// The attacks run from a second before the honest fetch until it ends,
	// however long a loaded machine makes it take; the bounds below follow
	// from how long they ran.
	actx, acancel := context.WithTimeout(context.Background(), blobs.FetchTimeout)
	defer acancel()
	type result struct {
		name string
		st   attack.Stats
		err  error
	}
	// The sybils put their records on both of the victim's DHTs (the
	// network's and the LAN DHT, both of which the honest node asks on
	// 127.0.0.1), each DHT's strangers' budget apart: 25 ids a second on
	// each, some 800 requests a second against 200 (at 50 on each, under
	// the race detector no sybil's record reached the node in a minute).
	results := make(chan result, 3)
	start := time.Now()
	tgLAN := tg
	tgLAN.LAN = true
	for _, a := range []struct {
		name string
		tg   attack.Target
	}{{attack.DHTFlood, tg}, {attack.DHTSybil, tg}, {"lan-" + attack.DHTSybil, tgLAN}} {
		go func() {
			st, err := attack.Attack(actx, strings.TrimPrefix(a.name, "lan-"), a.tg, attack.Options{Rate: 25})
			results <- result{a.name, st, err}
		}()
	}
	// The attacks are under way: the strangers' shared budget is spent
	// (victimStrangerDHTPerMin), the victim refusing strangers over it,
	// and stays so while the honest node starts.
	refused := func() (wan, lan uint64) {
		st := victim.Status().DHT
		return st.RequestsRefusedStrangers, st.LANRequestsRefusedStrangers
	}
	for deadline := time.Now().Add(drainWait); ; time.Sleep(10 * time.Millisecond) {
		wan, lan := refused()
		if wan >= drainedRefusals && lan >= drainedRefusals {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sybils did not spend the strangers' budgets within %v (%d and %d (LAN) refused over them, %d records held)",
				drainWait, wan, lan, victim.Status().DHT.ProviderRecords)
		}
	}
	wan0, lan0 := refused()
	getter := startDHTNode(t, victim)
	if err := fetch(getter); err != nil {
		t.Errorf("honest fetch by CID during the DHT attacks: %v", err)
	}
	wan, lan := refused()
	vs := victim.Status()
	greeted := vs.DHT.RequestsGreeted
	t.Logf("while the honest node fetched: %d and %d (LAN) strangers' requests refused over their budgets; %d served from greeted allowances; challenges issued %d, solved %d",
		wan-wan0, lan-lan0, greeted, vs.ChallengesIssued, vs.ChallengesSolved)
	if greeted == 0 {
		t.Error("no request served from a greeted allowance: the honest node was served by what was left of the strangers' budget")
	}
	acancel()
	stats := map[string]attack.Stats{}
	for range 3 {
		r := <-results
		if r.err != nil {
			t.Fatalf("%s: %v", r.name, r.err)
		}
		t.Logf("%s: %+v", r.name, r.st)
		stats[r.name] = r.st
	}
	secs := int64(time.Since(start)/time.Second) + 1
	// One id's budget: a burst of 150 requests, then 10 a second.
	flood := stats[attack.DHTFlood]
	if most := 150 + 10*secs + 20; flood.Answered == 0 || flood.Answered > most || flood.Requests <= flood.Answered {
		t.Errorf("dht-flood over %d s: %+v: want some answered, at most %d, and the rest refused", secs, flood, most)
	}
	for _, name := range []string{attack.DHTSybil, "lan-" + attack.DHTSybil} {
		if sy := stats[name]; sy.Conns == 0 || sy.Requests == 0 {
			t.Errorf("%s: %+v: the sybils put no records", name, sy)
		}
	}
	// The strangers' shared budget of each DHT (victimStrangerDHTPerMin:
	// a burst of a quarter of it, then a sixtieth a second), for the
	// sybils and the flood together, whatever the number of ids (and the
	// honest records, a few, and the requests of greeted allowances a
	// solution paid for).
	st := victim.Status().DHT
	budget := victimStrangerDHTPerMin/4 + victimStrangerDHTPerMin/60*int(secs)
	if most := 2*budget + 100 + int(st.RequestsGreeted); st.ProviderRecords > most || st.ProviderRecords > st.MaxProviderRecords {
		t.Errorf("the victim holds %d provider records after %d s: past the %d the strangers' budget lets in", st.ProviderRecords, secs, most)
	}
	t.Logf("victim: %+v", st)
}
