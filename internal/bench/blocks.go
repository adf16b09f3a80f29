package bench

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/internal/attack"
	"github.com/wats-network/wats/internal/devnet"
)

// BlocksScenario is one row of `bench fetch --attack`: an attack on the
// block transfer of the node an honest peer fetches from (docs/adr/0056).
type BlocksScenario struct {
	// Name is what --attack calls it; Attack the attack of internal/attack
	// ("" for none, the baseline).
	Name   string `json:"name"`
	Attack string `json:"attack"`
	// IDs is the attacker's ids, Rate the fresh ids a second of a Sybil
	// attack.
	IDs  int `json:"ids,omitempty"`
	Rate int `json:"rate,omitempty"`
	// Netns: the attacker ran in a network namespace, its ids dialling
	// from addresses of their own (--netns).
	Netns bool `json:"netns,omitempty"`
}

// BlocksScenarios are the block transfer's attack scenarios, in order: the
// baseline first.
var BlocksScenarios = []BlocksScenario{
	{Name: "none"},
	{Name: "blocks-flood-open-1", Attack: attack.BlocksFloodOpen, IDs: 1},
	{Name: "blocks-flood-open-8", Attack: attack.BlocksFloodOpen, IDs: 8},
	{Name: "blocks-flood-closed-1", Attack: attack.BlocksFloodClosed, IDs: 1},
	{Name: "blocks-flood-closed-8", Attack: attack.BlocksFloodClosed, IDs: 8},
	{Name: "blocks-max-1", Attack: attack.BlocksMax, IDs: 1},
	{Name: "blocks-max-8", Attack: attack.BlocksMax, IDs: 8},
	{Name: "blocks-sybil-20", Attack: attack.BlocksSybil, Rate: 20},
	{Name: "blocks-sybil-200", Attack: attack.BlocksSybil, Rate: 200},
}

// BlocksAttackBlob is the size of the blob the attackers ask for: 256 MiB.
const BlocksAttackBlob = 256 << 20

// BlocksOptions are the settings of RunBlocks.
type BlocksOptions struct {
	// Size is the honest blob's size in bytes.
	Size uint64
	// Duration is how long the attack is measured (the honest fetches
	// start within it).
	Duration time.Duration
	// LateAfter is the time past which an honest fetch is late: twice the
	// baseline's median, from the same run. 0: twice this scenario's
	// warm-up fetch.
	LateAfter time.Duration
	// Log, if set, gets a line of progress a step.
	Log func(format string, args ...any)
}

// HonestFetch is one `blob get` of the honest peer during an attack.
type HonestFetch struct {
	// At is when it started, from the attack's start; Seconds how long it
	// took (to its failure, if it failed).
	At      Seconds `json:"at_s"`
	Seconds Seconds `json:"seconds"`
	// Err is why it failed ("" if the file was written and checked).
	Err string `json:"err,omitempty"`
}

// BlocksResult is one scenario's figures.
type BlocksResult struct {
	Scenario BlocksScenario `json:"scenario"`
	// Seconds is how long the honest peer was measured.
	Seconds float64 `json:"seconds"`
	// Fetches are the honest peer's gets; Delivered, Late and Never count
	// them: in time, later than LateAfter, and never delivered (failed,
	// or still unfinished FetchDeadline after they started).
	Fetches   []HonestFetch `json:"fetches"`
	Delivered int           `json:"delivered"`
	Late      int           `json:"late"`
	Never     int           `json:"never"`
	LateAfter Seconds       `json:"late_after_s"`
	// HonestBytes are the bytes the honest gets delivered, HonestMiBPerS
	// the same over Seconds; MedianFetch and MaxFetch the delivered gets'
	// median and longest time.
	HonestBytes   uint64  `json:"honest_bytes"`
	HonestMiBPerS float64 `json:"honest_mib_per_s"`
	MedianFetch   Seconds `json:"median_fetch_s"`
	MaxFetch      Seconds `json:"max_fetch_s"`
	// The provider's (the attacked daemon's) resident set at the start,
	// its highest sample and at the end, in bytes (Linux), and its CPU in
	// percent of one core.
	RSSStart uint64  `json:"rss_start_bytes"`
	RSSPeak  uint64  `json:"rss_peak_bytes"`
	RSSEnd   uint64  `json:"rss_end_bytes"`
	CPUPct   float64 `json:"cpu_pct"`
	LogLines int     `json:"log_lines"`
	// Attacker is what the attacker process did.
	Attacker attack.Stats `json:"attacker"`
}

