package bench

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/node"
	"github.com/wats-network/wats/repo"

	"github.com/wats-network/wats/core"
)

// SyncResult is what Sync measured. Sync also reports each figure as a
// Figure as soon as it is measured (SyncOptions.Figure), under the JSON
// name of its field here.
type SyncResult struct {
	// Events is n, the events filled and caught up.
	Events uint64 `json:"events"`
	// Fill is the time spent signing and storing the events on the source
	// node; JSON in nanoseconds (fill_ns).
	Fill   time.Duration `json:"-"`
	FillNs int64         `json:"fill_ns"`
	// Rounds are the catch-ups, each by a new node from the same source,
	// each against the single checks timed just before and just after it.
	Rounds []SyncRound `json:"rounds"`
	// SyncRound is the round of the median wall ratio
	// (CatchUpOverSingleVerify; of an even count, the higher of the two in
	// the middle): the figures of the run.
	SyncRound `json:",inline"`
	// RatioMin and RatioMax are the lowest and highest wall ratio of the
	// rounds.
	RatioMin float64 `json:"catch_up_over_single_verify_min"`
	RatioMax float64 `json:"catch_up_over_single_verify_max"`
}

// SyncRound is one catch-up of a Sync run and its anchor.
type SyncRound struct {
	// Round numbers the rounds from 1.
	Round int `json:"round"`
	// CatchUp is the time from dialling the source to the last event
	// stored; JSON in nanoseconds (catch_up_ns).
	CatchUp   time.Duration `json:"-"`
	CatchUpNs int64         `json:"catch_up_ns"`
	// SingleVerify is the time crypto/ed25519.Verify takes to check the
	// same n signatures one at a time on GOMAXPROCS workers (the signature
	// checks alone: no decoding, no id; ADR 0034's anchor): the mean of
	// SingleVerifyBefore, measured just before the catch-up (on the events
	// of the source in round 1, on those the round before caught up
	// after), and SingleVerifyAfter, on the events this round's node
	// stored, so that a machine whose speed drifts during the run (a
	// shared one) moves the anchor as it moves the catch-up. Each is timed
	// batch by batch of 4,096 signatures. JSON in nanoseconds.
	SingleVerify         time.Duration `json:"-"`
	SingleVerifyBefore   time.Duration `json:"-"`
	SingleVerifyAfter    time.Duration `json:"-"`
	SingleVerifyBeforeNs int64         `json:"single_verify_before_ns"`
	SingleVerifyAfterNs  int64         `json:"single_verify_after_ns"`
	SingleVerifyNs       int64         `json:"single_verify_ns"`
	// CatchUpOverSingleVerify is CatchUp / SingleVerify, ADR 0034's
	// target: at most 0.8.
	CatchUpOverSingleVerify float64 `json:"catch_up_over_single_verify"`
	// SingleVerifyCPU and CatchUpCPU are the CPU time (user and system)
	// the process used during SingleVerify (the mean of its two
	// measurements) and CatchUp: what a shared machine's load does not
	// change, where their ratio says how much of the wall-time ratio is
	// the code's. JSON in nanoseconds.
	SingleVerifyCPU   time.Duration `json:"-"`
	CatchUpCPU        time.Duration `json:"-"`
	SingleVerifyCPUNs int64         `json:"single_verify_cpu_ns"`
	CatchUpCPUNs      int64         `json:"catch_up_cpu_ns"`
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
	// Commits counts the durable batches (one fsync each) in which the
	// catching-up node wrote the events.
	Commits uint64 `json:"commits"`
}

// Figure is one figure of a bench, reported as soon as it is measured, so
// that a long run is never lost to an error after it (`bench sync --json`
// prints one a line).
type Figure struct {
	// Name is the figure's JSON name in the bench's result, e.g.
	// "catch_up_ns".
	Name string `json:"figure"`
	// Round is the round the figure is of, from 1; 0 (left out of the
	// JSON) for a figure of the whole run.
	Round int `json:"round,omitzero"`
	// Value is the figure in Unit.
	Value float64 `json:"value"`
	// Unit is "ns", "events", "events/s", "bytes", "bytes/event",
	// "batches", "ratio" or "rounds".
	Unit string `json:"unit"`
}

