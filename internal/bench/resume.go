package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/internal/devnet"
	"github.com/wats-network/wats/internal/humanize"
)

// ResumeOptions are the settings of Resume (`bench fetch --resume`).
type ResumeOptions struct {
	// Size is the blob's size in bytes (1..2^53); Transport as
	// FetchOptions'.
	Size      uint64
	Transport string
	// Runs is how many pairs of fetches are timed: a whole fetch and one
	// that resumes, alternating which goes first (at least 1).
	Runs int
	// KeepNone sets node1's blobs.max_partial_bytes to 0: it keeps
	// nothing of a fetch that did not complete, as before ADR 0054, and
	// the fetch after the restart starts from nothing (the anchor).
	KeepNone bool
	// Log, if set, gets a line of progress a step.
	Log func(format string, args ...any)
	// Measured, if set, gets each figure as soon as it is measured.
	Measured func(ResumeFigure)
}

// ResumeFigure is one timed fetch of Resume by node1 through its control
// API.
type ResumeFigure struct {
	// Run is the pair's number, from 1. Op is "whole", a fetch from
	// nothing, or "resume", the fetch after node1's daemon was killed
	// (SIGKILL) half way through one and restarted (docs/adr/0054).
	Run int    `json:"run"`
	Op  string `json:"op"`
	// Bytes is the blob's size; Held, for "resume", the bytes node1
	// held of it after the restart (its partial blob).
	Bytes uint64 `json:"bytes"`
	Held  uint64 `json:"held,omitempty"`
	// Seconds is the fetch's time, from its request to the blob stored;
	// WithRestart, for "resume", the time from the restart of the daemon
	// (its start, the check of the partial's leaves) to the blob stored.
	Seconds     Seconds `json:"seconds"`
	WithRestart Seconds `json:"with_restart_s,omitempty"`
}

// ResumeResult is what `bench fetch --resume` measures: the medians of
// the runs and their ratios, the target of ADR 0054 being a fetch that
// resumes from half the blob in at most 0.6 of a whole fetch's time.
type ResumeResult struct {
	Bytes     uint64         `json:"bytes"`
	CID       string         `json:"cid"`
	Transport string         `json:"transport"`
	Figures   []ResumeFigure `json:"figures"`
	// Whole, Resume and ResumeWithRestart are the medians of the runs'
	// figures; Ratio is Resume/Whole, RatioWithRestart
	// ResumeWithRestart/Whole.
	Whole             Seconds `json:"whole_s"`
	Resume            Seconds `json:"resume_s"`
	ResumeWithRestart Seconds `json:"resume_with_restart_s"`
	Ratio             float64 `json:"ratio"`
	RatioWithRestart  float64 `json:"ratio_with_restart"`
	// PairRatio is the median, over the runs, of each run's resumed
	// fetch's time over its whole fetch's: the two of a run are timed
	// back to back, so a load that drifts over the runs (other processes
	// on the machine) weighs less on it than on Ratio.
	PairRatio float64 `json:"pair_ratio"`
}

