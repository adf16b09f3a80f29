package bench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/internal/devnet"
	"github.com/wats-network/wats/internal/humanize"
)

// VsIPFSOptions are the settings of VsIPFS.
type VsIPFSOptions struct {
	// IPFS is the path of a kubo binary (built from the ipfs/kubo source:
	// go build ./cmd/ipfs). Required.
	IPFS string
	// Wats is the path of the wats binary whose CLI imports and fetches;
	// its daemons are devnet.Start's (this process's executable).
	Wats string
	// Size is each round's file, in bytes (1..2^53); Rounds how many
	// rounds (at least 1).
	Size   uint64
	Rounds int
	// Transport is what the four daemons listen on: tcp or quic.
	Transport string
	// Dir holds the daemons' repos and the files; it must exist and is
	// left as it is (the caller removes it).
	Dir string
	// Measured, if set, gets each figure as soon as it is measured, in
	// the order measured.
	Measured func(VsIPFSFigure)
	// Log, if set, gets a line of progress now and then.
	Log func(format string, args ...any)
}

// VsIPFSFigure is one timed operation of VsIPFS: one import or one fetch
// by one implementation in one round.
type VsIPFSFigure struct {
	// Round counts from 1; Impl is "kubo" or "wats"; Op is "import" (the
	// provider's CLI adds the file) or "fetch" (the other daemon's CLI
	// fetches it from the provider and writes it to a file).
	Round int    `json:"round"`
	Impl  string `json:"impl"`
	Op    string `json:"op"`
	// Bytes is the file's size; Seconds the wall time of the CLI command;
	// MiBPerS the rate, in MiB/s.
	Bytes   uint64  `json:"bytes"`
	Seconds Seconds `json:"seconds"`
	MiBPerS float64 `json:"mib_per_s"`
	// CID is the blob's CID, as the import printed it.
	CID string `json:"cid"`
}

// VsIPFSSide is one implementation's summary: the medians of its rounds
// and its daemons' peak resident sets.
type VsIPFSSide struct {
	// ImportMiBPerS and FetchMiBPerS are the medians over the rounds, in
	// MiB/s.
	ImportMiBPerS float64 `json:"import_mib_per_s"`
	FetchMiBPerS  float64 `json:"fetch_mib_per_s"`
	// ProviderPeakRSS and FetcherPeakRSS are the peak resident sets
	// (VmHWM) of the daemon that imported and served, and of the one that
	// fetched, over the whole run, in bytes (0 where /proc has none).
	ProviderPeakRSS uint64 `json:"provider_peak_rss_bytes"`
	FetcherPeakRSS  uint64 `json:"fetcher_peak_rss_bytes"`
}

// VsIPFSResult is what VsIPFS measured.
type VsIPFSResult struct {
	Bytes     uint64 `json:"bytes"`
	Rounds    int    `json:"rounds"`
	Transport string `json:"transport"`
	// KuboVersion is what `ipfs version` printed.
	KuboVersion string         `json:"kubo_version"`
	Figures     []VsIPFSFigure `json:"figures"`
	Kubo        VsIPFSSide     `json:"kubo"`
	Wats        VsIPFSSide     `json:"wats"`
	// Ratios are wats over kubo: above 1, wats is faster (rates) or
	// bigger (resident sets).
	Ratios VsIPFSRatios `json:"ratios"`
}

// VsIPFSRatios are the wats / kubo ratios of VsIPFSResult.
type VsIPFSRatios struct {
	Import      float64 `json:"import"`
	Fetch       float64 `json:"fetch"`
	ProviderRSS float64 `json:"provider_rss"`
	FetcherRSS  float64 `json:"fetcher_rss"`
}

// ErrNoKubo is returned by VsIPFS when no kubo binary is given.
var ErrNoKubo = errors.New("bench: no kubo binary given (--ipfs PATH); build one from the ipfs/kubo source: go build -o /tmp/ipfs ./cmd/ipfs")

// kuboAddArgs are the options of `ipfs add` that make kubo's blob the one
// wats makes of the same file (CIDv1, raw leaves, BLAKE3, 1 MiB chunks:
// docs/design.md §9), so that both import and move the same DAG.
var kuboAddArgs = []string{"add", "-Q", "--cid-version=1", "--raw-leaves", "--hash=blake3", "--chunker=size-1048576"}

