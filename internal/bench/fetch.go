package bench

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/internal/devnet"
	"github.com/wats-network/wats/internal/humanize"
)

// FetchVia is how `bench fetch` has node1 fetch the blob.
type FetchVia string

const (
	// ViaAPI is node1's fetch through its control API (POST
	// /v1/blobs/fetch): the blob stored, nothing written out.
	ViaAPI FetchVia = "api"
	// ViaGet is `wats blob get CID -o FILE` run on node1, this binary in
	// a process of its own: the fetch and the file written, as an
	// operator gets a blob.
	ViaGet FetchVia = "get"
)

// FetchResult is what `bench fetch` measures.
type FetchResult struct {
	// Bytes is the blob's size, CID its CID, Transport the --transport
	// the daemons listened on (any, tcp or quic), Via how node1 fetched.
	Bytes     uint64   `json:"bytes"`
	CID       string   `json:"cid"`
	Transport string   `json:"transport"`
	Via       FetchVia `json:"via"`
	// Conns are node1's connections to node0 after the fetch (remote
	// multiaddrs): the transport the blob came over.
	Conns []string `json:"conns"`
	// Import is the time node0 took to store the blob, sent over its
	// control API; Fetch the time node1 took to fetch it from node0 (with
	// ViaGet, the time `blob get` took, to its file renamed).
	Import Seconds `json:"import_s"`
	Fetch  Seconds `json:"fetch_s"`
	// ImportMiBPerS and FetchMiBPerS are the same as rates, in MiB/s.
	ImportMiBPerS float64 `json:"import_mib_per_s"`
	FetchMiBPerS  float64 `json:"fetch_mib_per_s"`
	// PeakRSS are the daemons' peak resident sets (VmHWM, Linux only; 0
	// elsewhere), in bytes: node1 fetched, node0 served.
	FetcherPeakRSS  uint64 `json:"fetcher_peak_rss_bytes"`
	ProviderPeakRSS uint64 `json:"provider_peak_rss_bytes"`
	// FetcherCPU and ProviderCPU are the CPU time (user and system) each
	// daemon used during the fetch (Linux only; 0 elsewhere).
	FetcherCPU  Seconds `json:"fetcher_cpu_s"`
	ProviderCPU Seconds `json:"provider_cpu_s"`
	// With ViaGet: GetPeakRSS is the peak resident set of the `blob get`
	// process, GetCPU its CPU time; the file it wrote was checked against
	// the blob (size and SHA-256) before these were reported.
	GetPeakRSS uint64  `json:"get_peak_rss_bytes,omitempty"`
	GetCPU     Seconds `json:"get_cpu_s,omitempty"`
	// Rounds are the fetches one by one (FetchOptions.Rounds); Median is
	// the round whose figures are the ones above (the median ratio to the
	// ceiling, or the median rate without one).
	Rounds []FetchRound `json:"rounds"`
	Median int          `json:"median_round"`
	// With FetchOptions.Ceiling: the median round's transport ceiling in
	// MiB/s, its fetch's rate over it, and the lowest and highest ratio of
	// the rounds.
	CeilingMiBPerS      float64 `json:"ceiling_mib_per_s,omitempty"`
	FetchOverCeiling    float64 `json:"fetch_over_ceiling,omitempty"`
	FetchOverCeilingMin float64 `json:"fetch_over_ceiling_min,omitempty"`
	FetchOverCeilingMax float64 `json:"fetch_over_ceiling_max,omitempty"`
}

