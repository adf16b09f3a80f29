package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/internal/humanize"
	"github.com/wats-network/wats/repo"
)

// Bounds of `wats diag bundle` (docs/adr/0050).
const (
	// defaultCPUSeconds is the length of the bundle's CPU profile unless
	// --cpu-seconds says otherwise.
	defaultCPUSeconds = 10
	// maxCPUSeconds bounds --cpu-seconds: five minutes of profile is
	// more than a report needs, and the bundle waits for all of it.
	maxCPUSeconds = 300
	// bundlePartBytes bounds one file of the bundle: a part the daemon
	// answers with more (a goroutine dump of a node holding a flood of
	// connections) is cut there, and errors.txt says so.
	bundlePartBytes = 64 << 20
	// bundleRepoEntries bounds the entries repo.txt lists.
	bundleRepoEntries = 2000
	// bundleCallTimeout bounds each call of the control API but the CPU
	// profile, which gets its length more.
	bundleCallTimeout = 30 * time.Second
)

func (c *cli) diagBundleCmd() *cobra.Command {
	var out string
	var cpuSeconds int
	cmd := &cobra.Command{
		Use:   "bundle [-o FILE]",
		Short: "Write one archive of what a bug report needs: version, config, state, log, profiles",
		Long: `Write a gzipped tar of what a developer asks for first about a node: the
version, the config in effect (the identity key is never included), the answers
of status, peers, peers cache, limits and diag (JSON), the Prometheus metrics,
the last 1,000 lines the daemon logged, and Go profiles: every goroutine's
stack, heap, allocs and a CPU profile of --cpu-seconds. README.txt in the
archive says what each file is; a part the daemon could not give is named in
errors.txt, and the rest is still written.

With no daemon running it says so and writes what is readable without one:
the version, the config file and the repo's layout.

The default FILE is wats-diag-<the peer ID's last 8 characters>-<UTC time>.tar.gz
in the current directory. It prints the path and size when done.`,
		Example: `  wats diag bundle
  wats diag bundle -o report.tar.gz --cpu-seconds 30`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkCPUSeconds(cpuSeconds); err != nil {
				return err
			}
			return c.diagBundle(cmd.Context(), out, cpuSeconds)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "the archive to write (default: wats-diag-PEER-TIME.tar.gz here)")
	cmd.Flags().IntVar(&cpuSeconds, "cpu-seconds", defaultCPUSeconds,
		fmt.Sprintf("seconds of CPU profile, 0 to %d; 0 skips it", maxCPUSeconds))
	return cmd
}

// checkCPUSeconds refuses a --cpu-seconds outside 0..maxCPUSeconds.
func checkCPUSeconds(s int) error {
	if s < 0 || s > maxCPUSeconds {
		return usageErrorf("--cpu-seconds %d: want 0 (no CPU profile) to %d", s, maxCPUSeconds)
	}
	return nil
}

// bundle is an archive being gathered: its files in order, and the parts
// that could not be had.
type bundle struct {
	files []bundleFile
	errs  []string
}

type bundleFile struct {
	name string
	data []byte
}

// add puts a file in the bundle, cut at bundlePartBytes.
func (b *bundle) add(name string, data []byte) {
	if len(data) > bundlePartBytes {
		b.errs = append(b.errs, fmt.Sprintf("%s: cut at %d bytes", name, bundlePartBytes))
		data = data[:bundlePartBytes]
	}
	b.files = append(b.files, bundleFile{name, data})
}

// fail notes that the part name could not be had, and why.
func (b *bundle) fail(name string, err error) {
	b.errs = append(b.errs, fmt.Sprintf("%s: %v", name, err))
}

// addJSON adds name as v in indented JSON, or notes err.
func (b *bundle) addJSON(name string, v any, err error) {
	if err == nil {
		var data []byte
		if data, err = marshalIndent(v); err == nil {
			b.add(name, append(data, '\n'))
			return
		}
	}
	b.fail(name, err)
}

// has reports whether the bundle holds name.
func (b *bundle) has(name string) bool {
	for _, f := range b.files {
		if f.name == name {
			return true
		}
	}
	return false
}