// SyncOptions are Sync's optional settings; the zero value (or nil) is one
// round in a temporary directory that reports nothing along the way.
type SyncOptions struct {
	// Dir holds the repos; a temporary directory, removed at the end,
	// when empty. A round's catching-up repo is removed after the round
	// but for the last round's.
	Dir string
	// Rounds is the number of catch-ups (1 when 0 or less): on a shared
	// machine, whose speed changes from one minute to the next, the
	// median of several ratios says more than one.
	Rounds int
	// Progress, if not nil, is called with a line of text now and then.
	Progress func(string)
	// Figure, if not nil, is called with each figure as soon as it is
	// measured: events and fill_ns; then, round by round, the figures of
	// SyncRound but its number: single_verify_before_ns, catch_up_ns,
	// single_verify_after_ns, single_verify_ns,
	// catch_up_over_single_verify, single_verify_cpu_ns,
	// catch_up_cpu_ns, events_per_sec, peak_rss_bytes, dropped, commits,
	// disk_bytes_per_event; then rounds, catch_up_over_single_verify
	// (the median round's) and its min and max over the rounds.
	Figure func(Figure)
	// CPUProfile, if not nil, receives a CPU profile (pprof) of the first
	// round's catch-up alone.
	CPUProfile io.Writer
	// Trace, if not nil, receives an execution trace (runtime/trace) of
	// the first round's catch-up alone: which goroutine ran when, and
	// where the cores stood idle.
	Trace io.Writer
}

// Sync is `wats bench sync`: it fills one node with n signed events and
// measures, opts.Rounds times, a new node's catch-up from it by sync over
// real libp2p on loopback, with gossip and rate limits off, signatures
// verified and writes durable; and the time the n signatures take to
// check one at a time on all cores, the catch-up's anchor (ADR 0034),
// before the first catch-up and after each.
// The nodes run in this process (node.New), through node's exported API
// only. Each figure goes to opts.Figure as soon as it is measured; the
// result holds them all when the run ends without error.
func Sync(ctx context.Context, n int, opts *SyncOptions) (*SyncResult, error) {
	var o SyncOptions
	if opts != nil {
		o = *opts
	}
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
	if o.Figure == nil {
		o.Figure = func(Figure) {}
	}
	o.Rounds = max(o.Rounds, 1)
	dir := o.Dir
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
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	res := &SyncResult{Events: uint64(n)}
	o.Figure(Figure{Name: "events", Value: float64(n), Unit: "events"})

	a, err := node.New(src.Config, src.Key, &node.Options{Dir: src.Dir, Logger: quiet, Agent: "wats/bench"})
	if err != nil {
		return nil, err
	}
	defer a.Close()
	// Started before the fill, so that its one scan of its log at start
	// (for blobs to fetch, node/fetch.go) is over before the catch-up, as
	// on a source that has run for a while.
	if err := a.Start(ctx); err != nil {
		return nil, err
	}
	t0 := time.Now()
	pubs, err := fillLog(ctx, a.Events(), n, o.Progress)
	if err != nil {
		return nil, err
	}
	res.Fill = time.Since(t0)
	res.FillNs = res.Fill.Nanoseconds()
	o.Progress(fmt.Sprintf("filled the source with %d events in %v", n, res.Fill.Round(time.Millisecond)))
	o.Figure(Figure{Name: "fill_ns", Value: float64(res.FillNs), Unit: "ns"})
	o.Progress("timing the single checks, on the events of the source")
	before, err := singleChecksOf(ctx, a.Events(), pubs)
	if err != nil {
		return nil, err
	}
	for r := 1; r <= o.Rounds; r++ {
		rd := &syncRound{o: &o, n: n, round: r, cfg: cfg, logger: quiet, source: a, pubs: pubs}
		rd.dir = filepath.Join(dir, "catchup")
		if o.Rounds > 1 {
			rd.dir += "-" + strconv.Itoa(r)
		}
		round, after, err := rd.run(ctx, before)
		if err != nil {
			return nil, err
		}
		res.Rounds = append(res.Rounds, *round)
		if r < o.Rounds {
			if err := os.RemoveAll(rd.dir); err != nil {
				return nil, err
			}
		}
		before = after
	}
	byRatio := slices.Clone(res.Rounds)
	slices.SortStableFunc(byRatio, func(x, y SyncRound) int { return cmp.Compare(x.CatchUpOverSingleVerify, y.CatchUpOverSingleVerify) })
	res.SyncRound = byRatio[len(byRatio)/2]
	res.RatioMin, res.RatioMax = byRatio[0].CatchUpOverSingleVerify, byRatio[len(byRatio)-1].CatchUpOverSingleVerify
	o.Figure(Figure{Name: "rounds", Value: float64(len(res.Rounds)), Unit: "rounds"})
	o.Figure(Figure{Name: "catch_up_over_single_verify", Value: res.CatchUpOverSingleVerify, Unit: "ratio"})
	o.Figure(Figure{Name: "catch_up_over_single_verify_min", Value: res.RatioMin, Unit: "ratio"})
	o.Figure(Figure{Name: "catch_up_over_single_verify_max", Value: res.RatioMax, Unit: "ratio"})
	return res, nil
}

