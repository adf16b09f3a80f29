package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/spf13/cobra"

	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/internal/attack"
	"github.com/wats-network/wats/internal/devnet"
)

// attackScenario is one row of `bench attack`: an attack and its size.
type attackScenario struct {
	Name   string `json:"name"`
	Attack string `json:"attack"` // "" for none
	IDs    int    `json:"ids,omitempty"`
	Rate   int    `json:"rate,omitempty"`
}

// attackScenarios are the scenarios of ADR 0030's attack suite, in order.
var attackScenarios = []attackScenario{
	{Name: "none", Attack: ""},
	{Name: "one-id-flood", Attack: attack.OneIDFlood},
	{Name: "sybil", Attack: attack.Sybil, Rate: 550},
	{Name: "sybil-hello", Attack: attack.SybilHello, Rate: 550},
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
}

// attackResult is one scenario's figures.
type attackResult struct {
	Scenario attackScenario      `json:"scenario"`
	Seconds  float64             `json:"seconds"`
	Honest   attack.HonestResult `json:"honest"`
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
}

// killResult is the kill -9 scenario's figures.
type killResult struct {
	Kills        int `json:"kills"`
	Acknowledged int `json:"acknowledged"`
	Present      int `json:"present"`
	Lost         int `json:"lost"`
}

