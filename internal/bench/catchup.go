package bench

import (
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/internal/devnet"
	"github.com/wats-network/wats/node"
	"github.com/wats-network/wats/repo"
)

// catchupBenchNetwork is the network of `wats bench catchup`'s daemons.
const catchupBenchNetwork = "bench-catchup"

// CatchupOptions are Catchup's optional settings; the zero value (or nil)
// is four peers, one round, in a temporary directory.
type CatchupOptions struct {
	// Dir holds the repos; a temporary directory, removed at the end,
	// when empty.
	Dir string
	// Peers is how many peers hold the events (4 when 0 or less).
	Peers int
	// Rounds is the number of pairs of catch-ups, one from one peer and
	// one from Peers, who goes first alternating (1 when 0 or less).
	Rounds int
	// Progress, if not nil, is called with a line of text now and then.
	Progress func(string)
	// Figure, if not nil, is called with each figure as soon as it is
	// measured: events, peers, fill_ns; then, round by round,
	// catch_up_one_ns and catch_up_many_ns (in the order they ran),
	// many_over_one, events_from (a figure per peer of the catch-up from
	// several: the events it stored that came from that peer; Unit
	// "events", Name "events_from_<i>"); last rounds and many_over_one,
	// the median of the rounds'.
	Figure func(Figure)
}

// CatchupRound is one pair of catch-ups of a Catchup run.
type CatchupRound struct {
	// Round numbers the rounds from 1; ManyFirst says the catch-up from
	// several peers ran first.
	Round     int  `json:"round"`
	ManyFirst bool `json:"many_first"`
	// One and Many are the times from the first connect to the last event
	// stored, from one peer and from all; JSON in nanoseconds.
	One    time.Duration `json:"-"`
	Many   time.Duration `json:"-"`
	OneNs  int64         `json:"catch_up_one_ns"`
	ManyNs int64         `json:"catch_up_many_ns"`
	// ManyOverOne is Many / One.
	ManyOverOne float64 `json:"many_over_one"`
	// From are the events the catch-up from several peers stored from
	// each peer, in the order of the peers.
	From []uint64 `json:"events_from"`
}

// CatchupResult is what Catchup measured.
type CatchupResult struct {
	Events uint64 `json:"events"`
	Peers  int    `json:"peers"`
	// Fill is the time spent signing the events and storing them at
	// every peer; JSON in nanoseconds.
	Fill   time.Duration  `json:"-"`
	FillNs int64          `json:"fill_ns"`
	Rounds []CatchupRound `json:"rounds"`
	// ManyOverOne is the median of the rounds' (of an even count, the
	// higher of the two in the middle).
	ManyOverOne float64 `json:"many_over_one"`
}