// syncRound is one round of Sync: a new node in dir catches up from
// source, then closes.
type syncRound struct {
	o      *SyncOptions
	n      int
	round  int
	dir    string
	cfg    *config.Config
	logger *slog.Logger
	source *node.Node
	pubs   map[string]ed25519.PublicKey
}

// run runs the round, the single checks timed before it given, and
// returns its figures and the single checks timed after it.
func (rd *syncRound) run(ctx context.Context, before checkTimes) (*SyncRound, checkTimes, error) {
	o, n, a := rd.o, rd.n, rd.source
	res := &SyncRound{Round: rd.round}
	figure := func(name string, v float64, unit string) {
		o.Figure(Figure{Name: name, Round: rd.round, Value: v, Unit: unit})
	}
	res.SingleVerifyBefore, res.SingleVerifyBeforeNs = before.wall, before.wall.Nanoseconds()
	figure("single_verify_before_ns", float64(res.SingleVerifyBeforeNs), "ns")

	dst, err := repo.Init(rd.dir, &repo.InitOptions{Config: rd.cfg, Force: true})
	if err != nil {
		return nil, checkTimes{}, err
	}
	b, err := node.New(dst.Config, dst.Key, &node.Options{Dir: dst.Dir, Logger: rd.logger, Agent: "wats/bench"})
	if err != nil {
		return nil, checkTimes{}, err
	}
	bClosed := false
	defer func() {
		if !bClosed {
			b.Close()
		}
	}()
	if err := b.Start(ctx); err != nil {
		return nil, checkTimes{}, err
	}
	// The heap the rounds before freed (a closed node's) goes back to
	// the OS first, so that it does not count in this round's peak RSS.
	// The peak still grows from round to round, glibc's malloc keeping
	// what a closed node's pebble freed (docs/performance.md): round 1's
	// is the one to compare with a single-round run.
	debug.FreeOSMemory()
	resetPeakRSS()
	profile := rd.round == 1 && o.CPUProfile != nil
	tracing := rd.round == 1 && o.Trace != nil
	if profile {
		if err := pprof.StartCPUProfile(o.CPUProfile); err != nil {
			return nil, checkTimes{}, err
		}
	}
	if tracing {
		if err := trace.Start(o.Trace); err != nil {
			return nil, checkTimes{}, err
		}
	}
	commits0 := b.Status().Log.Commits
	t0, cpu0 := time.Now(), processCPU()
	if _, err := b.Connect(ctx, a.FullAddrs()[0]); err != nil {
		return nil, checkTimes{}, err
	}
	// The hello starts the catch-up (docs/design.md §5.2: a head past the
	// cursor), which SyncPeer then waits for: the progress is the head's.
	stop := make(chan struct{})
	go func() {
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				o.Progress(fmt.Sprintf("round %d: caught up %d of %d", rd.round, b.Events().Head(), n))
			}
		}
	}()
	st, err := b.SyncPeer(ctx, a.ID(), nil)
	close(stop)
	res.CatchUp, res.CatchUpCPU = time.Since(t0), processCPU()-cpu0
	if profile {
		pprof.StopCPUProfile()
	}
	if tracing {
		trace.Stop()
	}
	if err != nil {
		return nil, checkTimes{}, err
	}
	res.PeakRSSBytes = peakRSS(os.Getpid())
	bst := b.Status()
	res.Dropped, res.Commits = bst.Dropped, bst.Log.Commits-commits0
	if got := b.Events().Head(); got != core.Cursor(n) {
		return nil, checkTimes{}, fmt.Errorf("bench: caught up %d events, want %d (last progress %+v)", got, n, st)
	}
	res.CatchUpNs, res.CatchUpCPUNs = res.CatchUp.Nanoseconds(), res.CatchUpCPU.Nanoseconds()
	res.EventsPerSec = float64(n) / res.CatchUp.Seconds()
	figure("catch_up_ns", float64(res.CatchUpNs), "ns")

	o.Progress(fmt.Sprintf("round %d: timing the single checks again, on the events caught up", rd.round))
	after, err := singleChecksOf(ctx, b.Events(), rd.pubs)
	if err != nil {
		return nil, checkTimes{}, err
	}
	res.SingleVerifyAfter, res.SingleVerifyAfterNs = after.wall, after.wall.Nanoseconds()
	figure("single_verify_after_ns", float64(res.SingleVerifyAfterNs), "ns")
	res.SingleVerify = (before.wall + after.wall) / 2
	res.SingleVerifyCPU = (before.cpu + after.cpu) / 2
	res.SingleVerifyNs, res.SingleVerifyCPUNs = res.SingleVerify.Nanoseconds(), res.SingleVerifyCPU.Nanoseconds()
	if res.SingleVerify > 0 {
		res.CatchUpOverSingleVerify = res.CatchUp.Seconds() / res.SingleVerify.Seconds()
	}
	figure("single_verify_ns", float64(res.SingleVerifyNs), "ns")
	figure("catch_up_over_single_verify", res.CatchUpOverSingleVerify, "ratio")
	figure("single_verify_cpu_ns", float64(res.SingleVerifyCPUNs), "ns")
	figure("catch_up_cpu_ns", float64(res.CatchUpCPUNs), "ns")
	figure("events_per_sec", res.EventsPerSec, "events/s")
	figure("peak_rss_bytes", float64(res.PeakRSSBytes), "bytes")
	figure("dropped", float64(res.Dropped), "events")
	figure("commits", float64(res.Commits), "batches")
	if err := b.Close(); err != nil {
		return nil, checkTimes{}, err
	}
	bClosed = true
	size, err := dirSize(dst.DBPath())
	if err != nil {
		return nil, checkTimes{}, err
	}
	res.DiskBytesPerEvent = float64(size) / float64(max(n, 1))
	figure("disk_bytes_per_event", res.DiskBytesPerEvent, "bytes/event")
	return res, after, nil
}

