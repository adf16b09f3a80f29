package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/internal/devnet"
	"github.com/wats-network/wats/internal/humanize"
	"github.com/wats-network/wats/node/api"
)

// fetchBenchResult is what `bench fetch` measures.
type fetchBenchResult struct {
	Bytes     uint64 `json:"bytes"`
	CID       string `json:"cid"`
	Transport string `json:"transport"`
	// Conns are node1's connections to node0 after the fetch (remote
	// multiaddrs): the transport the blob came over.
	Conns []string `json:"conns"`
	// Import is the time node0 took to store the blob, sent over its
	// control API; Fetch the time node1 took to fetch it from node0.
	Import        seconds `json:"import_s"`
	Fetch         seconds `json:"fetch_s"`
	ImportMiBPerS float64 `json:"import_mib_per_s"`
	FetchMiBPerS  float64 `json:"fetch_mib_per_s"`
	// PeakRSS are the daemons' peak resident sets (VmHWM, Linux only; 0
	// elsewhere), in bytes: node1 fetched, node0 served.
	FetcherPeakRSS  uint64 `json:"fetcher_peak_rss_bytes"`
	ProviderPeakRSS uint64 `json:"provider_peak_rss_bytes"`
	// FetcherCPU and ProviderCPU are the CPU time (user and system) each
	// daemon used during the fetch (Linux only; 0 elsewhere).
	FetcherCPU  seconds `json:"fetcher_cpu_s"`
	ProviderCPU seconds `json:"provider_cpu_s"`
}

// seconds is a duration that encodes in JSON as a number of seconds.
type seconds time.Duration

// MarshalJSON encodes s as seconds, with millisecond precision.
func (s seconds) MarshalJSON() ([]byte, error) {
	return []byte(strconv.FormatFloat(time.Duration(s).Seconds(), 'f', 3, 64)), nil
}

// String formats s rounded to the millisecond, e.g. "1.236s".
func (s seconds) String() string { return time.Duration(s).Round(time.Millisecond).String() }

