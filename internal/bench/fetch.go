package bench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
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
	// import, then the fetch.
	Measured func(FetchFigure)
}

// FetchFigure is one timed step of Fetch: Op is "import" or "fetch".
type FetchFigure struct {
	Op      string  `json:"op"`
	Bytes   uint64  `json:"bytes"`
	Seconds Seconds `json:"seconds"`
	MiBPerS float64 `json:"mib_per_s"`
}

// Fetch is `wats bench fetch`: it starts two daemons in a temporary
// directory (removed after), imports o.Size pseudo-random bytes into node0
// through its control API and times node1's fetch of the blob from node0
// over bitswap, through its API or by `blob get` to a file (o.Via). Both
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

	logf("node1 fetching it from node0 (%s)", via)
	cpu0, cpu1 := cpuTime(d.Daemon(0).PID()), cpuTime(d.Daemon(1).PID())
	start = time.Now()
	switch via {
	case ViaGet:
		if err := blobGet(ctx, d.State().Nodes[1].Repo, dir, bi, id.PeerID, res); err != nil {
			return nil, err
		}
	default:
		if err := dst.FetchBlob(ctx, api.FetchRequest{CID: bi.CID, Size: bi.Size, From: id.PeerID}, nil); err != nil {
			return nil, fmt.Errorf("node1: fetch: %w", err)
		}
		res.Fetch = Seconds(time.Since(start))
	}
	measured("fetch", time.Duration(res.Fetch))
	res.ProviderCPU = Seconds(cpuTime(d.Daemon(0).PID()) - cpu0)
	res.FetcherCPU = Seconds(cpuTime(d.Daemon(1).PID()) - cpu1)
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

// benchBlob is the blob of a bench fetch of size bytes: pseudo-random,
// the same for every run.
func benchBlob(size uint64) io.Reader {
	return io.LimitReader(rand.NewChaCha8([32]byte{'w', 'a', 't', 's'}), int64(size))
}

// blobGet runs `wats blob get` (this binary) on the node whose repo is
// repoDir for bi, from peer, into a file in dir, and records in res its
// time, CPU and peak RSS, once the file is checked against the blob.
func blobGet(ctx context.Context, repoDir, dir string, bi *api.BlobInfo, from string, res *FetchResult) error {
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