// VsIPFS is `wats bench vs-ipfs`: kubo against wats on this machine, in
// the same run. It starts two kubo daemons and two wats daemons on
// 127.0.0.1 (each pair connected), then, each round, writes a fresh
// pseudo-random file of o.Size bytes and, for each implementation in turn
// (kubo first in odd rounds, wats first in even ones), times the import
// of the file through the CLI into the first daemon (`ipfs add` with
// kuboAddArgs against `wats blob add`) and the fetch of it through the CLI
// of the second, written to a file (`ipfs cat CID > f` against
// `wats blob get CID --size N --from ADDR -o f`). Each fetched file is
// checked against the original, both CIDs must be one (the same DAG moved
// on both sides), and the blob is removed from both daemons after the
// round (untimed). It returns the medians, the ratios and each
// daemon's peak RSS; every figure also goes to o.Measured as it comes.
func VsIPFS(ctx context.Context, o VsIPFSOptions) (*VsIPFSResult, error) {
	if o.IPFS == "" {
		return nil, ErrNoKubo
	}
	logf := o.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	version, err := kuboVersion(ctx, o.IPFS)
	if err != nil {
		return nil, err
	}
	res := &VsIPFSResult{Bytes: o.Size, Rounds: o.Rounds, Transport: o.Transport, KuboVersion: version}

	logf("starting two kubo daemons (%s)", version)
	kubos := make([]*kuboDaemon, 2)
	defer func() {
		for _, k := range kubos {
			if k != nil {
				k.stop()
			}
		}
	}()
	for i := range kubos {
		if kubos[i], err = startKubo(ctx, o.IPFS, filepath.Join(o.Dir, fmt.Sprintf("kubo%d", i)), o.Transport); err != nil {
			return nil, err
		}
	}
	if _, err := kubos[1].run(ctx, nil, "swarm", "connect", kubos[0].addr); err != nil {
		return nil, fmt.Errorf("kubo1: swarm connect kubo0: %w", err)
	}

	logf("starting two wats daemons")
	d, err := devnet.Start(ctx, devnet.Options{
		Dir: filepath.Join(o.Dir, "wats"), Nodes: 2, Network: "wats-bench", Timeout: devnet.DefaultUpTimeout, Foreground: true, Log: logf,
		Config: func(cfg *config.Config) {
			cfg.Blobs.MaxBlobBytes = max(cfg.Blobs.MaxBlobBytes, int64(o.Size))
			cfg.Blobs.QuotaBytes = max(cfg.Blobs.QuotaBytes, int64(o.Size))
			cfg.Blobs.AutoFetch = false
			cfg.P2P.Listen = []string{transportListen(o.Transport)}
		},
	})
	if err != nil {
		return nil, err
	}
	defer d.Stop()
	w := &watsPair{exe: o.Wats, repos: [2]string{d.State().Nodes[0].Repo, d.State().Nodes[1].Repo}}
	if w.from, err = firstAddr(d.State().Nodes[0].Addrs); err != nil {
		return nil, err
	}

	pairs := map[string]pair{"kubo": kuboPair(kubos), "wats": w}
	src := filepath.Join(o.Dir, "blob.bin")
	got := filepath.Join(o.Dir, "got.bin")
	for round := 1; round <= o.Rounds; round++ {
		sum, err := writeRandomFile(src, o.Size, uint64(round))
		if err != nil {
			return nil, err
		}
		order := []string{"kubo", "wats"}
		if round%2 == 0 {
			slices.Reverse(order)
		}
		cids := map[string]string{}
		for _, impl := range order {
			logf("round %d/%d: %s", round, o.Rounds, impl)
			p := pairs[impl]
			start := time.Now()
			cid, err := p.add(ctx, src)
			if err != nil {
				return nil, fmt.Errorf("round %d: %s import: %w", round, impl, err)
			}
			res.add(o, VsIPFSFigure{Round: round, Impl: impl, Op: "import", Bytes: o.Size, Seconds: Seconds(time.Since(start)), CID: cid})
			start = time.Now()
			if err := p.get(ctx, cid, o.Size, got); err != nil {
				return nil, fmt.Errorf("round %d: %s fetch: %w", round, impl, err)
			}
			res.add(o, VsIPFSFigure{Round: round, Impl: impl, Op: "fetch", Bytes: o.Size, Seconds: Seconds(time.Since(start)), CID: cid})
			if err := checkFile(got, o.Size, sum); err != nil {
				return nil, fmt.Errorf("round %d: %s fetched a wrong file: %w", round, impl, err)
			}
			p.remove(ctx, cid)
			os.Remove(got)
			cids[impl] = cid
		}
		if cids["kubo"] != cids["wats"] {
			// kuboAddArgs make kubo build the DAG wats builds: both sides
			// moved the same blocks, or the comparison is not fair.
			return nil, fmt.Errorf("round %d: kubo and wats made different DAGs of one file: %s against %s", round, cids["kubo"], cids["wats"])
		}
	}
	res.Kubo = side(res.Figures, "kubo", kubos[0].pid(), kubos[1].pid())
	res.Wats = side(res.Figures, "wats", d.Daemon(0).PID(), d.Daemon(1).PID())
	res.Ratios = VsIPFSRatios{
		Import:      ratio(res.Wats.ImportMiBPerS, res.Kubo.ImportMiBPerS),
		Fetch:       ratio(res.Wats.FetchMiBPerS, res.Kubo.FetchMiBPerS),
		ProviderRSS: ratio(float64(res.Wats.ProviderPeakRSS), float64(res.Kubo.ProviderPeakRSS)),
		FetcherRSS:  ratio(float64(res.Wats.FetcherPeakRSS), float64(res.Kubo.FetcherPeakRSS)),
	}
	return res, nil
}

