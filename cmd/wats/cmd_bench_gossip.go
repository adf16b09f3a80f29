package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	"github.com/wats-network/wats/node/api"
)

// gossipScenario is one row of `bench gossip`.
type gossipScenario struct {
	Name   string `json:"name"`
	Attack string `json:"attack"` // "" for none
	IDs    int    `json:"ids,omitempty"`
	// Netns: the attacker ran in a network namespace, an address per id
	// (--netns).
	Netns bool `json:"netns,omitempty"`
}

// gossipScenarios are the scenarios of `bench gossip`, in order.
var gossipScenarios = []gossipScenario{
	{Name: "none"},
	{Name: "invalid-flood", Attack: attack.InvalidFlood, IDs: attack.DefaultGossipIDs},
	{Name: "valid-spam", Attack: attack.ValidSpam, IDs: attack.DefaultGossipIDs},
	{Name: "ihave-flood", Attack: attack.IHaveFlood, IDs: attack.DefaultGossipIDs},
	{Name: "mesh-sybil", Attack: attack.MeshSybil, IDs: attack.DefaultSybilIDs},
}

const (
	// gossipBenchNetwork is the network of the bench's daemons.
	gossipBenchNetwork = "wats-gossip-bench"
	// honestEvery is how often A publishes an honest event.
	honestEvery = 500 * time.Millisecond
	// deliveredWithin is the delivery the honest events are measured by.
	deliveredWithin = time.Second
	// attackMargin is how long the attacker goes on after A's last honest
	// event, so that every measured event has its second under attack.
	attackMargin = 2 * time.Second
	// workerReadyTimeout bounds the attacker's start (making its ids and
	// their first connections).
	workerReadyTimeout = 2 * time.Minute
)

// gossipDaemonResult is one daemon's figures in a scenario.
type gossipDaemonResult struct {
	Name   string `json:"name"` // A, B or C
	PeerID string `json:"peer_id"`
	// Events is the events in its log at the end of the attack;
	// AttackerEvents those not A's (A's honest events are the only others).
	Events         uint64 `json:"events"`
	AttackerEvents uint64 `json:"attacker_events"`
	// The repo directory's disk use (du: allocated blocks) before the
	// attack, at its end and after the wait that follows, in bytes.
	DiskStart uint64 `json:"disk_start_bytes"`
	DiskEnd   uint64 `json:"disk_end_bytes"`
	DiskAfter uint64 `json:"disk_after_bytes"`
	// FilesStart and FilesEnd are the same as the files' sizes (what
	// they hold, without what the filesystem preallocated for them).
	FilesStart uint64 `json:"files_start_bytes"`
	FilesEnd   uint64 `json:"files_end_bytes"`
	// Resident set (VmRSS) before the attacker started, its highest sample
	// (every 250 ms) until the attack ended, at the end and after the
	// wait, in bytes.
	RSSStart uint64 `json:"rss_start_bytes"`
	RSSPeak  uint64 `json:"rss_peak_bytes"`
	RSSEnd   uint64 `json:"rss_end_bytes"`
	RSSAfter uint64 `json:"rss_after_bytes"`
	// CPUPct is its CPU time during the attack, in percent of one core;
	// CPUAfterPct the same during the wait after it.
	CPUPct      float64 `json:"cpu_pct"`
	CPUAfterPct float64 `json:"cpu_after_pct"`
	// MaxPeers is the most peers it was connected to at once (sampled
	// every 2 s, attackers included).
	MaxPeers int `json:"max_peers"`
	// Fsyncs counts its WAL fsyncs during the attack (each a durable write
	// of a group of events), FsyncsSlow those over 100 ms (at the
	// resolution of wats_db_wal_fsync_seconds): a slow disk holds up every
	// event in the group.
	Fsyncs     uint64 `json:"fsyncs"`
	FsyncsSlow uint64 `json:"fsyncs_over_100ms"`
}

// fsyncCounts reads a daemon's WAL fsync count and the count at or below
// 100 ms from its /metrics (zeros if it cannot).
func fsyncCounts(ctx context.Context, cl *api.Client) (all, fast uint64) {
	cctx, cancel := context.WithTimeout(ctx, devnet.CallTimeout)
	defer cancel()
	text, err := cl.Metrics(cctx)
	if err != nil {
		return 0, 0
	}
	for line := range strings.Lines(text) {
		name, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			continue
		}
		switch name {
		case "wats_db_wal_fsync_seconds_count":
			all = uint64(n)
		case `wats_db_wal_fsync_seconds_bucket{le="0.1"}`:
			fast = uint64(n)
		}
	}
	return all, fast
}