// Catchup is `wats bench catchup`: it fills o.Peers repos with the same n
// signed events, each in an order of its own, starts a daemon on each
// (real processes of this executable, the default limits), and times,
// o.Rounds times, a new daemon's catch-up from one of them and a new
// daemon's catch-up from all of them, who goes first alternating: from
// the first connect (over the control API) to the last event stored. The
// catching-up daemons run the default profile (`wats init` without
// flags) on 127.0.0.1, without a DHT.
func Catchup(ctx context.Context, n int, opts *CatchupOptions) (*CatchupResult, error) {
	var o CatchupOptions
	if opts != nil {
		o = *opts
	}
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
	if o.Figure == nil {
		o.Figure = func(Figure) {}
	}
	o.Peers, o.Rounds = cmp.Or(max(o.Peers, 0), 4), max(o.Rounds, 1)
	dir := o.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "wats-bench-catchup-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the wats binary: %w", err)
	}
	res := &CatchupResult{Events: uint64(n), Peers: o.Peers}
	o.Figure(Figure{Name: "events", Value: float64(n), Unit: "events"})
	o.Figure(Figure{Name: "peers", Value: float64(o.Peers), Unit: "peers"})
	t0 := time.Now()
	repos, err := fillPeers(ctx, dir, o.Peers, n, o.Progress)
	if err != nil {
		return nil, err
	}
	res.Fill, res.FillNs = time.Since(t0), time.Since(t0).Nanoseconds()
	o.Figure(Figure{Name: "fill_ns", Value: float64(res.FillNs), Unit: "ns"})

	var procs []*devnet.Daemon
	defer func() { devnet.StopDaemons(procs) }()
	var addrs []string
	for i, rdir := range repos {
		d, id, err := startBenchDaemon(ctx, exe, rdir, i)
		if err != nil {
			return nil, err
		}
		procs = append(procs, d)
		addr := ""
		for _, a := range id.Addrs {
			if strings.HasPrefix(a, "/ip4/127.0.0.1/tcp/") {
				addr = a
				break
			}
		}
		if addr == "" {
			return nil, fmt.Errorf("peer %d reports no TCP address on 127.0.0.1 (%v)", i, id.Addrs)
		}
		addrs = append(addrs, addr)
	}
	o.Progress(fmt.Sprintf("%d peers up, each with %d events", o.Peers, n))
	for r := 1; r <= o.Rounds; r++ {
		round := CatchupRound{Round: r, ManyFirst: r%2 == 0}
		for k, many := range []bool{round.ManyFirst, !round.ManyFirst} {
			peersOf := addrs[:1]
			if many {
				peersOf = addrs
			}
			rdir := filepath.Join(dir, fmt.Sprintf("fresh-%d-%d", r, k))
			took, from, err := catchUpFrom(ctx, exe, rdir, o.Peers+2*r+k, peersOf, uint64(n))
			if err != nil {
				return nil, err
			}
			if err := os.RemoveAll(rdir); err != nil {
				return nil, err
			}
			if many {
				round.Many, round.ManyNs, round.From = took, took.Nanoseconds(), from
				o.Figure(Figure{Name: "catch_up_many_ns", Round: r, Value: float64(round.ManyNs), Unit: "ns"})
			} else {
				round.One, round.OneNs = took, took.Nanoseconds()
				o.Figure(Figure{Name: "catch_up_one_ns", Round: r, Value: float64(round.OneNs), Unit: "ns"})
			}
		}
		round.ManyOverOne = float64(round.Many) / float64(round.One)
		o.Figure(Figure{Name: "many_over_one", Round: r, Value: round.ManyOverOne, Unit: "ratio"})
		for i, e := range round.From {
			o.Figure(Figure{Name: "events_from_" + strconv.Itoa(i), Round: r, Value: float64(e), Unit: "events"})
		}
		res.Rounds = append(res.Rounds, round)
	}
	ratios := make([]float64, len(res.Rounds))
	for i, r := range res.Rounds {
		ratios[i] = r.ManyOverOne
	}
	slices.Sort(ratios)
	res.ManyOverOne = ratios[len(ratios)/2]
	o.Figure(Figure{Name: "rounds", Value: float64(len(res.Rounds)), Unit: "rounds"})
	o.Figure(Figure{Name: "many_over_one", Value: res.ManyOverOne, Unit: "ratio"})
	return res, nil
}

// catchupConfig is the config of a daemon of the bench: the default
// profile on 127.0.0.1, alone on its network until told to connect.
func catchupConfig() *config.Config {
	cfg := config.Default()
	cfg.Network = catchupBenchNetwork
	cfg.P2P.Listen = []string{"/ip4/127.0.0.1/tcp/0"}
	cfg.P2P.Bootstrap = []string{}
	cfg.P2P.MDNS = false
	cfg.P2P.DHT = config.DHTOff
	return cfg
}

// startBenchDaemon starts a daemon on repo rdir and waits for its API.
func startBenchDaemon(ctx context.Context, exe, rdir string, i int) (*devnet.Daemon, *api.ID, error) {
	d, err := devnet.StartDaemonIn(nil, nil, exe, rdir, filepath.Join(rdir, devnet.LogFileName), i, true)
	if err != nil {
		return nil, nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, devnet.DefaultUpTimeout)
	defer cancel()
	sock, err := repo.SocketPathOf(rdir)
	if err != nil {
		devnet.StopDaemons([]*devnet.Daemon{d})
		return nil, nil, err
	}
	id, err := d.WaitAPI(wctx, api.NewClient(sock))
	if err != nil {
		devnet.StopDaemons([]*devnet.Daemon{d})
		return nil, nil, err
	}
	return d, id, nil
}

// fillPeers creates k repos in dir and fills each with the same n signed
// events, signed once, each repo in an order of its own (batches in
// another order, events shuffled in each).
func fillPeers(ctx context.Context, dir string, k, n int, progress func(string)) ([]string, error) {
	var repos []string
	for i := range k {
		repos = append(repos, filepath.Join(dir, fmt.Sprintf("peer-%d", i)))
	}
	return repos, fillRepos(ctx, repos, catchupConfig(), n, benchBody, progress)
}

// benchBody is the body of the seq-th event of `bench catchup`.
func benchBody(seq int) jsontext.Value {
	return jsontext.Value(`{"n":` + strconv.Itoa(seq) + `,"text":"benchmark event ` + strconv.Itoa(seq) + `"}`)
}