// pair is one implementation's two daemons, driven through its CLI: the
// provider imports, the fetcher fetches from it.
type pair interface {
	// add imports the file path into the provider; it returns the CID.
	add(ctx context.Context, path string) (string, error)
	// get has the fetcher fetch cid (size bytes) from the provider and
	// write it to the file path.
	get(ctx context.Context, cid string, size uint64, path string) error
	// remove removes cid from both daemons (untimed; errors ignored).
	remove(ctx context.Context, cid string)
}

// add completes f's rate, keeps it and hands it to o.Measured.
func (r *VsIPFSResult) add(o VsIPFSOptions, f VsIPFSFigure) {
	f.MiBPerS = float64(f.Bytes) / (1 << 20) / time.Duration(f.Seconds).Seconds()
	r.Figures = append(r.Figures, f)
	if o.Measured != nil {
		o.Measured(f)
	}
}

// side is impl's summary: the medians of its figures and the peak RSS of
// its provider and fetcher daemons.
func side(fs []VsIPFSFigure, impl string, provider, fetcher int) VsIPFSSide {
	rates := func(op string) []float64 {
		var out []float64
		for _, f := range fs {
			if f.Impl == impl && f.Op == op {
				out = append(out, f.MiBPerS)
			}
		}
		return out
	}
	return VsIPFSSide{
		ImportMiBPerS:   median(rates("import")),
		FetchMiBPerS:    median(rates("fetch")),
		ProviderPeakRSS: peakRSS(provider),
		FetcherPeakRSS:  peakRSS(fetcher),
	}
}

// median is the median of xs (the mean of the middle two for an even
// count), 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// ratio is a/b, 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// transportListen is a daemon's listen address for transport (tcp or
// quic) on 127.0.0.1, port chosen by the kernel.
func transportListen(transport string) string {
	if transport == "quic" {
		return "/ip4/127.0.0.1/udp/0/quic-v1"
	}
	return "/ip4/127.0.0.1/tcp/0"
}

// firstAddr is the first of a node's full multiaddrs (with /p2p/).
func firstAddr(addrs []string) (string, error) {
	if len(addrs) == 0 {
		return "", errors.New("bench: the provider has no address")
	}
	return addrs[0], nil
}

// writeRandomFile writes size pseudo-random bytes (ChaCha8, seeded by
// seed) to path and returns their SHA-256.
func writeRandomFile(path string, size, seed uint64) ([32]byte, error) {
	f, err := os.Create(path)
	if err != nil {
		return [32]byte{}, err
	}
	var key [32]byte
	copy(key[:], fmt.Sprintf("wats-vs-ipfs-%d", seed))
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(f, h), io.LimitReader(rand.NewChaCha8(key), int64(size)))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return [32]byte(h.Sum(nil)), err
}

// checkFile checks that path holds size bytes whose SHA-256 is sum.
func checkFile(path string, size uint64, sum [32]byte) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	switch {
	case err != nil:
		return err
	case uint64(n) != size:
		return fmt.Errorf("%s: %d bytes, want %d", path, n, size)
	case [32]byte(h.Sum(nil)) != sum:
		return fmt.Errorf("%s: its bytes differ from the original's", path)
	}
	return nil
}