// checkTimes is the time the single checks of a set of signatures took,
// wall and CPU.
type checkTimes struct{ wall, cpu time.Duration }

// singleCheckBatch is how many events the fill signs and stores at once,
// and how many signatures the single checks time at once.
const singleCheckBatch = 4096

// fillLog appends n signed note events from 16 authors, signed on all
// cores, in batches of singleCheckBatch, and returns the authors' raw keys
// by peer ID.
func fillLog(ctx context.Context, log *eventlog.Log, n int, progress func(string)) (map[string]ed25519.PublicKey, error) {
	keys := make([]crypto.PrivKey, 16)
	pubs := make(map[string]ed25519.PublicKey, len(keys))
	for i := range keys {
		k, pk, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			return nil, err
		}
		raw, err := pk.Raw()
		if err != nil {
			return nil, err
		}
		id, err := peer.IDFromPublicKey(pk)
		if err != nil {
			return nil, err
		}
		keys[i], pubs[id.String()] = k, raw
	}
	base := time.Now().Add(-time.Hour)
	workers := runtime.GOMAXPROCS(0)
	for start := 0; start < n; start += singleCheckBatch {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		end := min(start+singleCheckBatch, n)
		events := make([]*eventlog.Event, end-start)
		err := onWorkers(workers, len(events), func(i int) error {
			seq := start + i
			body := jsontext.Value(`{"n":` + strconv.Itoa(seq) + `,"text":"benchmark event ` + strconv.Itoa(seq) + `"}`)
			// Hundreds share each millisecond, as in a busy network.
			ev, err := eventlog.New(keys[seq%len(keys)], base.Add(time.Duration(seq/256)*time.Millisecond), "note", body, nil)
			events[i] = ev
			return err
		})
		if err != nil {
			return nil, err
		}
		if _, err := log.Append(events); err != nil {
			return nil, err
		}
		if (start/singleCheckBatch)%50 == 0 {
			progress(fmt.Sprintf("filled %d of %d", end, n))
		}
	}
	return pubs, nil
}

