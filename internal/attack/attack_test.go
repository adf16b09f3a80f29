package attack_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/internal/attack"
	"github.com/wats-network/wats/node"
	"github.com/wats-network/wats/repo"
)

// startNode starts a node on 127.0.0.1 and returns it as a target.
func startNode(t *testing.T) attack.Target {
	t.Helper()
	n := startNodeWith(t, nil)
	tg, err := attack.ParseTarget(n.FullAddrs()[0], "attack-test")
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// startNodeWith starts a node on 127.0.0.1 of network attack-test, without
// gossip, its config changed by edit (nil: none); it closes at the end of
// the test.
func startNodeWith(t *testing.T, edit func(*config.Config)) *node.Node {
	t.Helper()
	cfg := config.Default()
	cfg.Network = "attack-test"
	cfg.P2P.Listen = []string{"/ip4/127.0.0.1/tcp/0"}
	cfg.Sync.Gossip = false
	if edit != nil {
		edit(cfg)
	}
	r, err := repo.Init(t.TempDir(), &repo.InitOptions{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	n, err := node.New(r.Config, r.Key, &node.Options{Dir: r.Dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// attackSlice is how long each run of an attack in the smoke tests lasts;
// attackBound bounds their runs together, on a machine so loaded that a
// run's ids connect too late to do anything.
const (
	attackSlice = 1500 * time.Millisecond
	attackBound = 60 * time.Second
)

// check is what a smoke test asks of an attack's figures, summed over its
// runs.
type check func(attack.Stats) bool

// attacksHold runs each attack of checks on tg at once, each in runs of
// attackSlice with fresh ids until its figures, summed over its runs,
// pass its check, and reports as an error each attack whose figures did
// not within attackBound.
func attacksHold(t *testing.T, tg attack.Target, o attack.Options, checks map[string]check) {
	t.Helper()
	type outcome struct {
		name string
		st   attack.Stats
		err  error
	}
	out := make(chan outcome, len(checks))
	deadline := time.Now().Add(attackBound)
	for name, ok := range checks {
		go func() {
			var sum attack.Stats
			for {
				ctx, cancel := context.WithTimeout(context.Background(), attackSlice)
				st, err := attack.Attack(ctx, name, tg, o)
				cancel()
				sum = addStats(sum, st)
				if err != nil || ok(sum) || time.Now().After(deadline) {
					out <- outcome{name, sum, err}
					return
				}
			}
		}()
	}
	for range checks {
		o := <-out
		if o.err != nil || !checks[o.name](o.st) {
			t.Errorf("%s: %+v, %v", o.name, o.st, o.err)
		}
	}
}

// addStats sums the counts of two runs' figures.
func addStats(a, b attack.Stats) attack.Stats {
	return attack.Stats{IDs: a.IDs + b.IDs, Conns: a.Conns + b.Conns, Failed: a.Failed + b.Failed, Cut: a.Cut + b.Cut,
		Requests: a.Requests + b.Requests, Answered: a.Answered + b.Answered, Streams: a.Streams + b.Streams,
		Reset: a.Reset + b.Reset, Bytes: a.Bytes + b.Bytes, Error: a.Error + b.Error}
}

// TestSuiteSmoke runs the honest load and each attack briefly against a
// node, so that the suite `wats bench attack` runs keeps working: the
// honest peers are served, the newcomers get in, and each attacker does
// what its name says (its runs repeated until it has, on a loaded
// machine).
func TestSuiteSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("runs attacks for a few seconds")
	}
	tg := startNode(t)
	h := attack.Honest{Peers: 2, SyncEvery: 100 * time.Millisecond, HelloEvery: time.Second,
		NewcomerEvery: 300 * time.Millisecond, Warmup: 500 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	warm := make(chan struct{})
	honest := make(chan attack.HonestResult, 1)
	go func() { honest <- attack.RunHonest(ctx, tg, h, warm) }()
	<-warm
	attacksHold(t, tg, attack.Options{IDs: 3, Rate: 20, Hold: 200 * time.Millisecond}, map[string]check{
		attack.HoardPrefix: func(s attack.Stats) bool { return s.Streams > 0 && s.Conns > 0 },
		attack.SybilHello:  func(s attack.Stats) bool { return s.Conns > 0 && s.Answered > 0 },
		attack.OneIDFlood:  func(s attack.Stats) bool { return s.Requests > s.Answered && s.Answered > 0 },
		attack.CrashFlood:  func(s attack.Stats) bool { return s.Requests > 0 && s.Answered > 0 },
		attack.ValueSybils: func(s attack.Stats) bool { return s.Conns > 0 && s.Answered > 0 },
	})
	cancel()
	res := <-honest
	if res.Requests == 0 || res.ServedPct() < 90 || res.Newcomers == 0 || res.NewcomersPct() < 90 {
		t.Fatalf("honest load: %+v", res)
	}
	if _, err := attack.Attack(context.Background(), "nope", tg, attack.Options{}); err == nil {
		t.Fatal("an unknown attack ran")
	}
}