// diagBundle is `wats diag bundle`: it gathers the bundle from the
// daemon of --repo, or offline when none runs, and writes it to out
// (default: bundleName in the current directory).
func (c *cli) diagBundle(ctx context.Context, out string, cpuSeconds int) error {
	if err := c.checkRepoFlag(); err != nil {
		return err
	}
	if !repoExists(c.repoDir) {
		return c.noRepoError()
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	now := time.Now().UTC()
	b := &bundle{}
	b.addJSON("version.json", readBuildInfo(), nil)

	idCtx, cancel := context.WithTimeout(ctx, bundleCallTimeout)
	id, err := cl.ID(idCtx)
	cancel()
	online := !daemonGone(err)
	var peerID string
	if online {
		b.addJSON("id.json", id, err)
		if id != nil {
			peerID = id.PeerID
		}
		c.bundleFromDaemon(ctx, cl, b, cpuSeconds)
	} else {
		fmt.Fprintf(c.stderr, "no daemon runs for %s: the bundle holds only what is readable without one (version, config, the repo's layout)\n", c.repoDir)
		b.errs = append(b.errs, fmt.Sprintf("no daemon runs for %s (%v): id, status, peers, peers cache, limits, diag, metrics, the log and the profiles "+
			"are not here; start one with %s and run this again", c.repoDir, err, c.hint("daemon", "--repo", c.repoDir)))
		peerID = c.bundleOffline(b)
	}
	if ctx.Err() != nil {
		return ctx.Err() // interrupted: no archive
	}
	b.add("repo.txt", repoLayout(c.repoDir))
	if len(b.errs) == 0 {
		b.add("errors.txt", []byte("every part was written\n"))
	} else {
		b.add("errors.txt", []byte(strings.Join(b.errs, "\n")+"\n"))
	}
	b.files = append([]bundleFile{{"README.txt", bundleReadme(b, c.repoDir, online, now)}}, b.files...)

	name := bundleName(peerID, now)
	if out == "" {
		out = name + ".tar.gz"
	}
	size, err := writeBundle(out, name, now, b.files)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "%s (%s)\n", out, humanize.Bytes(uint64(size)))
	if n := len(b.errs); n > 0 && online {
		fmt.Fprintf(c.stderr, "%s not gathered: see errors.txt in the archive\n", humanize.Plural(n, "part"))
	}
	return nil
}

// bundleFromDaemon adds the daemon's answers to b: each call bounded by
// bundleCallTimeout (the CPU profile by its length more), each failure
// noted in b.
func (c *cli) bundleFromDaemon(ctx context.Context, cl *api.Client, b *bundle, cpuSeconds int) {
	call := func(f func(context.Context) error) error {
		ctx, cancel := context.WithTimeout(ctx, bundleCallTimeout)
		defer cancel()
		return c.apiError(f(ctx))
	}
	var rc *api.RunningConfig
	if err := call(func(ctx context.Context) (err error) { rc, err = cl.Config(ctx); return err }); err != nil {
		b.fail("config.toml", err)
	} else {
		b.add("config.toml", redactSecrets([]byte(rc.TOML)))
	}
	jsonPart := func(name string, get func(ctx context.Context) (any, error)) {
		var v any
		err := call(func(ctx context.Context) (err error) { v, err = get(ctx); return err })
		b.addJSON(name, v, err)
	}
	jsonPart("status.json", func(ctx context.Context) (any, error) { return cl.Status(ctx) })
	jsonPart("peers.json", func(ctx context.Context) (any, error) { return cl.Peers(ctx) })
	jsonPart("peers-cache.json", func(ctx context.Context) (any, error) { return cl.PeerCache(ctx) })
	jsonPart("limits.json", func(ctx context.Context) (any, error) { return cl.Limits(ctx) })
	jsonPart("diag.json", func(ctx context.Context) (any, error) { return cl.Diag(ctx) })

	var metrics string
	if err := call(func(ctx context.Context) (err error) { metrics, err = cl.Metrics(ctx); return err }); err != nil {
		b.fail("metrics.txt", err)
	} else {
		b.add("metrics.txt", []byte(metrics))
	}
	var lt *api.LogTail
	if err := call(func(ctx context.Context) (err error) { lt, err = cl.Log(ctx, 0); return err }); err != nil {
		b.fail("daemon.log", err)
	} else {
		var buf bytes.Buffer
		for _, l := range lt.Lines {
			buf.WriteString(l)
			buf.WriteByte('\n')
		}
		b.add("daemon.log", buf.Bytes())
	}

	profile := func(file, name string, q url.Values, timeout time.Duration) {
		var buf bytes.Buffer
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if err := cl.ProfileOf(ctx, name, q, &limitedBuffer{&buf, bundlePartBytes + 1}); err != nil {
			b.fail(file, c.apiError(err))
			return
		}
		b.add(file, buf.Bytes())
	}
	profile("goroutine.txt", "goroutine", url.Values{"debug": {"2"}}, bundleCallTimeout)
	profile("heap.pb.gz", "heap", nil, bundleCallTimeout)
	profile("allocs.pb.gz", "allocs", nil, bundleCallTimeout)
	if cpuSeconds > 0 {
		fmt.Fprintf(c.stderr, "profiling the daemon's CPU for %d s (--cpu-seconds)…\n", cpuSeconds)
		profile("cpu.pb.gz", "profile", url.Values{"seconds": {strconv.Itoa(cpuSeconds)}},
			time.Duration(cpuSeconds)*time.Second+bundleCallTimeout)
	}
}