// singleChecksOf times the single checks of the signatures of every event
// of log, read back singleCheckBatch at a time (timeSingleChecks), and
// returns the sum of those times.
func singleChecksOf(ctx context.Context, log *eventlog.Log, pubs map[string]ed25519.PublicKey) (checkTimes, error) {
	var total checkTimes
	for after, more := core.Cursor(0), true; more; {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		raws, next, m, err := log.Page(after, singleCheckBatch, math.MaxInt)
		if err != nil {
			return total, err
		}
		events := make([]*eventlog.Event, len(raws))
		for i, raw := range raws {
			if events[i], err = eventlog.Decode(raw); err != nil {
				return total, err
			}
		}
		t, err := timeSingleChecks(events, pubs, int(after))
		total.wall += t.wall
		total.cpu += t.cpu
		if err != nil {
			return total, err
		}
		after, more = next, m
	}
	return total, nil
}

// timeSingleChecks times crypto/ed25519.Verify of the signatures of
// events, one at a time on GOMAXPROCS workers: the signature checks alone,
// their signing bytes and raw signatures made before the clock starts.
// first is the position of events[0] in the run, for errors.
func timeSingleChecks(events []*eventlog.Event, pubs map[string]ed25519.PublicKey, first int) (checkTimes, error) {
	msgs := make([][]byte, len(events))
	sigs := make([][]byte, len(events))
	keys := make([]ed25519.PublicKey, len(events))
	for i, ev := range events {
		var err error
		if msgs[i], err = ev.SigningBytes(); err != nil {
			return checkTimes{}, err
		}
		if sigs[i], err = base64.RawURLEncoding.DecodeString(ev.Sig); err != nil {
			return checkTimes{}, err
		}
		if keys[i] = pubs[ev.Author]; keys[i] == nil {
			return checkTimes{}, fmt.Errorf("bench: event %d by an author the bench did not make", first+i)
		}
	}
	t0, cpu0 := time.Now(), processCPU()
	err := onWorkers(runtime.GOMAXPROCS(0), len(events), func(i int) error {
		if !ed25519.Verify(keys[i], msgs[i], sigs[i]) {
			return fmt.Errorf("bench: event %d does not verify", first+i)
		}
		return nil
	})
	return checkTimes{time.Since(t0), processCPU() - cpu0}, err
}

// onWorkers calls f(i) for i in [0, count) on workers goroutines, each
// taking every workers-th index, and returns the first error.
func onWorkers(workers, count int, f func(i int) error) error {
	var wg sync.WaitGroup
	var firstErr error
	var once sync.Once
	for w := range workers {
		wg.Go(func() {
			for i := w; i < count; i += workers {
				if err := f(i); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	return firstErr
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
