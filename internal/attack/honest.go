package attack

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/wats-network/wats/challenge"
	"github.com/wats-network/wats/proto"
)

// Honest is the load of honest peers a scenario is measured with: Peers
// long-lived peers, each a sync every SyncEvery and a hello every
// HelloEvery, and a never-seen peer every NewcomerEvery that must complete
// hello and one sync. They advertise "challenge" and solve what they are
// given, as wats nodes do.
type Honest struct {
	Peers         int
	SyncEvery     time.Duration
	HelloEvery    time.Duration
	NewcomerEvery time.Duration
	// Warmup is how long the peers run before they are measured (and
	// before newcomers come): time for the node to sync their events and
	// give them records, as it would have long before an attack.
	Warmup time.Duration
}

// DefaultHonest is the honest load of ADR 0030's targets: 10 peers, a sync
// every 500 ms and a hello every 10 s each, and a newcomer every second (so
// that a 30 s run measures 30 of them).
var DefaultHonest = Honest{Peers: 10, SyncEvery: 500 * time.Millisecond, HelloEvery: 10 * time.Second, NewcomerEvery: time.Second,
	Warmup: 3 * time.Second}

// HonestResult is what the honest peers saw.
type HonestResult struct {
	// Requests and Served count the honest peers' requests and those
	// answered with what they asked for (after solving a challenge if one
	// came); Challenged counts those that met a challenge.
	Requests   int `json:"requests"`
	Served     int `json:"served"`
	Challenged int `json:"challenged"`
	// P50 and P99 are the latencies of the served requests, in ms.
	P50ms float64 `json:"p50_ms"`
	P99ms float64 `json:"p99_ms"`
	// Newcomers and NewcomersServed count the never-seen peers and those
	// that completed hello and one sync.
	Newcomers       int `json:"newcomers"`
	NewcomersServed int `json:"newcomers_served"`
	// Failures counts the requests not served, by why: "dial" (no
	// connection), "refused", "error" (an error response), "stream" (the
	// stream failed: reset, timed out), "challenge" (a challenge not
	// solved or not accepted).
	Failures map[string]int `json:"failures,omitempty"`
	// NewcomerFailures counts the newcomers not served, by why: "dial",
	// "hello " or "sync " and the request's failure.
	NewcomerFailures map[string]int `json:"newcomer_failures,omitempty"`
}

// ServedPct is the honest requests served, in percent.
func (r HonestResult) ServedPct() float64 { return pct(r.Served, r.Requests) }

// NewcomersPct is the newcomers served, in percent.
func (r HonestResult) NewcomersPct() float64 { return pct(r.NewcomersServed, r.Newcomers) }

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// honestStats gathers the outcomes of honest requests.
type honestStats struct {
	mu       sync.Mutex
	res      HonestResult
	lat      []time.Duration
	warming  bool
	stopping bool
}

func (s *honestStats) request(why string, challenged bool, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping || s.warming {
		return // cut short by the end of the run, or before it: not measured
	}
	s.res.Requests++
	if challenged {
		s.res.Challenged++
	}
	if why == "" {
		s.res.Served++
		s.lat = append(s.lat, d)
		return
	}
	if s.res.Failures == nil {
		s.res.Failures = map[string]int{}
	}
	s.res.Failures[why]++
}

func (s *honestStats) newcomer(why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.res.Newcomers++
	if why == "" {
		s.res.NewcomersServed++
		return
	}
	if s.res.NewcomerFailures == nil {
		s.res.NewcomerFailures = map[string]int{}
	}
	s.res.NewcomerFailures[why]++
}

func (s *honestStats) result() HonestResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopping = true
	r := s.res
	slices.Sort(s.lat)
	at := func(q float64) float64 {
		if len(s.lat) == 0 {
			return 0
		}
		i := min(len(s.lat)-1, int(q*float64(len(s.lat))))
		return float64(s.lat[i]) / float64(time.Millisecond)
	}
	r.P50ms, r.P99ms = at(0.50), at(0.99)
	return r
}

// RunHonest runs the honest load h against t until ctx ends, and returns
// what it saw after h.Warmup; warm is closed when the warmup ends (the
// caller starts its attack then).
func RunHonest(ctx context.Context, t Target, h Honest, warm chan<- struct{}) HonestResult {
	st := &honestStats{warming: true}
	var wg sync.WaitGroup
	for range h.Peers {
		wg.Go(func() { honestPeer(ctx, t, h, st) })
	}
	Pause(ctx, h.Warmup)
	st.mu.Lock()
	st.warming = false
	st.mu.Unlock()
	if warm != nil {
		close(warm)
	}
	var nwg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(h.NewcomerEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				// A newcomer that arrived runs to its end (within
				// requestTimeout a request), after the run too: it is
				// measured whole.
				nwg.Go(func() { st.newcomer(newcomer(context.WithoutCancel(ctx), t)) })
			}
		}
	})
	<-ctx.Done()
	wg.Wait()
	nwg.Wait()
	return st.result()
}