func (c *cli) benchFetchCmd() *cobra.Command {
	var (
		size      uint64
		transport string
		jsonOut   bool
	)
	cmd := &cobra.Command{
		Use:   "fetch [--size BYTES] [--transport any|tcp|quic]",
		Short: "Time a blob's import into one daemon and its fetch by a second over bitswap",
		Long: `Start two daemons (real processes, as 'devnet up' does) in a temporary
directory, import a blob of --size pseudo-random bytes into node0 through its
control API, then time node1's fetch of it from node0 over bitswap (TCP or
QUIC on 127.0.0.1, the fetch rules of ADR 0014). Reports both rates in MiB/s
and each daemon's peak RSS (Linux). The nodes' blobs.max_blob_bytes is raised
to the size for the run.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if size < 1 || size > core.MaxSafeInt {
				return usageErrorf("--size %d: must be 1..2^53 bytes", size)
			}
			switch transport {
			case "any", "tcp", "quic":
			default:
				return usageErrorf("--transport %q: must be any, tcp or quic", transport)
			}
			res, err := c.benchFetch(cmd.Context(), size, transport, jsonOut)
			if err != nil {
				return err
			}
			if jsonOut {
				return c.printJSON(res)
			}
			fmt.Fprintf(c.stdout, "blob               %s (%s)\n", humanize.Bytes(res.Bytes), res.CID)
			fmt.Fprintf(c.stdout, "import (node0)     %v, %.0f MiB/s\n", res.Import, res.ImportMiBPerS)
			fmt.Fprintf(c.stdout, "fetch (node1)      %v, %.0f MiB/s over %s\n", res.Fetch, res.FetchMiBPerS, strings.Join(res.Conns, ", "))
			fmt.Fprintf(c.stdout, "CPU during fetch   node1 %v, node0 %v\n", res.FetcherCPU, res.ProviderCPU)
			fmt.Fprintf(c.stdout, "peak RSS fetcher   %s\n", rssString(res.FetcherPeakRSS))
			fmt.Fprintf(c.stdout, "peak RSS provider  %s\n", rssString(res.ProviderPeakRSS))
			return nil
		},
	}
	cmd.Flags().Uint64Var(&size, "size", 256<<20, "the blob's size in bytes")
	cmd.Flags().StringVar(&transport, "transport", "any", "the transports: any (TCP, then QUIC), tcp or quic")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the result as JSON")
	return cmd
}

func (c *cli) benchFetch(ctx context.Context, size uint64, transport string, quiet bool) (*fetchBenchResult, error) {
	dir, err := os.MkdirTemp("", "wats-bench-fetch-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	logf := c.progress
	if quiet {
		logf = func(string, ...any) {}
	}
	d, err := devnet.Start(ctx, devnet.Options{
		Dir: dir, Nodes: 2, Network: "wats-bench", Timeout: devnet.DefaultUpTimeout, Foreground: true, Log: logf,
		Config: func(cfg *config.Config) {
			cfg.Blobs.MaxBlobBytes = max(cfg.Blobs.MaxBlobBytes, int64(size))
			cfg.Blobs.QuotaBytes = max(cfg.Blobs.QuotaBytes, int64(size))
			cfg.Blobs.AutoFetch = false
			switch transport {
			case "tcp":
				cfg.P2P.Listen = []string{"/ip4/127.0.0.1/tcp/0"}
			case "quic":
				cfg.P2P.Listen = []string{"/ip4/127.0.0.1/udp/0/quic-v1"}
			}
		},
	})
	if err != nil {
		return nil, err
	}
	defer d.Stop()
	src, dst := d.Client(0), d.Client(1)
	res := &fetchBenchResult{Bytes: size, Transport: transport}

	logf("importing %s into node0", humanize.Bytes(size))
	start := time.Now()
	bi, err := src.AddBlob(ctx, io.LimitReader(rand.NewChaCha8([32]byte{'w', 'a', 't', 's'}), int64(size)))
	if err != nil {
		return nil, fmt.Errorf("node0: blob add: %w", err)
	}
	res.Import, res.CID = seconds(time.Since(start)), bi.CID
	id, err := src.ID(ctx)
	if err != nil {
		return nil, err
	}

	logf("node1 fetching it from node0")
	cpu0, cpu1 := cpuTime(d.Daemon(0).PID()), cpuTime(d.Daemon(1).PID())
	start = time.Now()
	if err := dst.FetchBlob(ctx, api.FetchRequest{CID: bi.CID, Size: bi.Size, From: id.PeerID}, nil); err != nil {
		return nil, fmt.Errorf("node1: fetch: %w", err)
	}
	res.Fetch = seconds(time.Since(start))
	res.ProviderCPU = seconds(cpuTime(d.Daemon(0).PID()) - cpu0)
	res.FetcherCPU = seconds(cpuTime(d.Daemon(1).PID()) - cpu1)
	mib := float64(size) / (1 << 20)
	res.ImportMiBPerS = mib / time.Duration(res.Import).Seconds()
	res.FetchMiBPerS = mib / time.Duration(res.Fetch).Seconds()
	if peers, err := dst.Peers(ctx); err == nil {
		for _, p := range peers {
			if p.PeerID == id.PeerID {
				res.Conns = p.Addrs
			}
		}
	}
	res.ProviderPeakRSS = peakRSS(d.Daemon(0).PID())
	res.FetcherPeakRSS = peakRSS(d.Daemon(1).PID())
	return res, nil
}

// peakRSS returns a process's peak resident set in bytes (VmHWM in
// /proc/PID/status), or 0 where that is not available.
func peakRSS(pid int) uint64 { return procStatusKB(pid, "VmHWM:") }

func rssString(n uint64) string {
	if n == 0 {
		return "n/a (Linux only)"
	}
	return humanize.Bytes(n)
}

// cpuTime returns the user and system CPU time a process has used
// (/proc/PID/stat, in clock ticks of 10 ms), or 0 where that is not
// available.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name (in parentheses, which may hold
	// spaces): state is field 3, utime 14 and stime 15.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	s, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(u+s) * 10 * time.Millisecond
}