// fillRepos creates a repo of config cfg in each of rdirs (a repo there
// already is kept) and fills each with the same n signed events, the seq-th
// of body body(seq), by 16 authors, signed once, each repo in an order of
// its own (batches in another order, events shuffled in each).
func fillRepos(ctx context.Context, rdirs []string, cfg *config.Config, n int, body func(seq int) jsontext.Value,
	progress func(string)) error {
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var logs []*node.Node
	defer func() {
		for _, nd := range logs {
			nd.Close()
		}
	}()
	for _, rdir := range rdirs {
		r, err := devnet.PrepareRepo(rdir, cfg)
		if err != nil {
			return err
		}
		nd, err := node.New(r.Config, r.Key, &node.Options{Dir: r.Dir, Logger: quiet, Agent: "wats/bench"})
		if err != nil {
			return err
		}
		logs = append(logs, nd)
	}
	keys := make([]crypto.PrivKey, 16)
	for i := range keys {
		key, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			return err
		}
		keys[i] = key
	}
	// Each peer takes the batches in an order of its own, within windows
	// of 16 batches, so that a batch is signed once and soon stored.
	const window = 16
	base := time.Now().Add(-time.Hour)
	batches := (n + singleCheckBatch - 1) / singleCheckBatch
	for w := 0; w < batches; w += window {
		var signed [][]*eventlog.Event
		for b := w; b < min(w+window, batches); b++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			start, end := b*singleCheckBatch, min((b+1)*singleCheckBatch, n)
			events := make([]*eventlog.Event, end-start)
			err := onWorkers(runtime.GOMAXPROCS(0), len(events), func(i int) error {
				seq := start + i
				ev, err := eventlog.New(keys[seq%len(keys)], base.Add(time.Duration(seq/256)*time.Millisecond), "note", body(seq), nil)
				events[i] = ev
				return err
			})
			if err != nil {
				return err
			}
			signed = append(signed, events)
		}
		for p, nd := range logs {
			rng := mrand.New(mrand.NewPCG(uint64(p), uint64(w)))
			for _, b := range rng.Perm(len(signed)) {
				evs := slices.Clone(signed[b])
				rng.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
				if _, err := nd.Events().Append(evs); err != nil {
					return err
				}
			}
		}
		progress(fmt.Sprintf("filled %d of %d", min((w+window)*singleCheckBatch, n), n))
	}
	for _, nd := range logs {
		if err := nd.Close(); err != nil {
			return err
		}
	}
	logs = nil
	return nil
}

// catchUpFrom starts a new daemon in rdir, connects it to peers (full
// multiaddrs) and times its catch-up of n events: from the first connect
// to the end of the sync from every peer (`wats sync`, which joins the
// catch-up the hellos started and ends with it), its log holding n
// events. It returns the events that came from each peer.
func catchUpFrom(ctx context.Context, exe, rdir string, index int, peers []string, n uint64) (time.Duration, []uint64, error) {
	if _, err := devnet.PrepareRepo(rdir, catchupConfig()); err != nil {
		return 0, nil, err
	}
	d, _, err := startBenchDaemon(ctx, exe, rdir, index)
	if err != nil {
		return 0, nil, err
	}
	defer devnet.StopDaemons([]*devnet.Daemon{d})
	sock, err := repo.SocketPathOf(rdir)
	if err != nil {
		return 0, nil, err
	}
	cl := api.NewClient(sock)
	t0 := time.Now()
	for _, p := range peers {
		cctx, cancel := context.WithTimeout(ctx, devnet.DefaultUpTimeout)
		_, err := cl.Connect(cctx, p)
		cancel()
		if err != nil {
			return 0, nil, fmt.Errorf("connect to %s: %w", p, err)
		}
	}
	// The hellos started the catch-up (its peers joined it as each
	// completed hello); a sync from every peer joins it too and returns
	// when it ended, with what each peer brought.
	final, err := cl.SyncAll(ctx, nil)
	took := time.Since(t0)
	if err != nil {
		return took, nil, fmt.Errorf("catch-up: %w; see %s", err, filepath.Join(rdir, devnet.LogFileName))
	}
	cctx, cancel := context.WithTimeout(ctx, devnet.CallTimeout)
	st, err := cl.Status(cctx)
	cancel()
	if err != nil {
		return took, nil, err
	}
	if st.Events != n {
		return took, nil, fmt.Errorf("the catch-up ended with %d events of %d", st.Events, n)
	}
	from := make([]uint64, 0, len(final.Shares))
	for _, s := range final.Shares {
		from = append(from, s.Stored)
	}
	return took, from, nil
}
