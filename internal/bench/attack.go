package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/internal/attack"
	"github.com/wats-network/wats/internal/devnet"
)

// AttackScenario is one row of `bench attack`: an attack and its size.
type AttackScenario struct {
	// Name is what --scenario calls it; Attack the attack of
	// internal/attack ("" for none, the baseline).
	Name   string `json:"name"`
	Attack string `json:"attack"`
	// IDs is the ids of a hoarding attack, Rate the fresh ids a second of
	// a Sybil attack (0: 1, as the attacker takes at least one).
	IDs  int `json:"ids,omitempty"`
	Rate int `json:"rate,omitempty"`
	// Netns: the attacker ran in a network namespace, its ids dialling
	// from addresses of their own (--netns).
	Netns bool `json:"netns,omitempty"`
	// CatchUp, if not 0, is the events preloaded in the daemon's log, and
	// in a second peer's, for the honest catch-up by id range that runs
	// with the attack (HonestCatchUp; the scenarios of sync by ids).
	CatchUp int `json:"catch_up,omitempty"`
}

// AttackScenarios are the scenarios of ADR 0030's attack suite, in order.
var AttackScenarios = []AttackScenario{
	{Name: "none", Attack: ""},
	{Name: "one-id-flood", Attack: attack.OneIDFlood},
	{Name: "sybil", Attack: attack.Sybil, Rate: 550},
	{Name: "sybil-hello", Attack: attack.SybilHello, Rate: 550},
	{Name: "sybil-sync", Attack: attack.SybilSync, Rate: 330},
	{Name: "sybil-host-sync", Attack: attack.SybilHostSync, Rate: 330},
	{Name: "hoard-unnegotiated-1", Attack: attack.HoardUnnegotiated, IDs: 1},
	{Name: "hoard-unnegotiated-50", Attack: attack.HoardUnnegotiated, IDs: 50},
	{Name: "hoard-unnegotiated-500", Attack: attack.HoardUnnegotiated, IDs: 500},
	{Name: "hoard-prefix-1", Attack: attack.HoardPrefix, IDs: 1},
	{Name: "hoard-prefix-50", Attack: attack.HoardPrefix, IDs: 50},
	{Name: "hoard-prefix-500", Attack: attack.HoardPrefix, IDs: 500},
	{Name: "bad-solutions", Attack: attack.BadSolutions},
	{Name: "unread-pages-8", Attack: attack.UnreadPages, IDs: 8},
	{Name: "crash-flood", Attack: attack.CrashFlood, Rate: 200},
	{Name: "value-sybils", Attack: attack.ValueSybils, Rate: 100},
	{Name: "dht-flood", Attack: attack.DHTFlood},
	{Name: "dht-sybil", Attack: attack.DHTSybil, Rate: 200},
}

// AttackResult is one scenario's figures.
type AttackResult struct {
	Scenario AttackScenario `json:"scenario"`
	// Seconds is how long the attack ran (after the honest warm-up);
	// Honest is what the honest load got meanwhile.
	Seconds float64             `json:"seconds"`
	Honest  attack.HonestResult `json:"honest"`
	// HonestServedPct and NewcomersServedPct are the honest requests and
	// the newcomers served, in percent.
	HonestServedPct    float64 `json:"honest_served_pct"`
	NewcomersServedPct float64 `json:"newcomers_served_pct"`
	// The daemon's resident set when the attack started, its highest
	// sample during it, and at its end, in bytes (Linux; 0 elsewhere).
	RSSStart uint64 `json:"rss_start_bytes"`
	RSSPeak  uint64 `json:"rss_peak_bytes"`
	RSSEnd   uint64 `json:"rss_end_bytes"`
	// LogLines is what the daemon logged during the attack; LogLinesPerMin
	// the same a minute.
	LogLines       int     `json:"log_lines"`
	LogLinesPerMin float64 `json:"log_lines_per_min"`
	// CPUPct is the daemon's CPU time during the attack, in percent of one
	// core.
	CPUPct float64 `json:"cpu_pct"`
	// Attacker is what the attacker process did.
	Attacker attack.Stats `json:"attacker"`
	// CatchUp is what the honest catch-up saw (Scenario.CatchUp), or nil.
	CatchUp *CatchUpResult `json:"catch_up,omitempty"`
}