// Resume is `wats bench fetch --resume`: it starts two daemons as Fetch
// does, imports o.Size pseudo-random bytes into node0, then o.Runs times
// times node1's whole fetch of the blob and a fetch cut by killing
// node1's daemon (SIGKILL) once it holds half the blob, restarting it and
// fetching again, in alternating order; node1 removes the blob after
// each. Both daemons' blobs.max_blob_bytes, quota_bytes and
// max_partial_bytes are raised to the size.
func Resume(ctx context.Context, o ResumeOptions) (*ResumeResult, error) {
	dir, err := os.MkdirTemp("", "wats-bench-resume-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	logf := o.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	size := o.Size
	d, err := devnet.Start(ctx, devnet.Options{
		Dir: dir, Nodes: 2, Network: "wats-bench", Timeout: devnet.DefaultUpTimeout, Foreground: true, Log: logf,
		Config: func(cfg *config.Config) {
			cfg.Blobs.MaxBlobBytes = max(cfg.Blobs.MaxBlobBytes, int64(size))
			cfg.Blobs.QuotaBytes = max(cfg.Blobs.QuotaBytes, int64(size))
			cfg.Blobs.MaxPartialBytes = max(cfg.Blobs.MaxPartialBytes, int64(size))
			if o.KeepNone {
				cfg.Blobs.MaxPartialBytes = 0
			}
			cfg.Blobs.AutoFetch = false
			if o.Transport == "tcp" || o.Transport == "quic" {
				cfg.P2P.Listen = []string{transportListen(o.Transport)}
			}
		},
	})
	if err != nil {
		return nil, err
	}
	defer d.Stop()
	src, dst := d.Client(0), d.Client(1)
	logf("importing %s into node0", humanize.Bytes(size))
	bi, err := src.AddBlob(ctx, benchBlob(size))
	if err != nil {
		return nil, fmt.Errorf("node0: blob add: %w", err)
	}
	id, err := src.ID(ctx)
	if err != nil {
		return nil, err
	}
	from, err := firstAddr(id.Addrs)
	if err != nil {
		return nil, err
	}
	req := api.FetchRequest{CID: bi.CID, Size: bi.Size, From: from}
	res := &ResumeResult{Bytes: size, CID: bi.CID, Transport: o.Transport}
	figure := func(f ResumeFigure) {
		res.Figures = append(res.Figures, f)
		if o.Measured != nil {
			o.Measured(f)
		}
	}
	whole := func(run int) error {
		logf("run %d: node1 fetching the whole blob", run)
		start := time.Now()
		if err := dst.FetchBlob(ctx, req, nil); err != nil {
			return fmt.Errorf("node1: fetch: %w", err)
		}
		figure(ResumeFigure{Run: run, Op: "whole", Bytes: size, Seconds: Seconds(time.Since(start))})
		return dst.RemoveBlob(ctx, bi.CID)
	}
	resume := func(run int) error {
		logf("run %d: node1 fetching, killed half way", run)
		if err := killHalfWay(ctx, d, dst, req); err != nil {
			return err
		}
		restart := time.Now()
		if err := d.Restart(1); err != nil {
			return err
		}
		if _, err := d.Daemon(1).WaitAPI(ctx, dst); err != nil {
			return fmt.Errorf("node1 after its restart: %w", err)
		}
		ps, err := dst.PartialBlobs(ctx)
		if err != nil {
			return err
		}
		var held uint64
		for _, p := range ps {
			if p.CID == bi.CID {
				held = p.Held
			}
		}
		logf("run %d: node1 restarted holding %s; fetching the rest", run, humanize.Bytes(held))
		start := time.Now()
		if err := dst.FetchBlob(ctx, req, nil); err != nil {
			return fmt.Errorf("node1: fetch after its restart: %w", err)
		}
		now := time.Now()
		figure(ResumeFigure{Run: run, Op: "resume", Bytes: size, Held: held, Seconds: Seconds(now.Sub(start)), WithRestart: Seconds(now.Sub(restart))})
		return dst.RemoveBlob(ctx, bi.CID)
	}
	for run := 1; run <= max(o.Runs, 1); run++ {
		steps := []func(int) error{whole, resume}
		if run%2 == 0 {
			slices.Reverse(steps)
		}
		for _, step := range steps {
			if err := step(run); err != nil {
				return nil, err
			}
		}
	}
	var w, r, rr []float64
	pairs := make(map[int][2]float64)
	for _, f := range res.Figures {
		s := time.Duration(f.Seconds).Seconds()
		p := pairs[f.Run]
		if f.Op == "whole" {
			w, p[0] = append(w, s), s
		} else {
			r, p[1] = append(r, s), s
			rr = append(rr, time.Duration(f.WithRestart).Seconds())
		}
		pairs[f.Run] = p
	}
	var pr []float64
	for _, p := range pairs {
		pr = append(pr, ratio(p[1], p[0]))
	}
	res.PairRatio = median(pr)
	secs := func(x float64) Seconds { return Seconds(time.Duration(x * float64(time.Second))) }
	res.Whole, res.Resume, res.ResumeWithRestart = secs(median(w)), secs(median(r)), secs(median(rr))
	res.Ratio, res.RatioWithRestart = ratio(median(r), median(w)), ratio(median(rr), median(w))
	return res, nil
}

// killHalfWay starts node1's fetch of req and kills node1's daemon with
// SIGKILL once the fetch holds half the blob (as its progress lines say,
// every 100 ms), and waits until it is gone.
func killHalfWay(ctx context.Context, d *devnet.Network, dst *api.Client, req api.FetchRequest) error {
	half := make(chan struct{})
	var once sync.Once
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- dst.FetchBlob(fctx, req, func(p api.FetchProgress) {
			if p.Bytes >= req.Size/2 {
				once.Do(func() { close(half) })
			}
		})
	}()
	select {
	case <-half:
	case err := <-done:
		if err == nil {
			return errors.New("node1 fetched the whole blob before it held half of it by its progress lines; take a larger --size")
		}
		return fmt.Errorf("node1: fetch: %w", err)
	case <-ctx.Done():
		return ctx.Err()
	}
	p := d.Daemon(1)
	if err := syscall.Kill(p.PID(), syscall.SIGKILL); err != nil {
		return err
	}
	select {
	case <-p.Exited():
	case <-ctx.Done():
		return ctx.Err()
	}
	<-done // failed: its daemon is gone
	return nil
}