// gossipHonest is what became of A's honest events.
type gossipHonest struct {
	// Published counts the events A's API stored (PublishFailed the calls
	// that failed); Delivered those that reached C at all (before the end
	// of the wait after the attack), Within those within deliveredWithin
	// of the call that published them.
	Published     int     `json:"published"`
	PublishFailed int     `json:"publish_failed"`
	Delivered     int     `json:"delivered"`
	Within        int     `json:"within_1s"`
	WithinPct     float64 `json:"within_1s_pct"`
	DeliveredPct  float64 `json:"delivered_pct"`
	// P50ms and P99ms are the latencies of the delivered events, from the
	// call to A's API to the event's arrival on C's tail, in ms; AddP99ms
	// the p99 of the API call itself.
	P50ms    float64 `json:"p50_ms"`
	P99ms    float64 `json:"p99_ms"`
	AddP99ms float64 `json:"add_p99_ms"`
	// Slowest are the three slowest delivered events: when each was
	// published (seconds into the attack) and its latency, to tell a
	// start-up cost from a steady one.
	Slowest []slowEvent `json:"slowest,omitempty"`
}

// slowEvent is one of gossipHonest.Slowest: when it was published
// (seconds into the attack), its latency to C, and where the time went:
// A's API call (its durable write) and the arrival on B's tail, both in ms
// from the call's start (BMs is -1 if B's tail did not show it).
type slowEvent struct {
	AtSeconds float64 `json:"at_seconds"`
	Ms        float64 `json:"ms"`
	AddMs     float64 `json:"add_ms"`
	BMs       float64 `json:"b_ms"`
}

// gossipResult is one scenario's figures.
type gossipResult struct {
	Scenario     gossipScenario `json:"scenario"`
	Seconds      float64        `json:"seconds"`       // the attack, from the attacker's start to its end
	AfterSeconds float64        `json:"after_seconds"` // the wait after it
	Honest       gossipHonest   `json:"honest"`
	// Daemons are A, B and C.
	Daemons []gossipDaemonResult `json:"daemons"`
	// CConnectedToA reports whether C was seen connected to A (it is
	// bootstrapped to B only; only the node's own discovery can connect
	// them).
	CConnectedToA bool `json:"c_connected_to_a"`
	// AttackerNiced counts the attacker's threads at nice 19, of
	// AttackerThreads (sampled once the attack started).
	AttackerNiced   int                 `json:"attacker_threads_niced,omitempty"`
	AttackerThreads int                 `json:"attacker_threads,omitempty"`
	Attacker        *attack.GossipStats `json:"attacker,omitempty"`
}

