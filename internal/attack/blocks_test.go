package attack_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/wats-network/wats/blobs"
	"github.com/wats-network/wats/internal/attack"
	"github.com/wats-network/wats/metrics"
)

// TestBlocksAttacks runs each attack on the block transfer briefly
// against a node that holds a blob of five chunks, while an honest node
// fetches it: each attacker does what its name says (the readers are sent
// blocks, the open loop sends requests and reads nothing, the bounds are
// met with resets, the Sybils connect and are sent blocks), and the honest
// fetch completes.
func TestBlocksAttacks(t *testing.T) {
	if testing.Short() {
		t.Skip("runs attacks for a few seconds")
	}
	victim := startNodeWith(t, nil)
	data := make([]byte, 5*blobs.ChunkSize)
	_, _ = rand.Read(data)
	c, size, err := victim.ImportBlob(context.Background(), bytes.NewReader(data), int64(len(data)), "", metrics.ImportUpload)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := attack.ParseTarget(victim.FullAddrs()[0], "attack-test")
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string]func(attack.Stats) bool{
		attack.BlocksFloodOpen:   func(s attack.Stats) bool { return s.Requests > 10 && s.Bytes == 0 && s.Streams > 0 },
		attack.BlocksFloodClosed: func(s attack.Stats) bool { return s.Bytes > 5*blobs.ChunkSize },
		attack.BlocksMax:         func(s attack.Stats) bool { return s.Bytes > 0 && s.Reset > 0 },
		attack.BlocksSybil:       func(s attack.Stats) bool { return s.Conns > 1 && s.Bytes > 0 },
	}
	type result struct {
		name string
		st   attack.Stats
		err  error
	}
	results := make(chan result, len(checks))
	actx, acancel := context.WithCancel(context.Background())
	defer acancel()
	for name := range checks {
		go func() {
			st, err := attack.Attack(actx, name, tg, attack.Options{IDs: 2, Rate: 10, Hold: 200 * time.Millisecond, CID: c.String()})
			results <- result{name, st, err}
		}()
	}
	attack.Pause(actx, 2*time.Second) // the attacks are under way
	fetcher := startNodeWith(t, nil)
	if _, err := fetcher.Connect(context.Background(), victim.FullAddrs()[0]); err != nil {
		t.Fatal(err)
	}
	fctx, cancel := context.WithTimeout(context.Background(), blobs.FetchTimeout)
	defer cancel()
	if err := fetcher.Fetching().Fetch(fctx, blobs.Request{CID: c, Size: size, Sources: blobs.Sources{First: victim.ID(), FirstExempt: true}}); err != nil {
		t.Errorf("honest fetch during the block attacks: %v", err)
	}
	acancel()
	for range checks {
		r := <-results
		t.Logf("%s: %+v", r.name, r.st)
		if r.err != nil || r.st.Error != "" || !checks[r.name](r.st) {
			t.Errorf("%s: %+v, %v", r.name, r.st, r.err)
		}
	}
}