// FetchDeadline is how long an honest get may take before it counts as
// never delivered: ADR 0014's bound of a fetch, 120 s in all.
const FetchDeadline = 120 * time.Second

// blocksRamp is how long the attacker runs before the honest peer is
// measured: the scout lists the blob's blocks, the ids connect.
const blocksRamp = 3 * time.Second

// attackBlob is the blob the attackers ask for: pseudo-random, of another
// seed than benchBlob, so that it shares no block with the honest one.
func attackBlob(size uint64) io.Reader {
	return io.LimitReader(rand.NewChaCha8([32]byte{'a', 't', 't', 'a', 'c', 'k'}), int64(size))
}

// RunBlocks runs scenario s: two daemons in a temporary directory (removed
// after); node0 holds the honest blob (o.Size bytes) and a blob of
// BlocksAttackBlob bytes; the attacker (if s has one), a `wats bench
// attack-worker` process of this binary at nice 19, attacks node0's block
// transfer with the second, and node1 gets the first from node0 by `wats
// blob get` (this binary), again and again, removing it after each, for
// o.Duration. The attacker starts blocksRamp before the honest gets.
func RunBlocks(ctx context.Context, s BlocksScenario, o BlocksOptions) (*BlocksResult, error) {
	logf := o.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	dir, err := os.MkdirTemp("", "wats-bench-blocks-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var an *attackNet
	if s.Netns && s.Attack != "" {
		n := max(s.IDs, 16)
		if s.Rate > 1 {
			n = min(4*s.Rate, 4096)
		}
		if an, err = newAttackNet(n); err != nil {
			return nil, err
		}
		defer an.close()
	}
	size := max(o.Size, BlocksAttackBlob)
	d, err := devnet.Start(ctx, devnet.Options{
		Dir: dir, Nodes: 2, Network: "wats-bench", Timeout: devnet.DefaultUpTimeout, Foreground: true, Log: func(string, ...any) {},
		Config: func(cfg *config.Config) {
			cfg.Blobs.MaxBlobBytes = max(cfg.Blobs.MaxBlobBytes, int64(size))
			cfg.Blobs.QuotaBytes = max(cfg.Blobs.QuotaBytes, int64(o.Size+BlocksAttackBlob))
			cfg.Blobs.AutoFetch = false
			cfg.P2P.Listen = []string{"/ip4/127.0.0.1/tcp/0"}
			if an != nil { // the attacker's side of the namespace's veth
				cfg.P2P.Listen = append(cfg.P2P.Listen, "/ip4/"+an.hostIP+"/tcp/0")
			}
		},
	})
	if err != nil {
		return nil, err
	}
	defer d.Stop()
	src, dst := d.Client(0), d.Client(1)
	logf("  importing the honest blob and the attacked one into node0")
	honest, err := src.AddBlob(ctx, benchBlob(o.Size))
	if err != nil {
		return nil, fmt.Errorf("node0: blob add: %w", err)
	}
	target, err := src.AddBlob(ctx, attackBlob(BlocksAttackBlob))
	if err != nil {
		return nil, fmt.Errorf("node0: blob add: %w", err)
	}
	id, err := src.ID(ctx)
	if err != nil {
		return nil, err
	}
	repo1 := d.State().Nodes[1].Repo
	get := func() HonestFetch {
		var r FetchRound
		start := time.Now()
		gctx, cancel := context.WithTimeout(ctx, FetchDeadline)
		defer cancel()
		err := blobGet(gctx, repo1, dir, honest, id.PeerID, &r)
		f := HonestFetch{Seconds: Seconds(time.Since(start))}
		if err != nil {
			f.Err = err.Error()
		}
		_ = dst.RemoveBlob(ctx, honest.CID)
		return f
	}
	warm := get() // the honest peer has said hello; the blob is in the page cache
	if warm.Err != "" {
		return nil, fmt.Errorf("warm-up: %s", warm.Err)
	}
	res := &BlocksResult{Scenario: s, LateAfter: Seconds(o.LateAfter)}
	if res.LateAfter == 0 {
		res.LateAfter = 2 * warm.Seconds
	}

	pid := d.Daemon(0).PID()
	logPath := d.State().Nodes[0].Log
	res.RSSStart = currentRSS(pid)
	lines0, cpu0, t0 := countLines(logPath), cpuTime(pid), time.Now()
	var worker *exec.Cmd
	var workerOut bytes.Buffer
	if s.Attack != "" {
		t, err := blocksTarget(d, id.PeerID, an)
		if err != nil {
			return nil, err
		}
		// It runs until interrupted, the duration a bound in case it is
		// not.
		var args []string
		if worker, args, err = startAttacker(t, s.Attack, o.Duration+blocksRamp+FetchDeadline, s.IDs, s.Rate, target.CID, an, &workerOut); err != nil {
			return nil, err
		}
		defer func() {
			if worker.ProcessState == nil {
				_ = worker.Process.Kill()
				_ = worker.Wait()
			}
		}()
		logf("  attacker started: %s", strings.Join(args[2:], " "))
		select {
		case <-time.After(blocksRamp):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}

	sctx, stopSampling := context.WithCancel(ctx)
	peak := samplePeakRSS(sctx, pid)
	start := time.Now()
	for time.Since(start) < o.Duration && ctx.Err() == nil {
		at := time.Since(start)
		f := get()
		f.At = Seconds(at)
		res.Fetches = append(res.Fetches, f)
		logf("  honest get %d: %v %s", len(res.Fetches), f.Seconds, f.Err)
		if f.Err != "" {
			// A failed get backs node0 off at node1 (ADR 0014): the next
			// fails at once, so wait a moment rather than spin.
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
			}
		}
	}
	res.Seconds = time.Since(start).Seconds()
	stopSampling()
	res.CPUPct = 100 * (cpuTime(pid) - cpu0).Seconds() / time.Since(t0).Seconds()
	res.RSSPeak, res.RSSEnd = peak(), currentRSS(pid)
	res.LogLines = countLines(logPath) - lines0
	var times []Seconds
	for _, f := range res.Fetches {
		switch {
		case f.Err != "":
			res.Never++
		case f.Seconds > res.LateAfter:
			res.Late++
		default:
			res.Delivered++
		}
		if f.Err == "" {
			res.HonestBytes += honest.Size
			times = append(times, f.Seconds)
		}
	}
	if len(times) > 0 {
		slices.SortFunc(times, cmp.Compare)
		res.MedianFetch, res.MaxFetch = times[len(times)/2], times[len(times)-1]
	}
	res.HonestMiBPerS = float64(res.HonestBytes) / (1 << 20) / res.Seconds
	if worker != nil {
		_ = worker.Process.Signal(os.Interrupt)
		if err := worker.Wait(); err != nil {
			return nil, fmt.Errorf("attacker: %w", err)
		}
		if err := json.Unmarshal(workerOut.Bytes(), &res.Attacker); err != nil {
			return nil, fmt.Errorf("attacker's figures %q: %w", workerOut.String(), err)
		}
	}
	return res, nil
}

// blocksTarget is node0 (peer) as the attacker dials it: at its 127.0.0.1
// address, or at its address on the namespace's veth.
func blocksTarget(d *devnet.Network, peer string, an *attackNet) (attack.Target, error) {
	prefix := "/ip4/127.0.0.1/tcp/"
	if an != nil {
		prefix = "/ip4/" + an.hostIP + "/tcp/"
	}
	for _, a := range d.State().Nodes[0].Addrs {
		if strings.HasPrefix(a, prefix) {
			return attack.ParseTarget(a, d.State().Network)
		}
	}
	return attack.Target{}, fmt.Errorf("node0 (%s) has no address %s…: %v", peer, prefix, d.State().Nodes[0].Addrs)
}