// bundleOffline adds what is readable without a daemon to b: the config
// file as it parses (config.toml), and returns the repo's peer ID ("" if
// the repo cannot be opened, which b then notes).
func (c *cli) bundleOffline(b *bundle) string {
	cfg, err := config.Load(configPath(c.repoDir))
	if err != nil {
		b.fail("config.toml", err)
	} else if toml, err := cfg.TOML(); err != nil {
		b.fail("config.toml", err)
	} else {
		b.add("config.toml", redactSecrets(toml))
	}
	r, err := repo.Open(c.repoDir)
	if err != nil {
		if cfg != nil { // not the config's error again
			b.fail("the peer ID", err)
		}
		return ""
	}
	return repo.PeerID(r).String()
}

// limitedBuffer is a writer that keeps the first n bytes written into b
// and drops the rest: a part of the bundle is held no further than its
// bound (bundle.add then cuts it and says so).
type limitedBuffer struct {
	b *bytes.Buffer
	n int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.b.Write(p[:min(len(p), max(l.n-l.b.Len(), 0))])
	return len(p), nil
}

// secretKey matches the config keys whose name says they hold a secret.
// config.toml holds none today (a test checks every key of config.Keys);
// one added later is redacted until it is decided otherwise.
var secretKey = regexp.MustCompile(`(?i)^\s*([a-z0-9_]*(secret|passw|token|psk|private|credential)[a-z0-9_]*|([a-z0-9_]*_)?key)\s*=`)

// redactSecrets returns toml with the value of every key that secretKey
// matches replaced by "<redacted>".
func redactSecrets(toml []byte) []byte {
	lines := strings.SplitAfter(string(toml), "\n")
	for i, l := range lines {
		if loc := secretKey.FindStringIndex(l); loc != nil {
			lines[i] = l[:loc[1]] + ` "<redacted>"` + "\n"
		}
	}
	return []byte(strings.Join(lines, ""))
}

// bundleName is the archive's name without its extension, and the name
// of the directory it holds: wats-diag-<the last 8 characters of peerID,
// which tell peers apart (shortPeer)>-<now, UTC>; "unknown" without a
// peer ID.
func bundleName(peerID string, now time.Time) string {
	p := "unknown"
	if len(peerID) >= 8 {
		p = peerID[len(peerID)-8:]
	}
	return "wats-diag-" + p + "-" + now.UTC().Format("20060102T150405Z")
}

// repoLayout lists the repo at dir: each entry's path, mode, size and
// modification time (UTC), at most bundleRepoEntries of them; contents
// are never read.
func repoLayout(dir string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\n", dir)
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", path, err)
			return nil
		}
		if n++; n > bundleRepoEntries {
			return fs.SkipAll
		}
		rel, _ := filepath.Rel(dir, path)
		fi, err := d.Info()
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", rel, err)
			return nil
		}
		fmt.Fprintf(&b, "%-11s %12d  %s  %s\n", fi.Mode(), fi.Size(), fi.ModTime().UTC().Format(time.RFC3339), rel)
		return nil
	})
	if err != nil {
		fmt.Fprintf(&b, "walk: %v\n", err)
	}
	if n > bundleRepoEntries {
		fmt.Fprintf(&b, "… more entries, past the first %d\n", bundleRepoEntries)
	}
	return b.Bytes()
}

