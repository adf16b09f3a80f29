package attack_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
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

// TestDHTAttacksHonestFetchServed: while one id floods the DHT of a node
// and fresh ids put provider records by the hundred, an honest node still
// fetches a blob by its CID alone through that node's DHT; the flood is
// refused past its budget, and the records other peers put stay within
// their bound.
func TestDHTAttacksHonestFetchServed(t *testing.T) {
	if testing.Short() {
		t.Skip("runs DHT attacks for a few seconds")
	}
	victim := startDHTNode(t)
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
	results := make(chan result, 2)
	start := time.Now()
	for _, name := range []string{attack.DHTFlood, attack.DHTSybil} {
		go func() {
			st, err := attack.Attack(actx, name, tg, attack.Options{Rate: 50})
			results <- result{name, st, err}
		}()
	}
	time.Sleep(time.Second) // the attacks are under way
	getter := startDHTNode(t, victim)
	if err := fetch(getter); err != nil {
		t.Errorf("honest fetch by CID during the DHT attacks: %v", err)
	}
	acancel()
	stats := map[string]attack.Stats{}
	for range 2 {
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
	if sy := stats[attack.DHTSybil]; sy.Conns == 0 || sy.Requests == 0 {
		t.Errorf("dht-sybil: %+v: the sybils put no records", sy)
	}
	// The strangers' shared budget: a burst of 3,000 requests, then 200 a
	// second, for the sybils and the flood together, whatever the number
	// of ids (and the honest records, a few).
	st := victim.Status().DHT
	if most := 3000 + 200*int(secs) + 100; st.ProviderRecords > most || st.ProviderRecords > st.MaxProviderRecords {
		t.Errorf("the victim holds %d provider records after %d s: past the %d the strangers' budget lets in", st.ProviderRecords, secs, most)
	}
	t.Logf("victim: %+v", st)
}