// kuboVersion runs `ipfs version` and checks that it is kubo.
func kuboVersion(ctx context.Context, ipfs string) (string, error) {
	out, err := exec.CommandContext(ctx, ipfs, "version").Output()
	if err != nil {
		return "", fmt.Errorf("bench: %s version: %w (is it a kubo binary?)", ipfs, err)
	}
	v := strings.TrimSpace(string(out))
	if !strings.HasPrefix(v, "ipfs version ") {
		return "", fmt.Errorf("bench: %s version printed %q: not a kubo binary", ipfs, v)
	}
	return strings.TrimPrefix(v, "ipfs version "), nil
}

// kuboDaemon is a kubo daemon started by the bench, on its own repo.
type kuboDaemon struct {
	exe, repo string
	cmd       *exec.Cmd
	exited    chan struct{}
	// addr is its first swarm address, with /p2p/.
	addr string
}

// kuboEnv is the environment of every kubo command: its repo, and no
// telemetry (nothing leaves this machine).
func (k *kuboDaemon) env() []string {
	return append(os.Environ(), "IPFS_PATH="+k.repo, "IPFS_TELEMETRY=off")
}

// startKubo makes a kubo repo in dir, offline from everything but the
// bench's own daemons (the test profile: no bootstrap, no mDNS, no
// AutoConf, API and gateway on 127.0.0.1; and no routing, no providing),
// listening on transport, starts its daemon and waits for its API.
func startKubo(ctx context.Context, exe, dir, transport string) (*kuboDaemon, error) {
	k := &kuboDaemon{exe: exe, repo: dir, exited: make(chan struct{})}
	if _, err := k.run(ctx, nil, "init", "--profile", "test", "--empty-repo"); err != nil {
		return nil, err
	}
	if err := k.configure(map[string]any{
		"Routing.Type":            "none",
		"Provide.Enabled":         false,
		"Addresses.Swarm":         []string{transportListen(transport)},
		"Swarm.DisableNatPortMap": true,
	}); err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(dir, "daemon.log"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	k.cmd = exec.Command(exe, "daemon")
	k.cmd.Env = k.env()
	k.cmd.Stdout, k.cmd.Stderr = log, log
	k.cmd.SysProcAttr = devnet.ProcAttr(true)
	if err := k.cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: start kubo daemon: %w", err)
	}
	go func() { _ = k.cmd.Wait(); close(k.exited) }()
	deadline := time.Now().Add(devnet.DefaultUpTimeout)
	for {
		// Only once the daemon wrote its API file: before, a command
		// would run offline on the repo and take its lock.
		if _, err := os.Stat(filepath.Join(dir, "api")); err == nil {
			out, err := k.run(ctx, nil, "id", "-f", "<addrs>")
			if a := strings.Fields(out); err == nil && len(a) > 0 {
				k.addr = a[0]
				return k, nil
			}
		}
		select {
		case <-k.exited:
			return nil, fmt.Errorf("bench: the kubo daemon in %s exited; its log:\n%s", dir, devnet.LogTail(filepath.Join(dir, "daemon.log"), 20))
		case <-ctx.Done():
			k.stop()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			k.stop()
			return nil, fmt.Errorf("bench: the kubo daemon in %s did not answer within %v", dir, devnet.DefaultUpTimeout)
		}
	}
}