func (c *cli) benchGossipCmd() *cobra.Command {
	var netns bool
	var (
		scenario        string
		duration, after time.Duration
		ids             int
		warmup          time.Duration
		keep            string
		jsonOut         bool
	)
	names := []string{"all"}
	for _, s := range gossipScenarios {
		names = append(names, s.Name)
	}
	cmd := &cobra.Command{
		Use:   "gossip [--scenario NAME|all] [--duration D] [--after D] [--ids N]",
		Short: "Run three daemons in a line under gossip attacks and measure honest delivery",
		Long: `Start three daemons (real processes, as 'devnet up' does) on 127.0.0.1 in a
line: B bootstrapped to A, C to B (mDNS off, sync.interval 1h, so that only
gossip moves events; limits as defaults but limits.new_author_minutes = 1).
After a --warmup in which A publishes as it will (so that A is an established
author at C, as in a network that was up before the attack), A publishes an honest event every
500 ms through its control API while an attacker, in another process at the
lowest CPU priority (nice 19), attacks A and B with ids that are real libp2p
hosts speaking gossipsub on the network's topic:

  none            no attack: the baseline
  invalid-flood   envelopes just under the size cap whose event's signature
                  is bad, as fast as the nodes read them, from each id
  valid-spam      valid events signed by each id's own key, as fast as the
                  nodes read them
  ihave-flood     raw gossipsub RPCs with IHAVEs of thousands of fake message
                  ids, ten a second per id and node, never delivered; the
                  IWANT ids received back are counted per 10 s
  mesh-sybil      many fresh ids (200) subscribe, graft into A's and B's
                  mesh and publish a valid event every 5 s each

With --netns (root and the ip command) the attacker runs in a network
namespace of its own, each id dialling from its own address in
198.18.0.0/15, as attackers on the internet do: libp2p's per-IP connection
rate limit, which exempts loopback, then applies to them.

Each scenario gets fresh daemons. Reports, per scenario: A's honest events
that reached C within 1 s (watched on C's event tail) and the p50/p99 latency
of those delivered; the attacker's events stored at A, B and C; each repo's
disk growth; each daemon's RSS before the attack, at its peak, at its end and
--after it, its CPU, and its WAL fsyncs over 100 ms during the attack. Every
event is synced before it is forwarded, so a disk's fsync stalls add to the
latency whatever the attack (time a disk with 'wats bench disk'); with
--keep /dev/shm/DIR the repos are on tmpfs and the figures leave the disk out.
The figures describe this machine under this load; docs/reliability.md
records them with the command.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var run []gossipScenario
			for _, s := range gossipScenarios {
				if scenario == "all" || s.Name == scenario {
					run = append(run, s)
				}
			}
			if len(run) == 0 {
				return usageErrorf("--scenario %q: must be one of %s", scenario, strings.Join(names, ", "))
			}
			if duration < 5*time.Second {
				return usageErrorf("--duration %v: at least 5s", duration)
			}
			if after < 0 {
				return usageErrorf("--after %v: must not be negative", after)
			}
			if ids < 0 {
				return usageErrorf("--ids %d: must not be negative", ids)
			}
			var results []gossipResult
			for _, s := range run {
				if ids > 0 && s.Attack != "" {
					s.IDs = ids
				}
				s.Netns = netns && s.Attack != ""
				c.progress("scenario %s: %v, then %v after", s.Name, duration, after)
				r, err := c.runGossipScenario(cmd.Context(), s, warmup, duration, after, keep)
				if err != nil {
					return fmt.Errorf("scenario %s: %w", s.Name, err)
				}
				results = append(results, *r)
				c.progress("  A→C within 1 s: %.1f%% (%d of %d), delivered %.1f%%, p99 %.0f ms; attacker events A/B/C %s",
					r.Honest.WithinPct, r.Honest.Within, r.Honest.Published, r.Honest.DeliveredPct, r.Honest.P99ms, attackerEvents(r))
			}
			if jsonOut {
				return c.printJSON(struct {
					Results []gossipResult `json:"results"`
				}{results})
			}
			return c.printGossipTable(results)
		},
	}
	cmd.Flags().StringVar(&scenario, "scenario", "all", "a scenario named above, or all")
	cmd.Flags().DurationVar(&warmup, "warmup", 65*time.Second, "how long A publishes before each attack (at least 1m)")
	cmd.Flags().DurationVar(&duration, "duration", 60*time.Second, "how long each attack runs (A publishes meanwhile)")
	cmd.Flags().DurationVar(&after, "after", 60*time.Second, "the wait after the attack before the last RSS reading")
	cmd.Flags().IntVar(&ids, "ids", 0, "attacker ids (default: 20, mesh-sybil 200)")
	cmd.Flags().StringVar(&keep, "keep", "", "keep each scenario's repos and logs under DIR")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the results as JSON")
	cmd.Flags().BoolVar(&netns, "netns", false, "run the attacker in a network namespace, an address per id (needs root)")
	return cmd
}

func attackerEvents(r *gossipResult) string {
	var parts []string
	for _, d := range r.Daemons {
		parts = append(parts, strconv.FormatUint(d.AttackerEvents, 10))
	}
	return strings.Join(parts, " / ")
}

func (c *cli) printGossipTable(results []gossipResult) error {
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tA→C ≤1s\tP50\tP99\tATTACKER EVENTS A/B/C\tDISK +A/+B/+C du (files)\tRSS A start/peak/end/after\tRSS B\tRSS C\tCPU A/B/C\tFSYNCS >100ms A/B/C\tC–A\tATTACKER")
	for _, r := range results {
		var disk, rss, cpu, fsyncs []string
		for _, d := range r.Daemons {
			fsyncs = append(fsyncs, fmt.Sprintf("%d of %d", d.FsyncsSlow, d.Fsyncs))
			disk = append(disk, fmt.Sprintf("%+.1f (%+.1f)", (float64(d.DiskEnd)-float64(d.DiskStart))/(1<<20),
				(float64(d.FilesEnd)-float64(d.FilesStart))/(1<<20)))
			rss = append(rss, fmt.Sprintf("%d/%d/%d/%d", d.RSSStart>>20, d.RSSPeak>>20, d.RSSEnd>>20, d.RSSAfter>>20))
			cpu = append(cpu, fmt.Sprintf("%.0f%%", d.CPUPct))
		}
		for len(rss) < 3 {
			rss = append(rss, "—")
		}
		ca := "no"
		if r.CConnectedToA {
			ca = "yes"
		}
		fmt.Fprintf(tw, "%s\t%.1f%% (%d/%d)\t%.0f ms\t%.0f ms\t%s\t%s MiB\t%s MiB\t%s\t%s\t%s\t%s\t%s\t%s\n",
			r.Scenario.Name, r.Honest.WithinPct, r.Honest.Within, r.Honest.Published, r.Honest.P50ms, r.Honest.P99ms,
			attackerEvents(&r), strings.Join(disk, "/"), rss[0], rss[1], rss[2], strings.Join(cpu, "/"), strings.Join(fsyncs, " / "), ca,
			gossipAttackerSummary(r))
	}
	return tw.Flush()
}

// gossipAttackerSummary says what the attacker did, in a table cell.
func gossipAttackerSummary(r gossipResult) string {
	s := r.Attacker
	if s == nil {
		return "—"
	}
	conn := fmt.Sprintf("%d ids, %d dials (%d failed), %d disconnects", s.IDs, s.Dials, s.DialsFailed, s.Disconnects)
	switch r.Scenario.Attack {
	case attack.IHaveFlood:
		w := make([]string, len(s.IWantPerWindow))
		for i, n := range s.IWantPerWindow {
			w[i] = strconv.FormatInt(n, 10)
		}
		return fmt.Sprintf("%s; %d IHAVE ids in %d RPCs; IWANT ids per %.0f s: %s", conn, s.IHaveIDs, s.IHaveRPCs,
			s.WindowSeconds, strings.Join(w, ", "))
	case attack.MeshSybil:
		return fmt.Sprintf("%s; %d published; %d grafts, %d prunes", conn, s.Published, s.Grafts, s.Prunes)
	}
	return fmt.Sprintf("%s; %d published, %d sent (%.0f MiB), %d dropped", conn, s.Published, s.Sent,
		float64(s.SentBytes)/(1<<20), s.Dropped)
}

// gossipLine is the bench's three daemons: A, B bootstrapped to A, C to B.
type gossipLine struct {
	procs   []*devnet.Daemon
	clients []*api.Client
	repos   []string
	logs    []string
	ids     []string
	addrs   []string // each one's TCP multiaddr, ending in /p2p/<id>
	// netAddrs are A's and B's addresses in the attacker's network
	// (--netns; "" without).
	netAddrs []string
	an       *attackNet
}

var lineNames = []string{"A", "B", "C"}

func (l *gossipLine) stop() {
	devnet.StopDaemons(l.procs)
	for _, cl := range l.clients {
		cl.Close()
	}
}

// exited is an error quoting the end of its log if a daemon has exited.
func (l *gossipLine) exited() error {
	for i, p := range l.procs {
		select {
		case <-p.Exited():
			return fmt.Errorf("%s exited during the run (%v); the end of %s:\n%s", lineNames[i], p.Err(), l.logs[i], devnet.LogTail(l.logs[i], 30))
		default:
		}
	}
	return nil
}

// startGossipLine starts the three daemons in dir and waits until A and B,
// and B and C, have completed hello, and checks that C is not connected
// to A.
func startGossipLine(ctx context.Context, dir string, an *attackNet) (_ *gossipLine, err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the wats binary: %w", err)
	}
	l := &gossipLine{an: an}
	defer func() {
		if err != nil {
			l.stop()
		}
	}()
	for i, name := range lineNames {
		cfg := config.Default()
		cfg.Network = gossipBenchNetwork
		cfg.P2P.Listen = []string{"/ip4/127.0.0.1/tcp/0"}
		if an != nil && i < 2 { // A and B, the attacker's targets
			cfg.P2P.Listen = append(cfg.P2P.Listen, "/ip4/"+an.hostIP+"/tcp/0")
		}
		cfg.P2P.Bootstrap = []string{}
		if i > 0 {
			cfg.P2P.Bootstrap = []string{l.addrs[i-1]}
		}
		cfg.P2P.MDNS = false
		cfg.Sync.Gossip = true
		cfg.Sync.Interval = config.Duration{Duration: time.Hour}
		cfg.Limits.NewAuthorMinutes = 1 // the least limits.new_author_minutes allows; see the warm-up
		rdir := filepath.Join(dir, name)
		r, err := devnet.PrepareRepo(rdir, cfg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		logPath := filepath.Join(rdir, devnet.LogFileName)
		p, err := devnet.StartDaemon(exe, rdir, logPath, i, true)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		cl := api.NewClient(r.SocketPath())
		l.procs, l.clients = append(l.procs, p), append(l.clients, cl)
		l.repos, l.logs = append(l.repos, rdir), append(l.logs, logPath)
		wctx, cancel := context.WithTimeout(ctx, devnet.DefaultUpTimeout)
		id, err := p.WaitAPI(wctx, cl)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		addr, netAddr := "", ""
		for _, a := range id.Addrs {
			switch {
			case an != nil && strings.HasPrefix(a, "/ip4/"+an.hostIP+"/tcp/"):
				netAddr = a
			case addr == "" && strings.HasPrefix(a, "/ip4/127.0.0.1/tcp/"):
				addr = a
			}
		}
		l.netAddrs = append(l.netAddrs, netAddr)
		if addr == "" {
			return nil, fmt.Errorf("%s reports no TCP address (%v); see %s", name, id.Addrs, logPath)
		}
		l.ids, l.addrs = append(l.ids, id.PeerID), append(l.addrs, addr)
	}
	// The line: A–B and B–C with hello completed, and no C–A.
	want := [][]int{{1}, {0, 2}, {1}}
	wctx, cancel := context.WithTimeout(ctx, devnet.DefaultUpTimeout)
	defer cancel()
	for {
		missing := ""
		for i, cl := range l.clients {
			cctx, ccancel := context.WithTimeout(wctx, devnet.CallTimeout)
			peers, err := cl.Peers(cctx)
			ccancel()
			if err != nil {
				missing = fmt.Sprintf("%s: %v", lineNames[i], err)
				break
			}
			for _, j := range want[i] {
				if !slices.ContainsFunc(peers, func(p api.Peer) bool { return p.PeerID == l.ids[j] && p.Hello }) {
					missing = fmt.Sprintf("%s has not completed hello with %s", lineNames[i], lineNames[j])
				}
			}
			if i == 2 && slices.ContainsFunc(peers, func(p api.Peer) bool { return p.PeerID == l.ids[0] }) {
				return nil, errors.New("C is connected to A: the line is not a line")
			}
		}
		if missing == "" {
			return l, nil
		}
		select {
		case <-wctx.Done():
			return nil, fmt.Errorf("the daemons did not connect in a line: %s; logs in %s/*/%s", missing, dir, devnet.LogFileName)
		case <-time.After(devnet.PollInterval):
		}
	}
}

// arrivals records when each event of one author appeared on a daemon's
// tail.
type arrivals struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

func (a *arrivals) at(id string) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.seen[id]
	return t, ok
}

// watch follows cl's event tail until ctx ends, recording the arrival of
// every event by author (from the start of the log: a broken stream is
// followed again, and what was seen keeps its first time).
func (a *arrivals) watch(ctx context.Context, cl *api.Client, author string) {
	for ctx.Err() == nil {
		_ = cl.Tail(ctx, 0, func(v jsontext.Value) error {
			now := time.Now()
			var e struct {
				ID     string `json:"id"`
				Author string `json:"author"`
			}
			if jsonv2.Unmarshal(v, &e) != nil || e.Author != author {
				return nil
			}
			a.mu.Lock()
			if _, ok := a.seen[e.ID]; !ok {
				a.seen[e.ID] = now
			}
			a.mu.Unlock()
			return nil
		})
		attack.Pause(ctx, 200*time.Millisecond)
	}
}

// honestSent is one honest event published by A.
type honestSent struct {
	id  string
	at  time.Time     // when the API call started
	add time.Duration // how long it took
}

// publishHonest publishes one honest event through A's API.
func publishHonest(ctx context.Context, cl *api.Client, i int) (honestSent, error) {
	cctx, cancel := context.WithTimeout(ctx, devnet.CallTimeout)
	defer cancel()
	start := time.Now()
	raw, err := cl.AddEvent(cctx, "note", jsontext.Value(fmt.Sprintf(`{"honest":%d}`, i)))
	if err != nil {
		return honestSent{}, err
	}
	var e struct {
		ID string `json:"id"`
	}
	if err := jsonv2.Unmarshal(raw, &e); err != nil || e.ID == "" {
		return honestSent{}, fmt.Errorf("events add answered %.100q", raw)
	}
	return honestSent{id: e.ID, at: start, add: time.Since(start)}, nil
}

// probeLine publishes honest events at A until one reaches C within
// deliveredWithin (the mesh is formed), for at most 30 s; it returns the
// probes' ids.
func probeLine(ctx context.Context, l *gossipLine, arr *arrivals) ([]string, error) {
	attack.Pause(ctx, 2*time.Second) // a few heartbeats: the meshes form
	var ids []string
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
		s, err := publishHonest(ctx, l.clients[0], -1-i)
		if err != nil {
			return ids, fmt.Errorf("A: events add: %w", err)
		}
		ids = append(ids, s.id)
		for time.Since(s.at) < 3*time.Second && ctx.Err() == nil {
			if t, ok := arr.at(s.id); ok {
				if t.Sub(s.at) <= deliveredWithin {
					return ids, nil
				}
				break
			}
			attack.Pause(ctx, 10*time.Millisecond)
		}
	}
	if err := ctx.Err(); err != nil {
		return ids, err
	}
	return ids, errors.New("no event of A's reached C within 1 s by gossip in 30 s; see the daemons' logs")
}

// runGossipScenario runs one scenario against a fresh line of daemons.
func (c *cli) runGossipScenario(ctx context.Context, s gossipScenario, warmup, duration, after time.Duration, keep string) (*gossipResult, error) {
	var dir string
	if keep != "" {
		dir = filepath.Join(keep, s.Name)
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
	} else {
		d, err := os.MkdirTemp("", "wats-bench-gossip-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	var an *attackNet
	if s.Netns {
		n := s.IDs
		if n == 0 {
			n = attack.DefaultGossipIDs
			if s.Attack == attack.MeshSybil {
				n = attack.DefaultSybilIDs
			}
		}
		var err error
		if an, err = newAttackNet(n); err != nil {
			return nil, err
		}
		defer an.close()
	}
	l, err := startGossipLine(ctx, dir, an)
	if err != nil {
		return nil, err
	}
	defer l.stop()

	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	arr := &arrivals{seen: map[string]time.Time{}}
	atB := &arrivals{seen: map[string]time.Time{}}
	var bg sync.WaitGroup
	defer bg.Wait()
	defer stopWatch()
	bg.Go(func() { arr.watch(wctx, l.clients[2], l.ids[0]) })
	bg.Go(func() { atB.watch(wctx, l.clients[1], l.ids[0]) })
	probes, err := probeLine(ctx, l, arr)
	if err != nil {
		return nil, err
	}
	// The warm-up: A publishes as it will during the attack, so that when
	// the attack starts A is an established author at B and C and each
	// daemon has a record of the peer that gave it events, as in a network
	// that was up before it was attacked (ADR 0031; limits.new_author_minutes
	// is 1 in this bench, where a network would wait 10).
	for tick := time.Now(); time.Since(tick) < warmup && ctx.Err() == nil; {
		hs, err := publishHonest(ctx, l.clients[0], -1000-len(probes))
		if err != nil {
			return nil, fmt.Errorf("A: events add: %w", err)
		}
		probes = append(probes, hs.id)
		attack.Pause(ctx, honestEvery)
	}

	res := &gossipResult{Scenario: s}
	n := len(l.procs)
	res.Daemons = make([]gossipDaemonResult, n)
	pids := make([]int, n)
	for i := range n {
		pids[i] = l.procs[i].PID()
		res.Daemons[i] = gossipDaemonResult{Name: lineNames[i], PeerID: l.ids[i],
			RSSStart: currentRSS(pids[i])}
		res.Daemons[i].DiskStart, res.Daemons[i].FilesStart = duBytes(l.repos[i])
	}

	// The sampler: RSS peaks, the peers of each daemon and C's link to A,
	// until the attack ends.
	sctx, stopSampler := context.WithCancel(ctx)
	defer stopSampler()
	var smu sync.Mutex
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for tick := 0; ; tick++ {
			smu.Lock()
			for i, pid := range pids {
				res.Daemons[i].RSSPeak = max(res.Daemons[i].RSSPeak, currentRSS(pid))
			}
			smu.Unlock()
			if tick%8 == 0 {
				for i, cl := range l.clients {
					cctx, cancel := context.WithTimeout(sctx, devnet.CallTimeout)
					peers, err := cl.Peers(cctx)
					cancel()
					if err != nil {
						continue
					}
					smu.Lock()
					res.Daemons[i].MaxPeers = max(res.Daemons[i].MaxPeers, len(peers))
					if i == 2 && slices.ContainsFunc(peers, func(p api.Peer) bool { return p.PeerID == l.ids[0] }) {
						res.CConnectedToA = true
					}
					smu.Unlock()
				}
			}
			select {
			case <-sctx.Done():
				return
			case <-t.C:
			}
		}
	}()

	// The attacker, if any, and the start of the attack.
	var w *gossipWorker
	if s.Attack != "" {
		if w, err = c.startGossipWorker(ctx, s, l, dir, duration+attackMargin); err != nil {
			return nil, err
		}
		defer w.kill()
		if err := w.ready(ctx); err != nil {
			return nil, err
		}
		res.AttackerNiced, res.AttackerThreads = threadsNiced(w.pid, 19)
		if res.AttackerNiced < res.AttackerThreads {
			c.progress("  warning: %d of the attacker's %d threads are not at nice 19", res.AttackerThreads-res.AttackerNiced, res.AttackerThreads)
		}
	}
	start := time.Now()
	cpu0 := make([]time.Duration, n)
	fsync0, fast0 := make([]uint64, n), make([]uint64, n)
	for i, pid := range pids {
		cpu0[i] = cpuTime(pid)
		fsync0[i], fast0[i] = fsyncCounts(ctx, l.clients[i])
	}

	// A's honest events, every 500 ms while the attack runs.
	var pmu sync.Mutex
	var sent []honestSent
	failed := 0
	var pwg sync.WaitGroup
	tick := time.NewTicker(honestEvery)
	for i := 0; time.Since(start) < duration && ctx.Err() == nil; i++ {
		pwg.Go(func() {
			hs, err := publishHonest(ctx, l.clients[0], i)
			pmu.Lock()
			defer pmu.Unlock()
			if err != nil {
				failed++
				return
			}
			sent = append(sent, hs)
		})
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
	tick.Stop()
	pwg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	// The end of the attack.
	if w != nil {
		st, err := w.wait(ctx, attackMargin+time.Minute)
		if err != nil {
			return nil, err
		}
		res.Attacker = st
	} else {
		attack.Pause(ctx, attackMargin)
	}
	end := time.Now()
	res.Seconds = end.Sub(start).Seconds()
	if err := l.exited(); err != nil {
		return nil, err
	}
	stopSampler()
	<-sampled
	cpu1 := make([]time.Duration, n)
	for i, pid := range pids {
		d := &res.Daemons[i]
		cpu1[i] = cpuTime(pid)
		d.CPUPct = 100 * (cpu1[i] - cpu0[i]).Seconds() / res.Seconds
		d.RSSEnd = currentRSS(pid)
		d.RSSPeak = max(d.RSSPeak, d.RSSEnd)
		d.DiskEnd, d.FilesEnd = duBytes(l.repos[i])
		all, fast := fsyncCounts(ctx, l.clients[i])
		d.Fsyncs = all - min(fsync0[i], all)
		d.FsyncsSlow = d.Fsyncs - min(fast-min(fast0[i], fast), d.Fsyncs)
	}
	honestIDs := slices.Clone(probes)
	for _, hs := range sent {
		honestIDs = append(honestIDs, hs.id)
	}
	for i, cl := range l.clients {
		events, err := attackerEventsAt(ctx, cl, honestIDs)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", lineNames[i], err)
		}
		res.Daemons[i].Events, res.Daemons[i].AttackerEvents = events.total, events.attacker
	}

	// The wait after the attack: late arrivals still count as delivered.
	attack.Pause(ctx, after)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res.AfterSeconds = time.Since(end).Seconds()
	for i, pid := range pids {
		d := &res.Daemons[i]
		d.RSSAfter = currentRSS(pid)
		d.DiskAfter, _ = duBytes(l.repos[i])
		if res.AfterSeconds > 0 {
			d.CPUAfterPct = 100 * (cpuTime(pid) - cpu1[i]).Seconds() / res.AfterSeconds
		}
	}
	if err := l.exited(); err != nil {
		return nil, err
	}
	res.Honest = honestFigures(sent, failed, arr, atB)
	return res, nil
}

// honestFigures works out what became of the honest events sent, from
// their arrivals at C (arr) and at B (atB).
func honestFigures(sent []honestSent, failed int, arr, atB *arrivals) gossipHonest {
	h := gossipHonest{Published: len(sent), PublishFailed: failed}
	var lat, add []time.Duration
	var slow []slowEvent
	var first time.Time
	for _, s := range sent {
		if first.IsZero() || s.at.Before(first) {
			first = s.at
		}
	}
	for _, s := range sent {
		add = append(add, s.add)
		t, ok := arr.at(s.id)
		if !ok {
			continue
		}
		d := max(t.Sub(s.at), 0)
		h.Delivered++
		if d <= deliveredWithin {
			h.Within++
		}
		lat = append(lat, d)
		e := slowEvent{AtSeconds: s.at.Sub(first).Seconds(), Ms: ms(d), AddMs: ms(s.add), BMs: -1}
		if tb, ok := atB.at(s.id); ok {
			e.BMs = ms(max(tb.Sub(s.at), 0))
		}
		slow = append(slow, e)
	}
	slices.SortFunc(slow, func(a, b slowEvent) int { return cmp.Compare(b.Ms, a.Ms) })
	h.Slowest = slow[:min(3, len(slow))]
	h.WithinPct, h.DeliveredPct = pctOf(h.Within, h.Published), pctOf(h.Delivered, h.Published)
	h.P50ms, h.P99ms = quantileMs(lat, 0.50), quantileMs(lat, 0.99)
	h.AddP99ms = quantileMs(add, 0.99)
	return h
}

// ms returns d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func pctOf(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// quantileMs is the q-quantile of ds in ms (0 for none).
func quantileMs(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[min(len(s)-1, int(q*float64(len(s))))]) / float64(time.Millisecond)
}

type eventCounts struct{ total, attacker uint64 }

// attackerEventsAt counts a daemon's events and, of those, the ones that
// are not honest (A's: each honest id looked up; A publishes nothing else,
// and B and C publish nothing).
func attackerEventsAt(ctx context.Context, cl *api.Client, honest []string) (eventCounts, error) {
	cctx, cancel := context.WithTimeout(ctx, devnet.CallTimeout)
	st, err := cl.Status(cctx)
	cancel()
	if err != nil {
		return eventCounts{}, err
	}
	var present uint64
	for _, id := range honest {
		cctx, cancel := context.WithTimeout(ctx, devnet.CallTimeout)
		_, err := cl.Event(cctx, id)
		cancel()
		switch {
		case err == nil:
			present++
		case errors.Is(err, api.ErrNotFound):
		default:
			return eventCounts{}, err
		}
	}
	return eventCounts{total: st.Events, attacker: st.Events - min(present, st.Events)}, nil
}

// duBytes is the disk space the files under dir take (allocated blocks,
// as du counts them), and the sum of their sizes.
func duBytes(dir string) (du, size uint64) {
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := d.Info(); err == nil {
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				du += uint64(st.Blocks) * 512
			}
			if info.Mode().IsRegular() {
				size += uint64(info.Size())
			}
		}
		return nil
	})
	return du, size
}

// threadsNiced counts the threads of pid at nice value nice, of all its
// threads (Linux; 0, 0 elsewhere).
func threadsNiced(pid, nice int) (niced, total int) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, 0
	}
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, t.Name()))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		// After the command name: state is field 3, nice field 19.
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 17 {
			continue
		}
		total++
		if v, err := strconv.Atoi(f[16]); err == nil && v == nice {
			niced++
		}
	}
	return niced, total
}

// gossipWorker is the attacker process of a scenario.
type gossipWorker struct {
	cmd     *exec.Cmd
	pid     int
	logPath string
	readyCh chan int
	done    chan struct{} // closed when the process has exited and its output is read
	err     error         // the process's exit error, once done
	stats   []byte        // its last line of output: the figures
}

// startGossipWorker starts `wats bench gossip-worker` against A and B at
// nice 19, its threads all included (startNiced).
func (c *cli) startGossipWorker(ctx context.Context, s gossipScenario, l *gossipLine, dir string, d time.Duration) (*gossipWorker, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	w := &gossipWorker{logPath: filepath.Join(dir, "attacker.log"), readyCh: make(chan int, 1), done: make(chan struct{})}
	logf, err := os.OpenFile(w.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	args := []string{"bench", "gossip-worker", "--attack", s.Attack, "--network", gossipBenchNetwork,
		"--target", l.addrs[0], "--target", l.addrs[1], "--duration", d.String(), "--ids", strconv.Itoa(s.IDs)}
	w.cmd = exec.Command(exe, args...)
	if l.an != nil {
		args = []string{"bench", "gossip-worker", "--attack", s.Attack, "--network", gossipBenchNetwork,
			"--target", l.netAddrs[0], "--target", l.netAddrs[1], "--duration", d.String(), "--ids", strconv.Itoa(s.IDs),
			"--source", strings.Join(l.an.sources, ",")}
		w.cmd = l.an.command(exe, args...)
	}
	w.cmd.Stderr = logf
	out, err := w.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	w.cmd.SysProcAttr = devnet.ProcAttr(true) // a group of its own; SIGTERM if this process dies
	if err := startNiced(w.cmd); err != nil {
		return nil, fmt.Errorf("start the attacker: %w", err)
	}
	w.pid = w.cmd.Process.Pid
	go func() {
		var last []byte
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			line := sc.Bytes()
			if v, ok := strings.CutPrefix(string(line), "ready "); ok {
				n, _ := strconv.Atoi(v)
				w.readyCh <- n
				continue
			}
			last = bytes.Clone(line)
		}
		_, _ = io.Copy(io.Discard, out)
		w.err = w.cmd.Wait()
		w.stats = last
		close(w.done)
	}()
	return w, nil
}

// ready waits for the worker's ids to be connected (workerReadyTimeout at
// most).
func (w *gossipWorker) ready(ctx context.Context) error {
	t := time.NewTimer(workerReadyTimeout)
	defer t.Stop()
	select {
	case <-w.readyCh:
		return nil
	case <-w.done:
		return fmt.Errorf("the attacker exited before it started (%v); the end of %s:\n%s", w.err, w.logPath, devnet.LogTail(w.logPath, 15))
	case <-t.C:
		return fmt.Errorf("the attacker did not start within %v; the end of %s:\n%s", workerReadyTimeout, w.logPath, devnet.LogTail(w.logPath, 15))
	case <-ctx.Done():
		return ctx.Err()
	}
}

// wait waits, at most timeout, for the worker to end and returns its
// figures.
func (w *gossipWorker) wait(ctx context.Context, timeout time.Duration) (*attack.GossipStats, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-w.done:
	case <-t.C:
		w.kill()
		return nil, fmt.Errorf("the attacker did not end within %v of its time; killed", timeout)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if w.err != nil {
		return nil, fmt.Errorf("attacker: %w; the end of %s:\n%s", w.err, w.logPath, devnet.LogTail(w.logPath, 15))
	}
	var st attack.GossipStats
	if err := json.Unmarshal(w.stats, &st); err != nil {
		return nil, fmt.Errorf("attacker's figures %q: %w", w.stats, err)
	}
	return &st, nil
}

// kill ends the worker if it still runs (its process group: SIGTERM, then
// SIGKILL after devnet.StopGrace) and waits for it.
func (w *gossipWorker) kill() {
	select {
	case <-w.done:
		return
	default:
	}
	devnet.SignalGroup(w.pid, syscall.SIGTERM)
	select {
	case <-w.done:
	case <-time.After(devnet.StopGrace):
		devnet.SignalGroup(w.pid, syscall.SIGKILL)
		<-w.done
	}
}

// benchGossipWorkerCmd is the attacker process of `bench gossip`: it
// prints "ready N" once its ids have connected (N of them to every
// target), attacks for --duration from then, and prints its figures as
// JSON.
func (c *cli) benchGossipWorkerCmd() *cobra.Command {
	var sources []string
	var (
		name     string
		targets  []string
		duration time.Duration
		o        attack.GossipOptions
	)
	cmd := &cobra.Command{
		Use:    "gossip-worker",
		Short:  "The attacker process of 'bench gossip' (prints its figures as JSON)",
		Hidden: true,
		Args:   noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ts, err := attack.ParseTargets(targets)
			if err != nil {
				return usageErrorf("%v", err)
			}
			for _, s := range sources {
				ip := net.ParseIP(s)
				if ip == nil {
					return usageErrorf("--source %q is not an IP address", s)
				}
				o.Sources = append(o.Sources, ip)
			}
			ctx, cancel := context.WithCancel(cmd.Context())
			defer cancel()
			var timer *time.Timer
			o.Ready = func(n int) {
				fmt.Fprintf(c.stdout, "ready %d\n", n)
				timer = time.AfterFunc(duration, cancel)
			}
			st, err := attack.GossipAttack(ctx, name, ts, o)
			if timer != nil {
				timer.Stop()
			}
			if err != nil {
				return err
			}
			return json.NewEncoder(c.stdout).Encode(st)
		},
	}
	cmd.Flags().StringVar(&name, "attack", "", "the attack: "+strings.Join(attack.GossipAttacks, ", "))
	cmd.Flags().StringArrayVar(&targets, "target", nil, "a daemon's full multiaddr (repeat for several)")
	cmd.Flags().StringVar(&o.Network, "network", "", "the daemons' network")
	cmd.Flags().DurationVar(&duration, "duration", 60*time.Second, "how long to attack once the ids are connected")
	cmd.Flags().IntVar(&o.IDs, "ids", 0, "attacker ids (0: the attack's default)")
	cmd.Flags().StringSliceVar(&sources, "source", nil, "local addresses the ids dial from, id i from the i-th (cycled)")
	return cmd
}
