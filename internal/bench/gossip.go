package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/internal/attack"
	"github.com/wats-network/wats/internal/devnet"
)

// GossipScenario is one row of `bench gossip`.
type GossipScenario struct {
	// Name is what --scenario calls it; Attack the gossip attack of
	// internal/attack ("" for none, the baseline); IDs the attacker's ids
	// (0: the attack's default).
	Name   string `json:"name"`
	Attack string `json:"attack"`
	IDs    int    `json:"ids,omitempty"`
	// Netns: the attacker ran in a network namespace, an address per id
	// (--netns).
	Netns bool `json:"netns,omitempty"`
	// Rate, if above 0, is the envelopes a second each id publishes, open
	// loop (attack.GossipOptions.Rate); Large and Hello shape them
	// (attack.GossipOptions.Large, .Hello).
	Rate  int  `json:"rate,omitempty"`
	Large bool `json:"large,omitempty"`
	Hello bool `json:"hello,omitempty"`
	// Also, if set, is a second gossip attack the same attacker process
	// runs at once, with AlsoIDs ids of its own.
	Also    string `json:"also,omitempty"`
	AlsoIDs int    `json:"also_ids,omitempty"`
	// HonestRate is the events A publishes a second (0: 2, one every
	// honestEvery).
	HonestRate int `json:"honest_rate,omitempty"`
	// Cold: no warm-up; A is a new author at B and C when the attack
	// starts, as in a network whose nodes all just started.
	Cold bool `json:"cold,omitempty"`
	// AuthorPerMin, if above 0, is limits.author_per_min of the daemons:
	// a publisher faster than the default (600 a minute) needs it raised
	// to go by gossip rather than by pull.
	AuthorPerMin int `json:"author_per_min,omitempty"`
}