// KillResult is the kill -9 scenario's figures: the kills, the events
// whose write the daemon acknowledged, those of them present after the
// last restart, and those lost (Acknowledged - Present: 0 if every
// acknowledged write was durable).
type KillResult struct {
	Kills        int `json:"kills"`
	Acknowledged int `json:"acknowledged"`
	Present      int `json:"present"`
	Lost         int `json:"lost"`
}

// attackDaemon starts one daemon for an attack scenario, with events to
// sync, and returns it with its target address.
func attackDaemon(ctx context.Context, dir string, an *attackNet) (*devnet.Network, attack.Target, error) {
	d, err := devnet.Start(ctx, devnet.Options{
		Dir: dir, Nodes: 1, Network: "wats-attack", Timeout: devnet.DefaultUpTimeout, Foreground: true,
		Log: func(string, ...any) {},
		Config: func(cfg *config.Config) {
			cfg.P2P.Listen = []string{"/ip4/127.0.0.1/tcp/0"}
			if an != nil { // the attacker's side of the namespace's veth
				cfg.P2P.Listen = append(cfg.P2P.Listen, "/ip4/"+an.hostIP+"/tcp/0")
			}
			cfg.Sync.Gossip = false
		},
	})
	if err != nil {
		return nil, attack.Target{}, err
	}
	for i := range 300 { // a page and more to sync
		body := jsontext.Value(fmt.Sprintf(`{"i":%d,"pad":%q}`, i, strings.Repeat("x", 200)))
		if _, err := d.Client(0).AddEvent(ctx, "note", body); err != nil {
			d.Stop()
			return nil, attack.Target{}, err
		}
	}
	addr, prefix := "", "/ip4/127.0.0.1/tcp/"
	if an != nil {
		prefix = "/ip4/" + an.hostIP + "/tcp/"
	}
	for _, a := range d.State().Nodes[0].Addrs {
		if strings.HasPrefix(a, prefix) {
			addr = a
			break
		}
	}
	t, err := attack.ParseTarget(addr, "wats-attack")
	if err != nil {
		d.Stop()
		return nil, attack.Target{}, err
	}
	return d, t, nil
}