// FetchRound is one fetch of Fetch, and the transport ceiling timed next
// to it.
type FetchRound struct {
	Round        int     `json:"round"`
	Fetch        Seconds `json:"fetch_s"`
	FetchMiBPerS float64 `json:"fetch_mib_per_s"`
	FetcherCPU   Seconds `json:"fetcher_cpu_s"`
	ProviderCPU  Seconds `json:"provider_cpu_s"`
	GetPeakRSS   uint64  `json:"get_peak_rss_bytes,omitempty"`
	GetCPU       Seconds `json:"get_cpu_s,omitempty"`
	// Ceiling is the transport's stream of the round (nil without
	// FetchOptions.Ceiling); FetchOverCeiling is FetchMiBPerS over its
	// rate.
	Ceiling          *TransportFigure `json:"ceiling,omitempty"`
	FetchOverCeiling float64          `json:"fetch_over_ceiling,omitempty"`
}

// ceilingTransport is the transport the ceiling of a fetch over transport
// ("any", "tcp", "quic") is timed on: the daemons dial TCP first.
func ceilingTransport(transport string) string {
	if transport == "quic" {
		return "quic"
	}
	return "tcp"
}

// Seconds is a duration that encodes in JSON as a number of seconds.
type Seconds time.Duration

// MarshalJSON encodes s as seconds, with millisecond precision (1.236).
func (s Seconds) MarshalJSON() ([]byte, error) {
	return []byte(strconv.FormatFloat(time.Duration(s).Seconds(), 'f', 3, 64)), nil
}

// String formats s rounded to the millisecond, e.g. "1.236s".
func (s Seconds) String() string { return time.Duration(s).Round(time.Millisecond).String() }

// FetchOptions are the settings of Fetch.
type FetchOptions struct {
	// Size is the blob's size in bytes (1..2^53).
	Size uint64
	// Transport is what the daemons listen on: any (TCP and QUIC), tcp or
	// quic.
	Transport string
	// Via is how node1 fetches: through its API, or by `blob get` to a
	// file.
	Via FetchVia
	// Log, if set, gets a line of progress a step.
	Log func(format string, args ...any)
	// Measured, if set, gets each figure as soon as it is measured: the
	// import, then each round's fetch and ceiling.
	Measured func(FetchFigure)
	// Rounds is how many times node1 fetches the blob (removing it before
	// each fetch but the first); 0 means 1.
	Rounds int
	// Ceiling, if set, times in each round one libp2p stream of Size bytes
	// between two processes over the fetch's transport (StartCeiling; TCP
	// for Transport "any"), before the fetch in odd rounds and after it in
	// even ones, and reports the fetch's rate over the stream's.
	Ceiling bool
	// CPUProfileDir, if set, receives CPU profiles (pprof) of the first
	// round's fetch: node0.pprof and node1.pprof, each daemon's, taken
	// through its control API (GET /debug/pprof/profile) for
	// CPUProfileSeconds from just before the fetch starts. (The `blob
	// get` process of ViaGet passes its file to node1 and uses a few ms of
	// CPU: its CPU time is reported, FetchResult.GetCPU.)
	CPUProfileDir string
	// CPUProfileSeconds is how long the daemons' profiles run, whole
	// seconds; 0 means 5. It should cover the fetch.
	CPUProfileSeconds int
}

// FetchFigure is one timed step of Fetch: Op is "import", "fetch" or
// "ceiling" (the transport's, FetchOptions.Ceiling); Round is the round of
// a fetch or a ceiling, from 1.
type FetchFigure struct {
	Op      string  `json:"op"`
	Round   int     `json:"round,omitempty"`
	Bytes   uint64  `json:"bytes"`
	Seconds Seconds `json:"seconds"`
	MiBPerS float64 `json:"mib_per_s"`
}