func (c *cli) benchAttackCmd() *cobra.Command {
	var (
		scenario string
		duration time.Duration
		kills    int
		jsonOut  bool
	)
	names := []string{"all", "kill9"}
	for _, s := range attackScenarios {
		names = append(names, s.Name)
	}
	cmd := &cobra.Command{
		Use:   "attack [--scenario NAME|all|kill9] [--duration D]",
		Short: "Run a real daemon under attack and measure how its honest peers are served",
		Long: `Start a daemon (a real process, as 'devnet up' does) in a temporary directory,
then, per scenario, run an honest load against it (10 peers that share events,
each a sync every 500 ms and a hello every 10 s, and a never-seen peer every
second that must complete hello and one sync) while an attacker, in another
process at the lowest CPU priority (nice 19), attacks it on 127.0.0.1
(docs/adr/0030):

  none                    no attack: the baseline
  one-id-flood            one id floods sync and hello requests
  sybil, sybil-hello      550 fresh ids a second connect (and say hello), each
                          holding its connection 1 s
  hoard-unnegotiated-N    N ids hold streams that never name a protocol
  hoard-prefix-N          N ids hold /wats/1 streams stalled in a length prefix
  bad-solutions           ids flood requests and answer challenges wrongly
  unread-pages-8          8 ids ask for sync pages of over a megabyte and
                          never read them
  crash-flood             200 fresh ids a second submit two crash reports
                          each and leave
  value-sybils            100 fresh ids a second give one self-signed event
                          each by sync, and leave
  kill9                   events written through the control API while the
                          daemon is killed with SIGKILL and restarted --kills
                          times: acknowledged events against those present

Each scenario gets a fresh daemon. Reports, per scenario, the honest requests
served and their p50/p99 latency, the newcomers served, the daemon's RSS at the
start, peak and end, its log lines and its CPU. The figures describe this
machine under this load; docs/reliability.md records them with the command.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var run []attackScenario
			switch scenario {
			case "all":
				run = attackScenarios
			case "kill9":
			default:
				for _, s := range attackScenarios {
					if s.Name == scenario {
						run = []attackScenario{s}
					}
				}
				if len(run) == 0 {
					return usageErrorf("--scenario %q: must be one of %s", scenario, strings.Join(names, ", "))
				}
			}
			if duration < 5*time.Second {
				return usageErrorf("--duration %v: at least 5s (a newcomer arrives every 5 s)", duration)
			}
			if kills < 1 {
				return usageErrorf("--kills %d: at least 1", kills)
			}
			var results []attackResult
			for _, s := range run {
				c.progress("scenario %s: %v", s.Name, duration)
				r, err := c.runAttackScenario(cmd.Context(), s, duration)
				if err != nil {
					return fmt.Errorf("scenario %s: %w", s.Name, err)
				}
				results = append(results, *r)
				if !jsonOut {
					c.progress("  honest %.1f%% served, p99 %.1f ms, newcomers %.0f%%; not served: %v, newcomers: %v",
						r.HonestServedPct, r.Honest.P99ms, r.NewcomersServedPct, r.Honest.Failures, r.Honest.NewcomerFailures)
				}
			}
			var kr *killResult
			if scenario == "all" || scenario == "kill9" {
				c.progress("scenario kill9: %d kills", kills)
				var err error
				if kr, err = c.runKillScenario(cmd.Context(), kills); err != nil {
					return fmt.Errorf("scenario kill9: %w", err)
				}
			}
			if jsonOut {
				return c.printJSON(struct {
					Results []attackResult `json:"results"`
					Kill9   *killResult    `json:"kill9,omitempty"`
				}{results, kr})
			}
			tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "SCENARIO\tHONEST\tP50\tP99\tNEWCOMERS\tRSS START/PEAK/END\tLOG LINES/MIN\tCPU\tATTACKER")
			for _, r := range results {
				fmt.Fprintf(tw, "%s\t%.1f%%\t%.1f ms\t%.1f ms\t%.0f%% (%d/%d)\t%s / %s / %s\t%.0f\t%.0f%%\t%s\n",
					r.Scenario.Name, r.HonestServedPct, r.Honest.P50ms, r.Honest.P99ms,
					r.NewcomersServedPct, r.Honest.NewcomersServed, r.Honest.Newcomers,
					mib(r.RSSStart), mib(r.RSSPeak), mib(r.RSSEnd), r.LogLinesPerMin, r.CPUPct, attackerSummary(r.Attacker))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if kr != nil {
				fmt.Fprintf(c.stdout, "kill9: %d kills, %d events acknowledged, %d present, %d lost\n", kr.Kills, kr.Acknowledged, kr.Present, kr.Lost)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&scenario, "scenario", "all", "a scenario named above, or all")
	cmd.Flags().DurationVar(&duration, "duration", 30*time.Second, "how long each scenario runs")
	cmd.Flags().IntVar(&kills, "kills", 50, "how many times the kill9 scenario kills the daemon")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the results as JSON")
	return cmd
}

func mib(n uint64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }

func attackerSummary(s attack.Stats) string {
	return fmt.Sprintf("%d ids, %d conns (%d failed), %d requests (%d served), %d streams held (%d reset)",
		s.IDs, s.Conns, s.Failed, s.Requests, s.Answered, s.Streams, s.Reset)
}

// attackDaemon starts one daemon for an attack scenario, with events to
// sync, and returns it with its target address.
func (c *cli) attackDaemon(ctx context.Context, dir string) (*devnet.Network, attack.Target, error) {
	d, err := devnet.Start(ctx, devnet.Options{
		Dir: dir, Nodes: 1, Network: "wats-attack", Timeout: devnet.DefaultUpTimeout, Foreground: true,
		Log: func(string, ...any) {},
		Config: func(cfg *config.Config) {
			cfg.P2P.Listen = []string{"/ip4/127.0.0.1/tcp/0"}
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
	addr := ""
	for _, a := range d.State().Nodes[0].Addrs {
		if strings.Contains(a, "/tcp/") {
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

// runAttackScenario runs one scenario against a fresh daemon.
func (c *cli) runAttackScenario(ctx context.Context, s attackScenario, duration time.Duration) (*attackResult, error) {
	dir, err := os.MkdirTemp("", "wats-bench-attack-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	d, t, err := c.attackDaemon(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer d.Stop()
	pid := d.Daemon(0).PID()
	logPath := d.State().Nodes[0].Log
	res := &attackResult{Scenario: s}
	h := attack.DefaultHonest
	actx, cancel := context.WithTimeout(ctx, h.Warmup+duration)
	defer cancel()
	warm := make(chan struct{})
	honest := make(chan attack.HonestResult, 1)
	go func() { honest <- attack.RunHonest(actx, t, h, warm) }()
	<-warm // the honest peers have their records: the attack starts

	res.RSSStart = currentRSS(pid)
	lines0 := countLines(logPath)
	cpu0 := cpuTime(pid)
	var worker *exec.Cmd
	var workerOut bytes.Buffer
	if s.Attack != "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		addr := t.Addr.String() + "/p2p/" + t.ID.String()
		worker = exec.Command(exe, "bench", "attack-worker", "--attack", s.Attack, "--target", addr,
			"--network", t.Network, "--duration", duration.String(),
			"--ids", strconv.Itoa(max(s.IDs, 1)), "--rate", strconv.Itoa(max(s.Rate, 1)))
		worker.Stdout, worker.Stderr = &workerOut, os.Stderr
		// The attacker runs at the lowest priority, every thread of it:
		// the figures describe the node, not two processes sharing the
		// cores.
		if err := startNiced(worker); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	var peak uint64
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			peak = max(peak, currentRSS(pid))
			select {
			case <-actx.Done():
				return
			case <-t.C:
			}
		}
	})
	res.Honest = <-honest
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	res.CPUPct = 100 * (cpuTime(pid) - cpu0).Seconds() / res.Seconds
	res.RSSPeak, res.RSSEnd = max(peak, currentRSS(pid)), currentRSS(pid)
	res.LogLines = countLines(logPath) - lines0
	res.LogLinesPerMin = float64(res.LogLines) / res.Seconds * 60
	res.HonestServedPct, res.NewcomersServedPct = res.Honest.ServedPct(), res.Honest.NewcomersPct()
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

// runKillScenario writes events through the control API of a daemon that
// it kills with SIGKILL and restarts kills times, and counts the events
// whose write was acknowledged and those the restarted daemon holds.
func (c *cli) runKillScenario(ctx context.Context, kills int) (*killResult, error) {
	dir, err := os.MkdirTemp("", "wats-bench-kill9-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	d, _, err := c.attackDaemon(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer func() { d.Stop() }()
	res := &killResult{Kills: kills}
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
		c.progress("  kill %d: %d events acknowledged so far", k+1, len(acked))
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

// benchAttackWorkerCmd is the attacker process of `bench attack`.
func (c *cli) benchAttackWorkerCmd() *cobra.Command {
	var (
		name, target, network string
		duration              time.Duration
		o                     attack.Options
	)
	cmd := &cobra.Command{
		Use:    "attack-worker",
		Short:  "The attacker process of 'bench attack' (prints its figures as JSON)",
		Hidden: true,
		Args:   noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, err := attack.ParseTarget(target, network)
			if err != nil {
				return usageErrorf("%v", err)
			}
			o.Hold = time.Second
			ctx, cancel := context.WithTimeout(cmd.Context(), duration)
			defer cancel()
			st, err := attack.Attack(ctx, name, t, o)
			if err != nil {
				return err
			}
			return json.NewEncoder(c.stdout).Encode(st)
		},
	}
	cmd.Flags().StringVar(&name, "attack", "", "the attack: "+strings.Join(attack.Attacks, ", "))
	cmd.Flags().StringVar(&target, "target", "", "the daemon's full multiaddr")
	cmd.Flags().StringVar(&network, "network", "", "the daemon's network")
	cmd.Flags().DurationVar(&duration, "duration", 30*time.Second, "how long to attack")
	cmd.Flags().IntVar(&o.IDs, "ids", 1, "ids of a hoarding attack")
	cmd.Flags().IntVar(&o.Rate, "rate", 550, "fresh ids a second of a Sybil attack")
	return cmd
}

// currentRSS returns a process's resident set in bytes (VmRSS), or 0.
func currentRSS(pid int) uint64 { return procStatusKB(pid, "VmRSS:") }

// procStatusKB reads a "kB" field of /proc/PID/status, in bytes; 0 where
// that is not available.
func procStatusKB(pid int, field string) uint64 {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// countLines counts the lines of a file (0 if it cannot be read).
func countLines(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		n++
	}
	return n
}