// honestPeer is one long-lived honest peer: it has events of its own
// (which the node syncs after its hello, and which earn it a record: it is
// a peer that showed value), and sends hello, then a sync every SyncEvery
// and a hello every HelloEvery; it dials again if the node drops it (which
// counts against the node only as the requests it failed).
func honestPeer(ctx context.Context, t Target, h Honest, st *honestStats) {
	id, err := NewIdentity()
	if err != nil {
		return
	}
	events, err := id.Events(2)
	if err != nil {
		return
	}
	hello := honestHello(t)
	hello.Head = 2
	serve := responder(hello, events)
	var c *Conn
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	do := func(m proto.Message) {
		start := time.Now()
		if c == nil || c.IsClosed() {
			if c, err = id.Dial(ctx, t, serve); err != nil {
				c = nil
				if ctx.Err() == nil {
					st.request("dial", false, 0)
				}
				return
			}
		}
		why, challenged := ask(ctx, c, t, m)
		if ctx.Err() != nil {
			return // cut short by the end of the run
		}
		st.request(why, challenged, time.Since(start))
	}
	syncs := time.NewTicker(h.SyncEvery)
	defer syncs.Stop()
	hellos := time.NewTicker(h.HelloEvery)
	defer hellos.Stop()
	do(hello)
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
			return
		case <-syncs.C:
			do(&proto.SyncRequest{After: 0, Limit: 64})
		case <-hellos.C:
			do(hello)
		}
	}
}

// newcomer is a never-seen peer: it reports "" if it completed hello and
// one sync, else why not.
func newcomer(ctx context.Context, t Target) string {
	id, err := NewIdentity()
	if err != nil {
		return "identity"
	}
	dctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	c, err := id.Dial(dctx, t, responder(honestHello(t), nil))
	if err != nil {
		return "dial"
	}
	defer c.Close()
	if why, _ := ask(ctx, c, t, honestHello(t)); why != "" {
		return "hello " + why
	}
	if why, _ := ask(ctx, c, t, &proto.SyncRequest{After: 0, Limit: 64}); why != "" {
		return "sync " + why
	}
	return ""
}

// honestHello is an honest client's hello: the target's network, the
// challenge feature.
func honestHello(t Target) *proto.Hello {
	return &proto.Hello{Version: proto.Version, Network: t.Network, Agent: "wats-honest",
		Features: []string{proto.FeatureChallenge}, Listen: []string{}, Head: 0}
}

// ask sends m and, if it is challenged, solves and resubmits it once, as a
// wats node does (proto.CallSolving). why is "" if it was served in the
// end, else why not (see HonestResult.Failures).
func ask(ctx context.Context, c *Conn, t Target, m proto.Message) (why string, challenged bool) {
	resp, err := c.Request(ctx, m, nil)
	if err == nil && resp.Challenge != nil {
		challenged = true
		sol, serr := solve(ctx, c, t, resp.Challenge)
		if serr != nil {
			return "challenge", true
		}
		resp, err = c.Request(ctx, m, sol)
	}
	switch {
	case err != nil:
		return "stream", challenged
	case resp.Hello != nil || resp.Sync != nil || resp.Replicate != nil || resp.CrashReport != nil:
		return "", challenged
	case resp.Refused != nil:
		return "refused", challenged
	case resp.Challenge != nil:
		return "challenge", challenged
	}
	return "error", challenged
}

// solve solves a challenge of the target's for c's identity.
func solve(ctx context.Context, c *Conn, t Target, ch *proto.Challenge) (*proto.Solution, error) {
	pub, err := t.ID.ExtractPublicKey()
	if err != nil {
		return nil, err
	}
	raw, err := pub.Raw()
	if err != nil || len(raw) != 32 || pub.Type() != crypto.Ed25519 {
		return nil, errRefused
	}
	sol, err := challenge.SolveChallenge(ctx, challenge.Challenge{Alg: ch.Alg, Seed: ch.Seed, Effort: ch.Effort, Expires: ch.Expires},
		c.id.Raw, [32]byte(raw), time.Now())
	if err != nil {
		return nil, err
	}
	return &proto.Solution{Alg: sol.Alg, Seed: sol.Seed, Nonce: sol.Nonce}, nil
}
