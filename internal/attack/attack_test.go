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

// TestSuiteSmoke runs the honest load and each attack briefly against a
// node, so that the suite `wats bench attack` runs keeps working: the
// honest peers are served, the newcomers get in, and each attacker does
// what its name says.
func TestSuiteSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("runs attacks for a few seconds")
	}
	tg := startNode(t)
	h := attack.Honest{Peers: 2, SyncEvery: 100 * time.Millisecond, HelloEvery: time.Second,
		NewcomerEvery: 300 * time.Millisecond, Warmup: 500 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	warm := make(chan struct{})
	honest := make(chan attack.HonestResult, 1)
	go func() { honest <- attack.RunHonest(ctx, tg, h, warm) }()
	<-warm
	type run struct {
		name  string
		check func(attack.Stats) bool
	}
	stats := make(chan struct {
		name string
		st   attack.Stats
		err  error
	}, 8)
	runs := []run{
		{attack.HoardPrefix, func(s attack.Stats) bool { return s.Streams > 0 && s.Conns > 0 }},
		{attack.SybilHello, func(s attack.Stats) bool { return s.Conns > 0 && s.Answered > 0 }},
		{attack.OneIDFlood, func(s attack.Stats) bool { return s.Requests > s.Answered && s.Answered > 0 }},
		{attack.CrashFlood, func(s attack.Stats) bool { return s.Requests > 0 && s.Answered > 0 }},
		{attack.ValueSybils, func(s attack.Stats) bool { return s.Conns > 0 && s.Answered > 0 }},
	}
	actx, acancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer acancel()
	for _, r := range runs {
		go func() {
			st, err := attack.Attack(actx, r.name, tg, attack.Options{IDs: 3, Rate: 20, Hold: 200 * time.Millisecond})
			stats <- struct {
				name string
				st   attack.Stats
				err  error
			}{r.name, st, err}
		}()
	}
	for range runs {
		s := <-stats
		for _, r := range runs {
			if r.name == s.name && (s.err != nil || !r.check(s.st)) {
				t.Errorf("%s: %+v, %v", s.name, s.st, s.err)
			}
		}
	}
	res := <-honest
	if res.Requests == 0 || res.ServedPct() < 90 || res.Newcomers == 0 || res.NewcomersPct() < 90 {
		t.Fatalf("honest load: %+v", res)
	}
	if _, err := attack.Attack(context.Background(), "nope", tg, attack.Options{}); err == nil {
		t.Fatal("an unknown attack ran")
	}
}