// GossipScenarios are the scenarios of `bench gossip`, in order: the
// closed-loop attacks of ADR 0031, then the open-loop shapes of ADR 0041.
var GossipScenarios = []GossipScenario{
	{Name: "none"},
	{Name: "invalid-flood", Attack: attack.InvalidFlood, IDs: attack.DefaultGossipIDs},
	{Name: "valid-spam", Attack: attack.ValidSpam, IDs: attack.DefaultGossipIDs},
	{Name: "ihave-flood", Attack: attack.IHaveFlood, IDs: attack.DefaultGossipIDs},
	{Name: "mesh-sybil", Attack: attack.MeshSybil, IDs: attack.DefaultSybilIDs},
	{Name: "spam-50x20", Attack: attack.ValidSpam, IDs: 20, Rate: 50},
	{Name: "spam-200x20", Attack: attack.ValidSpam, IDs: 20, Rate: 200},
	{Name: "spam-1000x20", Attack: attack.ValidSpam, IDs: 20, Rate: 1000},
	{Name: "spam-50x100", Attack: attack.ValidSpam, IDs: 100, Rate: 50},
	{Name: "spam-200x100", Attack: attack.ValidSpam, IDs: 100, Rate: 200},
	{Name: "spam-1000x100", Attack: attack.ValidSpam, IDs: 100, Rate: 1000},
	{Name: "spam-large", Attack: attack.ValidSpam, IDs: 20, Rate: 50, Large: true},
	{Name: "spam-ihave", Attack: attack.ValidSpam, IDs: 20, Rate: 200, Also: attack.IHaveFlood, AlsoIDs: attack.DefaultGossipIDs},
	{Name: "spam-hello", Attack: attack.ValidSpam, IDs: 20, Rate: 200, Hello: true},
	{Name: "spam-honest50", Attack: attack.ValidSpam, IDs: 20, Rate: 200, HonestRate: 50},
	{Name: "spam-honest50-budget", Attack: attack.ValidSpam, IDs: 20, Rate: 200, HonestRate: 50, AuthorPerMin: 6000},
	{Name: "spam-cold", Attack: attack.ValidSpam, IDs: 20, Rate: 200, Cold: true},
	{Name: "cold", Cold: true},
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

// GossipDaemonResult is one daemon's figures in a scenario.
type GossipDaemonResult struct {
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
	// RSSAfterMemtables is the part of RSSAfter - RSSStart that pebble's
	// memtables account for (docs/adr/0042: events the node stored, held
	// in a cache of a bounded size), in bytes: their growth in
	// wats_db_memory_bytes, but no more than the anonymous memory that grew
	// beyond what the Go runtime's and the block cache did
	// (memtableGrowth).
	RSSAfterMemtables uint64 `json:"rss_after_memtables_bytes"`
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
	// Counters are the daemon's counters of what became of events during
	// the attack (counterNames; each series by its labels, as
	// /metrics writes it), what changed from the attack's start to its end.
	Counters map[string]float64 `json:"counters,omitempty"`
	// MemoryStart and MemoryAfter are where its memory was before the
	// attack and after the wait (memoryNames: the Go heap in use, its
	// objects, idle and the goal of its next collection, the goroutines and
	// their stacks, all the runtime holds from the OS; pebble's memtables
	// and block cache; rss_anon and rss_file, the
	// process's anonymous and file-backed resident pages), in bytes, beside
	// RSSStart and RSSAfter: what stayed is the flood's state or the data
	// it stored.
	MemoryStart map[string]float64 `json:"memory_start,omitempty"`
	MemoryAfter map[string]float64 `json:"memory_after,omitempty"`
}

// memtableGrowth is the part of the growth of anonymous memory from
// start to after that pebble's memtables account for, in bytes: the
// growth of what they hold (wats_db_memory_bytes{what="memtables"}, the
// arenas' sizes, of which only the part written to is resident), but no
// more than the anonymous memory that grew beyond the Go runtime's own
// (heap spans in use and idle not returned, goroutine stacks) and
// pebble's block cache, so that whatever Go and the block cache hold
// counts against the attack.
func memtableGrowth(start, after map[string]float64) uint64 {
	const memtables, cache = `wats_db_memory_bytes{what="memtables"}`, `wats_db_memory_bytes{what="block_cache"}`
	goHeld := func(m map[string]float64) float64 {
		return m["go_memstats_heap_inuse_bytes"] + m["go_memstats_heap_idle_bytes"] -
			m["go_memstats_heap_released_bytes"] + m["go_memstats_stack_inuse_bytes"]
	}
	notGo := (after["rss_anon"] - start["rss_anon"]) - (goHeld(after) - goHeld(start)) -
		max(0, after[cache]-start[cache])
	return uint64(max(0, min(after[memtables]-start[memtables], notGo)))
}

// memory reads the daemon's memoryNames and its RssAnon and RssFile.
func memory(ctx context.Context, cl *api.Client, pid int) map[string]float64 {
	m := series(ctx, cl, memoryNames)
	if m == nil {
		m = map[string]float64{}
	}
	m["rss_anon"] = float64(procStatusKB(pid, "RssAnon:"))
	m["rss_file"] = float64(procStatusKB(pid, "RssFile:"))
	return m
}

// memoryNames are the gauges of GossipDaemonResult.MemoryStart and
// MemoryAfter.
var memoryNames = []string{"go_memstats_heap_inuse_bytes", "go_memstats_heap_alloc_bytes",
	"go_memstats_heap_idle_bytes", "go_memstats_heap_released_bytes", "go_memstats_next_gc_bytes",
	"go_memstats_stack_inuse_bytes", "go_memstats_sys_bytes", "go_goroutines", "wats_db_memory_bytes"}

// counterNames are the metrics GossipDaemonResult.Counters follows: where
// events went at a daemon (docs/adr/0041).
var counterNames = []string{
	"wats_events_stored_total", "wats_gossip_ignored_total", "wats_gossip_gaps_total",
	"wats_heads_announcements_total", "wats_heads_pulls_total", "wats_sync_client_refused_total",
	"wats_challenges_issued_total",
}

// counters reads the series of counterNames from a daemon's /metrics (none
// if it cannot).
func counters(ctx context.Context, cl *api.Client) map[string]float64 {
	return series(ctx, cl, counterNames)
}

// series reads the series of the metrics names from a daemon's /metrics
// (none if it cannot), each by its labels as /metrics writes it.
func series(ctx context.Context, cl *api.Client, names []string) map[string]float64 {
	cctx, cancel := context.WithTimeout(ctx, devnet.CallTimeout)
	defer cancel()
	text, err := cl.Metrics(cctx)
	if err != nil {
		return nil
	}
	out := map[string]float64{}
	for line := range strings.Lines(text) {
		series, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || strings.HasPrefix(series, "#") {
			continue
		}
		name, _, _ := strings.Cut(series, "{")
		if !slices.Contains(names, name) {
			continue
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			out[series] = f
		}
	}
	return out
}

// keepHeapProfile writes the daemon's heap profile to path (go tool pprof
// reads it: where the memory left after an attack is held).
func keepHeapProfile(ctx context.Context, cl *api.Client, path string) error {
	cctx, cancel := context.WithTimeout(ctx, devnet.CallTimeout)
	defer cancel()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := cl.Profile(cctx, "heap", f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// counterDelta is end - start, series by series, leaving out those that
// did not change.
func counterDelta(start, end map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range end {
		if d := v - start[k]; d != 0 {
			out[k] = d
		}
	}
	return out
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

// GossipHonest is what became of A's honest events.
type GossipHonest struct {
	// Published counts the events A's API stored (PublishFailed the calls
	// that failed); Delivered those that reached C at all (before the end
	// of the wait after the attack), Within those within deliveredWithin
	// of the call that published them, Late the others delivered, and
	// NeverDelivered those that did not reach C by the end of the wait.
	Published      int     `json:"published"`
	PublishFailed  int     `json:"publish_failed"`
	Delivered      int     `json:"delivered"`
	Within         int     `json:"within_1s"`
	Late           int     `json:"late"`
	NeverDelivered int     `json:"never_delivered"`
	WithinPct      float64 `json:"within_1s_pct"`
	DeliveredPct   float64 `json:"delivered_pct"`
	// The same at B, A's direct neighbour.
	WithinB         int     `json:"within_1s_b"`
	NeverDeliveredB int     `json:"never_delivered_b"`
	WithinBPct      float64 `json:"within_1s_b_pct"`
	P99BMs          float64 `json:"p99_b_ms"`
	// P50ms and P99ms are the latencies of the delivered events, from the
	// call to A's API to the event's arrival on C's tail, in ms; AddP99ms
	// the p99 of the API call itself.
	P50ms    float64 `json:"p50_ms"`
	P99ms    float64 `json:"p99_ms"`
	AddP99ms float64 `json:"add_p99_ms"`
	// Slowest are the three slowest delivered events: when each was
	// published (seconds into the attack) and its latency, to tell a
	// start-up cost from a steady one.
	Slowest []SlowEvent `json:"slowest,omitempty"`
}

// SlowEvent is one of GossipHonest.Slowest: when it was published
// (seconds into the attack), its latency to C, and where the time went:
// A's API call (its durable write) and the arrival on B's tail, both in ms
// from the call's start (BMs is -1 if B's tail did not show it).
type SlowEvent struct {
	AtSeconds float64 `json:"at_seconds"`
	Ms        float64 `json:"ms"`
	AddMs     float64 `json:"add_ms"`
	BMs       float64 `json:"b_ms"`
}

// GossipResult is one scenario's figures.
type GossipResult struct {
	Scenario GossipScenario `json:"scenario"`
	Seconds  float64        `json:"seconds"` // the attack, from the attacker's start to its end
	// Trace is what became of the honest events late or never delivered
	// (GossipOptions.Trace), nil without.
	Trace        *TraceReport `json:"trace,omitempty"`
	AfterSeconds float64      `json:"after_seconds"` // the wait after it
	Honest       GossipHonest `json:"honest"`
	// Daemons are A, B and C.
	Daemons []GossipDaemonResult `json:"daemons"`
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

// traceFile is the gossipsub trace of the i-th daemon of a line in dir.
func traceFile(dir string, i int) string {
	return filepath.Join(dir, "trace-"+lineNames[i]+".json")
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
func startGossipLine(ctx context.Context, dir string, an *attackNet, traces bool, authorPerMin int) (_ *gossipLine, err error) {
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
		if authorPerMin > 0 {
			cfg.Limits.AuthorPerMin = authorPerMin
		}
		rdir := filepath.Join(dir, name)
		r, err := devnet.PrepareRepo(rdir, cfg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		logPath := filepath.Join(rdir, devnet.LogFileName)
		var env []string
		if traces {
			env = []string{"WATS_GOSSIP_TRACE=" + traceFile(dir, i)}
		}
		p, err := devnet.StartDaemonIn(nil, env, exe, rdir, logPath, i, true)
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
	id, err := api.EventID(raw)
	if err != nil {
		return honestSent{}, fmt.Errorf("events add answered %.100q", raw)
	}
	return honestSent{id: id, at: start, add: time.Since(start)}, nil
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

// GossipOptions are the settings of RunGossip but the scenario.
type GossipOptions struct {
	// Warmup is how long A publishes before the attack (so that A is an
	// established author at C: at least limits.new_author_minutes, 1m
	// here); Duration how long the attack runs, A publishing meanwhile;
	// After the wait after the attack before the last readings.
	Warmup, Duration, After time.Duration
	// Keep, if not "", keeps the scenario's repos, logs and the daemons'
	// heap profiles at the start and after the wait (heap-start-A.pb.gz,
	// heap-after-A.pb.gz, …) in Keep/NAME
	// (replacing what is there); else they are in a temporary directory
	// removed after.
	Keep string
	// Trace runs the daemons with gossipsub's trace (WATS_GOSSIP_TRACE,
	// one file each beside its repo) and reports, in GossipResult.Trace,
	// what became of each honest event not delivered within 1 s.
	Trace bool
	// Log gets a line for what the figures alone would not say (the
	// attacker's threads not all at nice 19). Required.
	Log func(format string, args ...any)
}

// RunGossip runs scenario s against a fresh line of three daemons (B
// bootstrapped to A, C to B), the attacker, if s has one, in a `wats bench
// gossip-worker` process of this binary at nice 19 (with s.Netns, in a
// network namespace of its own: root and the ip command). It fails if the
// daemons do not form the line, the mesh does not carry A's events to C
// within 1 s in 30 s, a daemon exits, the attacker fails, or ctx ends.
func RunGossip(ctx context.Context, s GossipScenario, o GossipOptions) (*GossipResult, error) {
	warmup, duration, after, keep := o.Warmup, o.Duration, o.After, o.Keep
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
		if s.Also != "" {
			n += s.AlsoIDs
		}
		if an, err = newAttackNet(n); err != nil {
			return nil, err
		}
		defer an.close()
	}
	l, err := startGossipLine(ctx, dir, an, o.Trace, s.AuthorPerMin)
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
	if s.Cold {
		warmup = 0
	}
	every := honestEvery
	if s.HonestRate > 0 {
		every = time.Second / time.Duration(s.HonestRate)
	}
	for tick := time.Now(); time.Since(tick) < warmup && ctx.Err() == nil; {
		hs, err := publishHonest(ctx, l.clients[0], -1000-len(probes))
		if err != nil {
			return nil, fmt.Errorf("A: events add: %w", err)
		}
		probes = append(probes, hs.id)
		attack.Pause(ctx, every)
	}

	res := &GossipResult{Scenario: s}
	n := len(l.procs)
	res.Daemons = make([]GossipDaemonResult, n)
	pids := make([]int, n)
	for i := range n {
		pids[i] = l.procs[i].PID()
		res.Daemons[i] = GossipDaemonResult{Name: lineNames[i], PeerID: l.ids[i],
			RSSStart: currentRSS(pids[i]), MemoryStart: memory(ctx, l.clients[i], pids[i])}
		res.Daemons[i].DiskStart, res.Daemons[i].FilesStart = duBytes(l.repos[i])
		if keep != "" {
			if err := keepHeapProfile(ctx, l.clients[i], filepath.Join(dir, "heap-start-"+lineNames[i]+".pb.gz")); err != nil {
				o.Log("%s: heap profile: %v", lineNames[i], err)
			}
		}
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
		if w, err = startGossipWorker(ctx, s, l, dir, duration+attackMargin); err != nil {
			return nil, err
		}
		defer w.kill()
		if err := w.ready(ctx); err != nil {
			return nil, err
		}
		res.AttackerNiced, res.AttackerThreads = threadsNiced(w.pid, 19)
		if res.AttackerNiced < res.AttackerThreads {
			o.Log("  warning: %d of the attacker's %d threads are not at nice 19", res.AttackerThreads-res.AttackerNiced, res.AttackerThreads)
		}
	}
	start := time.Now()
	cpu0 := make([]time.Duration, n)
	fsync0, fast0 := make([]uint64, n), make([]uint64, n)
	counts0 := make([]map[string]float64, n)
	for i, pid := range pids {
		cpu0[i] = cpuTime(pid)
		fsync0[i], fast0[i] = fsyncCounts(ctx, l.clients[i])
		counts0[i] = counters(ctx, l.clients[i])
	}

	// A's honest events, every 500 ms while the attack runs.
	var pmu sync.Mutex
	var sent []honestSent
	failed := 0
	var pwg sync.WaitGroup
	tick := time.NewTicker(every)
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
		d.Counters = counterDelta(counts0[i], counters(ctx, l.clients[i]))
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
		d.MemoryAfter = memory(ctx, l.clients[i], pid)
		d.RSSAfterMemtables = memtableGrowth(d.MemoryStart, d.MemoryAfter)
		if keep != "" {
			if err := keepHeapProfile(ctx, l.clients[i], filepath.Join(dir, "heap-after-"+lineNames[i]+".pb.gz")); err != nil {
				o.Log("%s: heap profile: %v", lineNames[i], err)
			}
		}
		d.DiskAfter, _ = duBytes(l.repos[i])
		if res.AfterSeconds > 0 {
			d.CPUAfterPct = 100 * (cpuTime(pid) - cpu1[i]).Seconds() / res.AfterSeconds
		}
	}
	if err := l.exited(); err != nil {
		return nil, err
	}
	res.Honest = honestFigures(sent, failed, arr, atB)
	if o.Trace {
		l.stop() // the traces flushed
		var paths [3]string
		var ids [3]peer.ID
		for i := range paths {
			paths[i] = traceFile(dir, i)
			if ids[i], err = peer.Decode(l.ids[i]); err != nil {
				return nil, err
			}
		}
		if res.Trace, err = traceReport(paths, ids, sent, atB, arr); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// honestFigures works out what became of the honest events sent, from
// their arrivals at C (arr) and at B (atB).
func honestFigures(sent []honestSent, failed int, arr, atB *arrivals) GossipHonest {
	h := GossipHonest{Published: len(sent), PublishFailed: failed}
	var lat, add []time.Duration
	var slow []SlowEvent
	var first time.Time
	for _, s := range sent {
		if first.IsZero() || s.at.Before(first) {
			first = s.at
		}
	}
	var latB []time.Duration
	for _, s := range sent {
		add = append(add, s.add)
		if tb, ok := atB.at(s.id); ok {
			d := max(tb.Sub(s.at), 0)
			latB = append(latB, d)
			if d <= deliveredWithin {
				h.WithinB++
			}
		} else {
			h.NeverDeliveredB++
		}
		t, ok := arr.at(s.id)
		if !ok {
			h.NeverDelivered++
			continue
		}
		d := max(t.Sub(s.at), 0)
		h.Delivered++
		if d <= deliveredWithin {
			h.Within++
		}
		lat = append(lat, d)
		e := SlowEvent{AtSeconds: s.at.Sub(first).Seconds(), Ms: ms(d), AddMs: ms(s.add), BMs: -1}
		if tb, ok := atB.at(s.id); ok {
			e.BMs = ms(max(tb.Sub(s.at), 0))
		}
		slow = append(slow, e)
	}
	slices.SortFunc(slow, func(a, b SlowEvent) int { return cmp.Compare(b.Ms, a.Ms) })
	h.Slowest = slow[:min(3, len(slow))]
	h.Late = h.Delivered - h.Within
	h.WithinPct, h.DeliveredPct = pctOf(h.Within, h.Published), pctOf(h.Delivered, h.Published)
	h.WithinBPct, h.P99BMs = pctOf(h.WithinB, h.Published), quantileMs(latB, 0.99)
	h.P50ms, h.P99ms = quantileMs(lat, 0.50), quantileMs(lat, 0.99)
	h.AddP99ms = quantileMs(add, 0.99)
	return h
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
func startGossipWorker(ctx context.Context, s GossipScenario, l *gossipLine, dir string, d time.Duration) (*gossipWorker, error) {
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
	// The flags of cmd/wats's `bench gossip-worker`, which calls
	// GossipWorker.
	targets, sources := l.addrs, []string(nil)
	if l.an != nil {
		targets, sources = l.netAddrs, []string{"--source", strings.Join(l.an.sources, ",")}
	}
	args := append([]string{"bench", "gossip-worker", "--attack", s.Attack, "--network", gossipBenchNetwork,
		"--target", targets[0], "--target", targets[1], "--duration", d.String(), "--ids", strconv.Itoa(s.IDs),
		"--rate", strconv.Itoa(s.Rate), "--large=" + strconv.FormatBool(s.Large), "--hello=" + strconv.FormatBool(s.Hello)},
		sources...)
	if s.Also != "" {
		args = append(args, "--also", s.Also, "--also-ids", strconv.Itoa(s.AlsoIDs))
	}
	w.cmd = exec.Command(exe, args...)
	if l.an != nil {
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

// GossipWorker is the attacker process of RunGossip (`wats bench
// gossip-worker`): it runs gossip attack name against targets with o and,
// if also is set, gossip attack also with alsoO at the same time (ids of
// its own); it writes "ready N" to w once the ids of both have connected
// (N of them to every target), attacks for duration from then, and writes
// its figures (attack.GossipStats, with the second attack's in Also) as
// one line of JSON. It sets the options' Ready.
func GossipWorker(ctx context.Context, name string, targets []peer.AddrInfo, o attack.GossipOptions,
	also string, alsoO attack.GossipOptions, duration time.Duration, w io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	attacks := 1
	if also != "" {
		attacks = 2
	}
	var (
		mu        sync.Mutex
		ready     int
		connected int
		timer     *time.Timer
	)
	onReady := func(n int) {
		mu.Lock()
		defer mu.Unlock()
		ready++
		connected += n
		if ready == attacks {
			fmt.Fprintf(w, "ready %d\n", connected)
			timer = time.AfterFunc(duration, cancel)
		}
	}
	o.Ready, alsoO.Ready = onReady, onReady
	var alsoSt attack.GossipStats
	var alsoErr error
	var wg sync.WaitGroup
	if also != "" {
		wg.Go(func() {
			alsoSt, alsoErr = attack.GossipAttack(ctx, also, targets, alsoO)
			if alsoErr != nil {
				cancel()
			}
		})
	}
	st, err := attack.GossipAttack(ctx, name, targets, o)
	cancel()
	wg.Wait()
	mu.Lock()
	if timer != nil {
		timer.Stop()
	}
	mu.Unlock()
	if err = cmp.Or(err, alsoErr); err != nil {
		return err
	}
	if also != "" {
		st.Also = &alsoSt
	}
	return json.NewEncoder(w).Encode(st)
}