// RunAttack runs scenario s for duration against a fresh daemon, in a
// temporary directory removed after: the honest load (attack.DefaultHonest:
// its warm-up first, then duration) in this process, the attacker, if s
// has one, in a `wats bench attack-worker` process of this binary at nice
// 19. A scenario of sync by ids (s.CatchUp) preloads the daemon's log and
// a second peer's, and adds the honest catch-up (HonestCatchUp), whose
// figures it waits for (up to catchUpGrace past the attack). It fails if
// the daemon does not start or the attacker fails.
func RunAttack(ctx context.Context, s AttackScenario, duration time.Duration) (*AttackResult, error) {
	dir, err := os.MkdirTemp("", "wats-bench-attack-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var an *attackNet
	if s.Netns && s.Attack != "" {
		if an, err = newAttackNet(attackSources(s)); err != nil {
			return nil, err
		}
		defer an.close()
	}
	var other *devnet.Daemon // the second peer of the honest catch-up
	var otherAddr string
	if s.CatchUp > 0 {
		otherDir, err := preloadAttack(ctx, dir, s.CatchUp)
		if err != nil {
			return nil, fmt.Errorf("preload: %w", err)
		}
		if other, otherAddr, err = startOther(ctx, otherDir); err != nil {
			return nil, err
		}
		defer devnet.StopDaemons([]*devnet.Daemon{other})
	}
	d, t, err := attackDaemon(ctx, dir, an)
	if err != nil {
		return nil, err
	}
	defer d.Stop()
	// The honest load stays on 127.0.0.1, where the rest of the bench runs.
	honestT := t
	if an != nil {
		if honestT, err = loopbackTarget(d, t); err != nil {
			return nil, err
		}
	}
	pid := d.Daemon(0).PID()
	logPath := d.State().Nodes[0].Log
	res := &AttackResult{Scenario: s}
	h := attack.DefaultHonest
	actx, cancel := context.WithTimeout(ctx, h.Warmup+duration)
	defer cancel()
	warm := make(chan struct{})
	honest := make(chan attack.HonestResult, 1)
	go func() { honest <- attack.RunHonest(actx, honestT, h, warm) }()
	<-warm // the honest peers have their records: the attack starts
	var catchUp chan *CatchUpResult
	if other != nil {
		catchUp = make(chan *CatchUpResult, 1)
		go func() {
			catchUp <- startCatchUp(ctx, d, honestT, otherAddr, filepath.Join(dir, "fresh"), time.Now().Add(duration))
		}()
	}

	res.RSSStart = currentRSS(pid)
	lines0 := countLines(logPath)
	cpu0 := cpuTime(pid)
	var worker *exec.Cmd
	var workerOut bytes.Buffer
	if s.Attack != "" {
		if worker, _, err = startAttacker(t, s.Attack, duration, s.IDs, s.Rate, "", an, &workerOut); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	peak := samplePeakRSS(actx, pid)
	res.Honest = <-honest
	res.RSSPeak = peak()
	res.Seconds = time.Since(start).Seconds()
	res.CPUPct = 100 * (cpuTime(pid) - cpu0).Seconds() / res.Seconds
	res.RSSEnd = currentRSS(pid)
	res.LogLines = countLines(logPath) - lines0
	res.LogLinesPerMin = float64(res.LogLines) / res.Seconds * 60
	res.HonestServedPct, res.NewcomersServedPct = res.Honest.ServedPct(), res.Honest.NewcomersPct()
	if catchUp != nil {
		res.CatchUp = <-catchUp
	}
	if worker != nil {
		if err := worker.Wait(); err != nil {
			return nil, fmt.Errorf("attacker: %w", err)
		}
		if err := json.Unmarshal(workerOut.Bytes(), &res.Attacker); err != nil {
			return nil, fmt.Errorf("attacker's figures %q: %w", workerOut.String(), err)
		}
	}
	return res, nil
}

// attackSources is how many addresses the namespace of a scenario gives its
// attacker (--netns): one an id for an attack of long-lived ids, and for
// a Sybil attack, whose ids are new each, enough that an address comes
// round again only after some seconds (each id holds its connection 1 s).
func attackSources(s AttackScenario) int {
	if s.Rate > 1 {
		return min(4*s.Rate, 4096)
	}
	return max(s.IDs, 16)
}

// loopbackTarget is t at the daemon's 127.0.0.1 address.
func loopbackTarget(d *devnet.Network, t attack.Target) (attack.Target, error) {
	for _, a := range d.State().Nodes[0].Addrs {
		if strings.HasPrefix(a, "/ip4/127.0.0.1/tcp/") {
			return attack.ParseTarget(a, t.Network)
		}
	}
	return attack.Target{}, fmt.Errorf("the daemon has no 127.0.0.1 address: %v", d.State().Nodes[0].Addrs)
}

// RunKill is the kill9 scenario: it writes events through the control API
// of a daemon (4 writers) that it kills with SIGKILL 100 to 500 ms into
// each round and restarts, kills times, and counts the events whose write
// was acknowledged and those the restarted daemon holds. log gets a line a
// kill.
func RunKill(ctx context.Context, kills int, log func(format string, args ...any)) (*KillResult, error) {
	dir, err := os.MkdirTemp("", "wats-bench-kill9-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	d, _, err := attackDaemon(ctx, dir, nil)
	if err != nil {
		return nil, err
	}
	defer func() { d.Stop() }()
	res := &KillResult{Kills: kills}
	var acked []string
	rng := rand.New(rand.NewPCG(1, 2))
	for k := range kills {
		cl := d.Client(0)
		// Writers until the kill: each acknowledged id is kept.
		wctx, stop := context.WithCancel(ctx)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for i := 0; wctx.Err() == nil; i++ {
					ev, err := cl.AddEvent(wctx, "note", jsontext.Value(fmt.Sprintf(`{"k":%d,"w":%d,"i":%d}`, k, w, i)))
					if err != nil {
						return
					}
					var e struct {
						ID string `json:"id"`
					}
					if jsonv2.Unmarshal(ev, &e) == nil {
						mu.Lock()
						acked = append(acked, e.ID)
						mu.Unlock()
					}
				}
			})
		}
		select { // writes in flight for 100..500 ms, then the kill
		case <-time.After(time.Duration(100+rng.IntN(400)) * time.Millisecond):
		case <-ctx.Done():
		}
		devnet.SignalGroup(d.Daemon(0).PID(), syscall.SIGKILL)
		<-d.Daemon(0).Exited()
		stop()
		wg.Wait()
		// Restart on the same repo and check every acknowledged event.
		if err := d.Restart(0); err != nil {
			return nil, err
		}
		wctx2, cancel := context.WithTimeout(ctx, devnet.DefaultUpTimeout)
		_, err := d.Daemon(0).WaitAPI(wctx2, cl)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("restart %d: %w", k+1, err)
		}
		log("  kill %d: %d events acknowledged so far", k+1, len(acked))
	}
	res.Acknowledged = len(acked)
	for _, id := range acked {
		if _, err := d.Client(0).Event(ctx, id); err == nil {
			res.Present++
		}
	}
	res.Lost = res.Acknowledged - res.Present
	return res, nil
}