// bundleReadme is README.txt: what the bundle is, and what each of its
// files is.
func bundleReadme(b *bundle, repoDir string, online bool, now time.Time) []byte {
	var r bytes.Buffer
	fmt.Fprintf(&r, "wats diag bundle of the repo %s, made %s by wats %s.\n", repoDir, now.Format(time.RFC3339), readBuildInfo().Version)
	if online {
		r.WriteString("A daemon was running; what it answered is here.\n")
	} else {
		r.WriteString("No daemon was running: only what is readable without one is here.\n")
	}
	r.WriteString("The identity key (identity.key) is never included; nor is any other file's content of the repo.\n\nFiles:\n")
	for _, f := range []struct{ name, what string }{
		{"README.txt", "this file"},
		{"version.json", "the version of the wats binary that made the bundle, its Go version, platform and commit"},
		{"id.json", "the daemon's identity (GET /v1/id): peer ID, addresses, network, agent (its version)"},
		{"config.toml", "the config in effect: the daemon's (GET /v1/config), else config.toml as it parses; every key, no comments"},
		{"status.json", "wats status --json (GET /v1/status)"},
		{"peers.json", "wats peers ls --json (GET /v1/peers)"},
		{"peers-cache.json", "wats peers cache --json (GET /v1/peers/cache)"},
		{"limits.json", "wats limits --json (GET /v1/limits)"},
		{"diag.json", "wats diag --json (GET /v1/diag)"},
		{"metrics.txt", "the Prometheus metrics, text exposition format (GET /metrics)"},
		{"daemon.log", "the last lines the daemon logged, as it wrote them (GET /v1/log: at most 1,000 lines, 512 KiB)"},
		{"goroutine.txt", "every goroutine's stack (GET /debug/pprof/goroutine?debug=2)"},
		{"heap.pb.gz", "the heap profile (go tool pprof heap.pb.gz)"},
		{"allocs.pb.gz", "the allocations profile (go tool pprof allocs.pb.gz)"},
		{"cpu.pb.gz", "a CPU profile of --cpu-seconds (go tool pprof cpu.pb.gz)"},
		{"repo.txt", "the repo's layout: each entry's mode, size, modification time and path"},
		{"errors.txt", "each part that could not be gathered, and why"},
	} {
		if f.name == "README.txt" || b.has(f.name) {
			fmt.Fprintf(&r, "  %-17s %s\n", f.name, f.what)
		}
	}
	if !online {
		r.WriteString("\nThe database was not opened: wats repo check reads it, with the daemon stopped.\n")
	}
	return r.Bytes()
}

// writeBundle writes files as a gzipped tar into out, each under the
// directory dir, mode 0600, dated now: into a temporary file beside out,
// renamed to out once whole (an existing out is replaced then, and left
// as it was on a failure). It returns the archive's size in bytes.
func writeBundle(out, dir string, now time.Time, files []bundleFile) (int64, error) {
	f, err := os.CreateTemp(filepath.Dir(out), ".wats-diag-*")
	if err != nil {
		return 0, fmt.Errorf("bundle: %w", err)
	}
	tmp := f.Name()
	fail := func(err error) (int64, error) {
		f.Close()
		os.Remove(tmp)
		return 0, fmt.Errorf("bundle: write %s: %w", out, err)
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	for _, bf := range files {
		h := &tar.Header{Name: dir + "/" + bf.name, Mode: 0o600, Size: int64(len(bf.data)), ModTime: now, Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(h); err != nil {
			return fail(err)
		}
		if _, err := tw.Write(bf.data); err != nil {
			return fail(err)
		}
	}
	if err := errors.Join(tw.Close(), zw.Close(), f.Sync()); err != nil {
		return fail(err)
	}
	fi, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("bundle: write %s: %w", out, err)
	}
	if err := os.Rename(tmp, out); err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("bundle: %w", err)
	}
	return fi.Size(), nil
}