// Fetch is `wats bench fetch`: it starts two daemons in a temporary
// directory (removed after), imports o.Size pseudo-random bytes into node0
// through its control API and times node1's fetch of the blob from node0,
// through its API or by `blob get` to a file (o.Via), o.Rounds times,
// each against the transport's ceiling if o.Ceiling. Both
// daemons' blobs.max_blob_bytes and blobs.quota_bytes are raised to the
// size.
func Fetch(ctx context.Context, o FetchOptions) (*FetchResult, error) {
	size, transport, via := o.Size, o.Transport, o.Via
	dir, err := os.MkdirTemp("", "wats-bench-fetch-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	logf := o.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	measured := func(op string, d time.Duration) {
		if o.Measured != nil {
			o.Measured(FetchFigure{Op: op, Bytes: size, Seconds: Seconds(d), MiBPerS: float64(size) / (1 << 20) / d.Seconds()})
		}
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
	res := &FetchResult{Bytes: size, Transport: transport, Via: via}

	logf("importing %s into node0", humanize.Bytes(size))
	start := time.Now()
	bi, err := src.AddBlob(ctx, benchBlob(size))
	if err != nil {
		return nil, fmt.Errorf("node0: blob add: %w", err)
	}
	res.Import, res.CID = Seconds(time.Since(start)), bi.CID
	measured("import", time.Duration(res.Import))
	id, err := src.ID(ctx)
	if err != nil {
		return nil, err
	}

	rounds := max(o.Rounds, 1)
	var ceil *Ceiling
	if o.Ceiling {
		if ceil, err = StartCeiling(ctx); err != nil {
			return nil, err
		}
		defer ceil.Close()
	}
	for r := 1; r <= rounds; r++ {
		if r > 1 {
			if err := dst.RemoveBlob(ctx, bi.CID); err != nil {
				return nil, fmt.Errorf("node1: blob rm before round %d: %w", r, err)
			}
		}
		round := FetchRound{Round: r}
		// The ceiling goes first in odd rounds, after the fetch in even
		// ones: a machine whose speed drifts moves both.
		ceilingFirst := r%2 == 1
		ceiling := func() error {
			if ceil == nil {
				return nil
			}
			logf("round %d: transport ceiling over %s", r, ceilingTransport(transport))
			f, err := ceil.Measure(ctx, ceilingTransport(transport), size)
			if err != nil {
				return fmt.Errorf("transport ceiling: %w", err)
			}
			round.Ceiling = &f
			if o.Measured != nil {
				o.Measured(FetchFigure{Op: "ceiling", Round: r, Bytes: size, Seconds: f.Seconds, MiBPerS: f.MiBPerS})
			}
			return nil
		}
		if ceilingFirst {
			if err := ceiling(); err != nil {
				return nil, err
			}
		}
		logf("round %d: node1 fetching it from node0 (%s)", r, via)
		profiled := func() error { return nil }
		if r == 1 {
			profiled = startProfiles(ctx, o, src, dst)
		}
		cpu0, cpu1 := cpuTime(d.Daemon(0).PID()), cpuTime(d.Daemon(1).PID())
		start = time.Now()
		switch via {
		case ViaGet:
			if err := blobGet(ctx, d.State().Nodes[1].Repo, dir, bi, id.PeerID, &round); err != nil {
				return nil, err
			}
		default:
			if err := dst.FetchBlob(ctx, api.FetchRequest{CID: bi.CID, Size: bi.Size, From: id.PeerID}, nil); err != nil {
				return nil, fmt.Errorf("node1: fetch: %w", err)
			}
			round.Fetch = Seconds(time.Since(start))
		}
		round.ProviderCPU = Seconds(cpuTime(d.Daemon(0).PID()) - cpu0)
		round.FetcherCPU = Seconds(cpuTime(d.Daemon(1).PID()) - cpu1)
		round.FetchMiBPerS = float64(size) / (1 << 20) / time.Duration(round.Fetch).Seconds()
		if o.Measured != nil {
			o.Measured(FetchFigure{Op: "fetch", Round: r, Bytes: size, Seconds: round.Fetch, MiBPerS: round.FetchMiBPerS})
		}
		if err := profiled(); err != nil {
			return nil, err
		}
		if !ceilingFirst {
			if err := ceiling(); err != nil {
				return nil, err
			}
		}
		if round.Ceiling != nil {
			round.FetchOverCeiling = round.FetchMiBPerS / round.Ceiling.MiBPerS
		}
		res.Rounds = append(res.Rounds, round)
	}
	// The run's figures are its median round's: by the ratio to the
	// ceiling when there is one, else by the fetch's rate.
	key := func(r FetchRound) float64 {
		if r.Ceiling != nil {
			return r.FetchOverCeiling
		}
		return r.FetchMiBPerS
	}
	sorted := slices.Clone(res.Rounds)
	slices.SortFunc(sorted, func(a, b FetchRound) int { return cmp.Compare(key(a), key(b)) })
	med := sorted[len(sorted)/2]
	res.Median = med.Round
	res.Fetch, res.FetchMiBPerS = med.Fetch, med.FetchMiBPerS
	res.FetcherCPU, res.ProviderCPU = med.FetcherCPU, med.ProviderCPU
	res.GetPeakRSS, res.GetCPU = med.GetPeakRSS, med.GetCPU
	if med.Ceiling != nil {
		res.CeilingMiBPerS, res.FetchOverCeiling = med.Ceiling.MiBPerS, med.FetchOverCeiling
		res.FetchOverCeilingMin, res.FetchOverCeilingMax = sorted[0].FetchOverCeiling, sorted[len(sorted)-1].FetchOverCeiling
	}
	res.ImportMiBPerS = float64(size) / (1 << 20) / time.Duration(res.Import).Seconds()
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

// benchBlob is the blob of a bench fetch of size bytes: pseudo-random,
// the same for every run.
func benchBlob(size uint64) io.Reader {
	return io.LimitReader(rand.NewChaCha8([32]byte{'w', 'a', 't', 's'}), int64(size))
}

// blobGet runs `wats blob get` (this binary) on the node whose repo is
// repoDir for bi, from peer, into a file in dir, and records in res its
// time, CPU and peak RSS, once the file is checked against the blob.
func blobGet(ctx context.Context, repoDir, dir string, bi *api.BlobInfo, from string, res *FetchRound) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	out := filepath.Join(dir, "got.bin")
	cmd := exec.CommandContext(ctx, exe, "blob", "get", bi.CID, "--size", strconv.FormatUint(bi.Size, 10),
		"--from", from, "-o", out, "--repo", repoDir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("node1: blob get: %w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	res.Fetch = Seconds(time.Since(start))
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		res.GetPeakRSS = uint64(ru.Maxrss) << 10 // KiB on Linux
	}
	res.GetCPU = Seconds(cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime())
	want := sha256.New()
	if _, err := io.Copy(want, benchBlob(bi.Size)); err != nil {
		return err
	}
	if err := checkFile(out, bi.Size, [32]byte(want.Sum(nil))); err != nil {
		return fmt.Errorf("node1: blob get: %w", err)
	}
	return os.Remove(out)
}

// startProfiles starts the CPU profiles of o.CPUProfileDir on both
// daemons (node0 src, node1 dst), if any, and returns what waits for them
// and writes them. The profile handler starts the profile as soon as the
// request reaches it; a short pause after the requests go out covers that.
func startProfiles(ctx context.Context, o FetchOptions, src, dst *api.Client) (wait func() error) {
	if o.CPUProfileDir == "" {
		return func() error { return nil }
	}
	secs := o.CPUProfileSeconds
	if secs <= 0 {
		secs = 5
	}
	q := url.Values{"seconds": {strconv.Itoa(secs)}}
	errs := make(chan error, 2)
	for i, c := range []*api.Client{src, dst} {
		go func() {
			var b bytes.Buffer
			if err := c.ProfileOf(ctx, "profile", q, &b); err != nil {
				errs <- fmt.Errorf("node%d: CPU profile: %w", i, err)
				return
			}
			errs <- os.WriteFile(filepath.Join(o.CPUProfileDir, fmt.Sprintf("node%d.pprof", i)), b.Bytes(), 0o644)
		}()
	}
	time.Sleep(200 * time.Millisecond) // the requests reach the daemons
	return func() error { return errors.Join(<-errs, <-errs) }
}