// AttackWorker is the attacker process of RunAttack (`wats bench
// attack-worker`): it runs attack name against t with o, its ids holding
// their connections 1 s (o.Hold), for duration, then writes its figures
// (attack.Stats) to w as one line of JSON.
func AttackWorker(ctx context.Context, name string, t attack.Target, o attack.Options, duration time.Duration, w io.Writer) error {
	o.Hold = time.Second
	ctx, cancel := context.WithTimeout(ctx, duration)
	defer cancel()
	st, err := attack.Attack(ctx, name, t, o)
	if err != nil {
		return err
	}
	return json.NewEncoder(w).Encode(st)
}

// startAttacker starts a `wats bench attack-worker` process of this
// binary (cmd/wats's flags, which call AttackWorker): attack against t
// for at most d, with ids ids and rate fresh ids a second (each at least
// 1) and, if not "", the blob cid to attack; in an's network namespace,
// its ids dialling from an address each, when an is set. It runs at the
// lowest priority, every thread of it: the figures describe the node, not
// two processes sharing the cores. Its standard output (its figures, one
// JSON object) goes to out. It returns the process and the flags given.
func startAttacker(t attack.Target, name string, d time.Duration, ids, rate int, cid string, an *attackNet, out *bytes.Buffer) (*exec.Cmd, []string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	args := []string{"bench", "attack-worker", "--attack", name,
		"--target", t.Addr.String() + "/p2p/" + t.ID.String(), "--network", t.Network,
		"--duration", d.String(), "--ids", strconv.Itoa(max(ids, 1)), "--rate", strconv.Itoa(max(rate, 1))}
	if cid != "" {
		args = append(args, "--cid", cid)
	}
	worker := exec.Command(exe, args...)
	if an != nil {
		worker = an.command(exe, append(args, "--source", strings.Join(an.sources, ","))...)
	}
	worker.Stdout, worker.Stderr = out, os.Stderr
	if err := startNiced(worker); err != nil {
		return nil, nil, err
	}
	return worker, args, nil
}
