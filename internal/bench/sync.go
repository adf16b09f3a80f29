package bench

import (
	"context"
	"crypto/rand"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/node"
	"github.com/wats-network/wats/repo"

	"github.com/wats-network/wats/core"
)

// SyncResult is what Sync measured.
type SyncResult struct {
	// Events is n, the events filled and caught up.
	Events uint64 `json:"events"`
	// Fill is the time spent signing and storing the events on the source
	// node; CatchUp from dialling the source to the last event stored.
	// Their JSON is in nanoseconds (fill_ns, catch_up_ns).
	Fill      time.Duration `json:"-"`
	CatchUp   time.Duration `json:"-"`
	FillNs    int64         `json:"fill_ns"`
	CatchUpNs int64         `json:"catch_up_ns"`
	// EventsPerSec is Events over CatchUp.
	EventsPerSec float64 `json:"events_per_sec"`
	// DiskBytesPerEvent is the size of the catching-up node's database
	// directory after it closed, divided by the events.
	DiskBytesPerEvent float64 `json:"disk_bytes_per_event"`
	// PeakRSSBytes is the process's peak resident set during the catch-up
	// (both nodes run in this process), from /proc/self/status VmHWM after
	// resetting it; 0 where that is not available.
	PeakRSSBytes uint64 `json:"peak_rss_bytes"`
	// Dropped counts the events the catching-up node dropped as invalid
	// (0 expected).
	Dropped uint64 `json:"dropped"`
}

// Sync is `wats bench sync`: it fills one node with n signed events and
// measures a second node's catch-up from it by sync over real libp2p on
// loopback, with gossip and rate limits off, signatures verified and
// writes durable. Both nodes run in this process (node.New), through
// node's exported API only. dir holds the two repos (a temp dir when
// empty, removed at the end). progress, if not nil, is called with a line
// of text now and then.
func Sync(ctx context.Context, n int, dir string, progress func(string)) (*SyncResult, error) {
	if progress == nil {
		progress = func(string) {}
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "wats-bench-sync-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	cfg := config.Default()
	cfg.Network = "bench"
	cfg.P2P.Listen = []string{"/ip4/127.0.0.1/tcp/0"}
	cfg.Sync.Gossip = false
	cfg.Sync.Interval = config.Duration{Duration: config.MaxSyncInterval}
	// Rate limits off: the catch-up is measured at full speed.
	cfg.Limits.HelloPerMin, cfg.Limits.SyncPerMin = 0, 0
	src, err := repo.Init(filepath.Join(dir, "source"), &repo.InitOptions{Config: cfg, Force: true})
	if err != nil {
		return nil, err
	}
	dst, err := repo.Init(filepath.Join(dir, "catchup"), &repo.InitOptions{Config: cfg, Force: true})
	if err != nil {
		return nil, err
	}
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	res := &SyncResult{Events: uint64(n)}

	a, err := node.New(src.Config, src.Key, &node.Options{Dir: src.Dir, Logger: quiet, Agent: "wats/bench"})
	if err != nil {
		return nil, err
	}
	defer a.Close()
	t0 := time.Now()
	if err := fillLog(ctx, a.Events(), n, progress); err != nil {
		return nil, err
	}
	res.Fill = time.Since(t0)
	progress(fmt.Sprintf("filled the source with %d events in %v", n, res.Fill.Round(time.Millisecond)))
	if err := a.Start(ctx); err != nil {
		return nil, err
	}

	b, err := node.New(dst.Config, dst.Key, &node.Options{Dir: dst.Dir, Logger: quiet, Agent: "wats/bench"})
	if err != nil {
		return nil, err
	}
	bClosed := false
	defer func() {
		if !bClosed {
			b.Close()
		}
	}()
	if err := b.Start(ctx); err != nil {
		return nil, err
	}
	runtime.GC()
	resetPeakRSS()
	t0 = time.Now()
	if _, err := b.Connect(ctx, a.FullAddrs()[0]); err != nil {
		return nil, err
	}
	st, err := b.SyncPeer(ctx, a.ID(), func(p node.SyncProgress) {
		if p.Cursor%(256*1000) == 0 {
			progress(fmt.Sprintf("caught up %d of %d", p.Cursor, n))
		}
	})
	if err != nil {
		return nil, err
	}
	res.CatchUp = time.Since(t0)
	res.FillNs, res.CatchUpNs = res.Fill.Nanoseconds(), res.CatchUp.Nanoseconds()
	res.PeakRSSBytes = peakRSS(os.Getpid())
	res.Dropped = b.Status().Dropped
	if got := b.Events().Head(); got != core.Cursor(n) {
		return nil, fmt.Errorf("bench: caught up %d events, want %d (last progress %+v)", got, n, st)
	}
	res.EventsPerSec = float64(n) / res.CatchUp.Seconds()
	if err := b.Close(); err != nil {
		return nil, err
	}
	bClosed = true
	size, err := dirSize(dst.DBPath())
	if err != nil {
		return nil, err
	}
	res.DiskBytesPerEvent = float64(size) / float64(max(n, 1))
	return res, nil
}

// fillLog appends n signed note events from 16 authors, signed on all
// cores, in batches of 4096.
func fillLog(ctx context.Context, log *eventlog.Log, n int, progress func(string)) error {
	keys := make([]crypto.PrivKey, 16)
	for i := range keys {
		k, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			return err
		}
		keys[i] = k
	}
	const batch = 4096
	base := time.Now().Add(-time.Hour)
	for start := 0; start < n; start += batch {
		if err := ctx.Err(); err != nil {
			return err
		}
		end := min(start+batch, n)
		events := make([]*eventlog.Event, end-start)
		var wg sync.WaitGroup
		var firstErr error
		var once sync.Once
		workers := runtime.GOMAXPROCS(0)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < len(events); i += workers {
					seq := start + i
					body := jsontext.Value(`{"n":` + strconv.Itoa(seq) + `,"text":"benchmark event ` + strconv.Itoa(seq) + `"}`)
					// Hundreds share each millisecond, as in a busy network.
					ev, err := eventlog.New(keys[seq%len(keys)], base.Add(time.Duration(seq/256)*time.Millisecond), "note", body, nil)
					if err != nil {
						once.Do(func() { firstErr = err })
						return
					}
					events[i] = ev
				}
			}()
		}
		wg.Wait()
		if firstErr != nil {
			return firstErr
		}
		if _, err := log.Append(events); err != nil {
			return err
		}
		if (start/batch)%50 == 0 {
			progress(fmt.Sprintf("filled %d of %d", end, n))
		}
	}
	return nil
}

// resetPeakRSS resets the kernel's peak-RSS mark of this process (Linux:
// writing 5 to /proc/self/clear_refs), so peakRSS measures from here.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// dirSize is the sum of the sizes of the files under dir.
func dirSize(dir string) (int64, error) {
	var size int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			size += info.Size()
		}
		return err
	})
	return size, err
}