// configure sets dotted keys of the repo's config file.
func (k *kuboDaemon) configure(set map[string]any) error {
	path := filepath.Join(k.repo, "config")
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		return fmt.Errorf("bench: kubo config %s: %w", path, err)
	}
	for key, v := range set {
		m := cfg
		parts := strings.Split(key, ".")
		for _, p := range parts[:len(parts)-1] {
			sub, ok := m[p].(map[string]any)
			if !ok {
				sub = map[string]any{}
				m[p] = sub
			}
			m = sub
		}
		m[parts[len(parts)-1]] = v
	}
	b, err = json.Marshal(cfg, jsontext.WithIndent("  "))
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// run runs an ipfs command on k's repo and returns its standard output;
// stdout, if set, gets it instead. Its error holds the command's stderr.
func (k *kuboDaemon) run(ctx context.Context, stdout io.Writer, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, k.exe, args...)
	cmd.Env = k.env()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if stdout != nil {
		cmd.Stdout = stdout
	}
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("ipfs %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// kuboPair is the bench's two kubo daemons: [0] provides, [1] fetches.
type kuboPair []*kuboDaemon

func (k kuboPair) add(ctx context.Context, path string) (string, error) {
	out, err := k[0].run(ctx, nil, append(slices.Clone(kuboAddArgs), path)...)
	return strings.TrimSpace(out), err
}

// get is `ipfs cat CID > path` on the fetcher: the file is the command's
// standard output itself, as a shell redirection makes it.
func (k kuboPair) get(ctx context.Context, cid string, _ uint64, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = k[1].run(ctx, f, "cat", cid)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// remove unpins cid and collects the garbage on both, so that the next
// round starts from empty stores.
func (k kuboPair) remove(ctx context.Context, cid string) {
	for _, d := range k {
		_, _ = d.run(ctx, nil, "pin", "rm", cid)
		_, _ = d.run(ctx, nil, "repo", "gc", "--quiet")
	}
}

func (k *kuboDaemon) pid() int { return k.cmd.Process.Pid }

// stop ends the daemon: SIGTERM, then SIGKILL after 10 s.
func (k *kuboDaemon) stop() {
	if k.cmd == nil || k.cmd.Process == nil {
		return
	}
	devnet.SignalGroup(k.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-k.exited:
	case <-time.After(10 * time.Second):
		devnet.SignalGroup(k.cmd.Process.Pid, syscall.SIGKILL)
		<-k.exited
	}
}

// watsPair runs the wats CLI against the bench's two wats daemons: the
// provider (repos[0], at from) and the fetcher (repos[1]).
type watsPair struct {
	exe   string
	repos [2]string
	from  string
}

func (w *watsPair) run(ctx context.Context, node int, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, w.exe, append(args, "--repo", w.repos[node])...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("wats %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// add returns the CID of the CID:SIZE:NAME line `blob add` prints.
func (w *watsPair) add(ctx context.Context, path string) (string, error) {
	out, err := w.run(ctx, 0, "blob", "add", path)
	if err != nil {
		return "", err
	}
	cid, _, _ := strings.Cut(strings.TrimSpace(out), ":")
	return cid, nil
}

func (w *watsPair) get(ctx context.Context, cid string, size uint64, path string) error {
	_, err := w.run(ctx, 1, "blob", "get", cid, "--size", fmt.Sprint(size), "--from", w.from, "-o", path)
	return err
}

func (w *watsPair) remove(ctx context.Context, cid string) {
	for i := range w.repos {
		_, _ = w.run(ctx, i, "blob", "rm", cid)
	}
}

// VsIPFSTable writes r as the table of docs/performance.md: the medians,
// the ratios and the peak resident sets.
func VsIPFSTable(w io.Writer, r *VsIPFSResult) {
	size := humanize.Bytes(r.Bytes)
	fmt.Fprintf(w, "%-34s %-16s %-16s %s\n", fmt.Sprintf("%d rounds, %s", r.Rounds, r.Transport), "kubo (median)", "wats (median)", "wats / kubo")
	fmt.Fprintf(w, "%-34s %-16s %-16s %.2f\n", "fetch "+size, rate(r.Kubo.FetchMiBPerS), rate(r.Wats.FetchMiBPerS), r.Ratios.Fetch)
	fmt.Fprintf(w, "%-34s %-16s %-16s %.2f\n", "import "+size, rate(r.Kubo.ImportMiBPerS), rate(r.Wats.ImportMiBPerS), r.Ratios.Import)
	fmt.Fprintf(w, "%-34s %-16s %-16s %.1f / %.1f\n", "peak RSS, provider / fetcher",
		rssPair(r.Kubo), rssPair(r.Wats), r.Ratios.ProviderRSS, r.Ratios.FetcherRSS)
}

func rate(mibs float64) string { return fmt.Sprintf("%.0f MiB/s", mibs) }

func rssPair(s VsIPFSSide) string {
	return fmt.Sprintf("%d / %d MiB", s.ProviderPeakRSS>>20, s.FetcherPeakRSS>>20)
}

// VsIPFSLine writes one figure as the line VsIPFS's caller prints as it
// comes.
func VsIPFSLine(w io.Writer, f VsIPFSFigure) {
	fmt.Fprintf(w, "round %d  %-4s  %-6s  %s in %v  %.0f MiB/s\n", f.Round, f.Impl, f.Op, humanize.Bytes(f.Bytes), f.Seconds, f.MiBPerS)
}
