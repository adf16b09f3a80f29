package attack

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/proto"
)

// The attacks, by name (ADR 0030 lists what each is met by).
const (
	// OneIDFlood: one id sends sync and hello requests as fast as 64
	// goroutines can.
	OneIDFlood = "one-id-flood"
	// Sybil: Rate fresh ids a second connect, hold Hold, and leave.
	Sybil = "sybil"
	// SybilHello: the same, each saying hello first.
	SybilHello = "sybil-hello"
	// SybilSync: the same, each saying hello and then asking for a sync
	// page, as a newcomer does: a handshake and a stranger's first
	// requests, all of them served.
	SybilSync = "sybil-sync"
	// HoardUnnegotiated: IDs ids each keep as many streams open as the
	// node lets them, never naming a protocol; a stream the node resets is
	// opened again, a connection it closes dialled again.
	HoardUnnegotiated = "hoard-unnegotiated"
	// HoardPrefix: the same with /wats/1 streams that send one byte of a
	// length prefix and stall.
	HoardPrefix = "hoard-prefix"
	// BadSolutions: four ids that advertise "challenge" flood requests and
	// answer every challenge with a solution that does not verify.
	BadSolutions = "bad-solutions"
)

// Attacks lists the attack names Attack knows.
var Attacks = []string{OneIDFlood, Sybil, SybilHello, SybilSync, HoardUnnegotiated, HoardPrefix, BadSolutions}

// Options tune an attack.
type Options struct {
	// IDs is the number of ids of a hoarding attack.
	IDs int
	// Rate is the fresh ids a second of a Sybil attack; Hold how long each
	// keeps its connection.
	Rate int
	Hold time.Duration
	// PerID is how many streams each hoarding id tries to hold.
	PerID int
	// Sources, if set, are the local IP addresses the attacker's ids dial
	// from, each new id from the next (cycled): an address per id, as on
	// the internet, where libp2p's per-IP connection limits apply (they
	// exempt loopback). Nil: the system's choice.
	Sources []net.IP
	// CID is the root of a blob the node holds, whose blocks the block
	// transfer's attacks ask for (blocks.go).
	CID string
}

// Stats count what an attacker did.
type Stats struct {
	IDs    int64 `json:"ids"`    // identities made
	Conns  int64 `json:"conns"`  // connections that completed the handshake
	Failed int64 `json:"failed"` // dials that failed (refused, reset)
	// Cut counts the fresh ids (the Sybils' attacks) still at work when
	// the run ended: dialling, asking or holding their connection. A dial
	// the end cut off is not counted as failed.
	Cut      int64 `json:"cut,omitempty"`
	Requests int64 `json:"requests"` // requests sent
	Answered int64 `json:"answered"` // requests served
	Streams  int64 `json:"streams"`  // streams opened to hold
	Reset    int64 `json:"reset"`    // of those, reset by the node
	// Bytes counts the bytes of blocks the node sent the attacker (the
	// block transfer's attacks), or of the id lists it read
	// (proto.ListIDBytes an id: the attacks on id lists).
	Bytes int64 `json:"bytes,omitempty"`
	// Error says why an attack could not start (the block transfer's
	// attacks: the blob's blocks could not be listed).
	Error string `json:"error,omitempty"`
}

type stats struct {
	ids, conns, failed, cut, requests, answered, streams, reset atomic.Int64
	bytes                                                       atomic.Int64
	err                                                         atomic.Value // string
	// sources are Options.Sources; next picks the next one.
	sources []net.IP
	next    atomic.Uint64
}

// newIdentity makes a fresh identity of the attacker's, dialling from the
// next of its sources (Options.Sources), and counts it.
func (s *stats) newIdentity() (*Identity, error) {
	var src net.IP
	if len(s.sources) > 0 {
		src = s.sources[(s.next.Add(1)-1)%uint64(len(s.sources))]
	}
	id, err := NewIdentityFrom(src)
	if err == nil {
		s.ids.Add(1)
	}
	return id, err
}

func (s *stats) snapshot() Stats {
	e, _ := s.err.Load().(string)
	return Stats{IDs: s.ids.Load(), Conns: s.conns.Load(), Failed: s.failed.Load(), Cut: s.cut.Load(), Requests: s.requests.Load(),
		Answered: s.answered.Load(), Streams: s.streams.Load(), Reset: s.reset.Load(), Bytes: s.bytes.Load(), Error: e}
}

// setErr records why the attack could not run (Stats.Error).
func (s *stats) setErr(err error) { s.err.Store(err.Error()) }

// Attack runs the named attack on t until ctx ends, and returns what the
// attacker did.
func Attack(ctx context.Context, name string, t Target, o Options) (Stats, error) {
	st := &stats{sources: o.Sources}
	o.IDs = max(o.IDs, 1)
	o.Rate = max(o.Rate, 1)
	if o.PerID <= 0 {
		o.PerID = 32
	}
	switch name {
	case OneIDFlood:
		flood(ctx, t, st, 1, 64, false)
	case BadSolutions:
		flood(ctx, t, st, 4, 16, true)
	case Sybil, SybilHello, SybilSync:
		sybils(ctx, t, o, name, st)
	case HoardUnnegotiated, HoardPrefix:
		hoard(ctx, t, o, name == HoardPrefix, st)
	case FingerprintFlood, FingerprintFloodOpen, FingerprintSybil, IDsPages,
		IDListsFlood, IDListsSmall, IDListsOpen, IDListsSybil, IDListsHold: // sync by ids (syncids.go)
		syncIDsAttack(ctx, name, t, o, st)
	default:
		if !extraAttack(ctx, name, t, o, st) {
			return Stats{}, fmt.Errorf("attack: unknown attack %q; known: %s", name, strings.Join(Attacks, ", "))
		}
	}
	return st.snapshot(), nil
}

// flood is ids ids, each with workers goroutines sending sync requests (a
// hello every 16th) as fast as they are answered; with bad, they advertise
// "challenge" and answer each challenge with a nonce that does not solve it.
func flood(ctx context.Context, t Target, st *stats, ids, workers int, bad bool) {
	var wg sync.WaitGroup
	for range ids {
		wg.Go(func() {
			id, err := st.newIdentity()
			if err != nil {
				return
			}
			var mu sync.Mutex
			var c *Conn
			conn := func() *Conn {
				mu.Lock()
				defer mu.Unlock()
				if c == nil || c.IsClosed() {
					nc, err := id.Dial(ctx, t, nil)
					if err != nil {
						st.failed.Add(1)
						return nil
					}
					st.conns.Add(1)
					c = nc
				}
				return c
			}
			defer func() {
				if c != nil {
					c.Close()
				}
			}()
			if c := conn(); c != nil {
				_, _ = c.Request(ctx, c.Hello(bad), nil)
			}
			var fwg sync.WaitGroup
			for w := range workers {
				fwg.Go(func() {
					for i := 0; ctx.Err() == nil; i++ {
						c := conn()
						if c == nil {
							Pause(ctx, 10*time.Millisecond)
							continue
						}
						var m proto.Message = &proto.SyncRequest{After: 0, Limit: core.MaxPageEvents}
						if (i+w)%16 == 0 {
							m = c.Hello(bad)
						}
						st.requests.Add(1)
						resp, err := c.Request(ctx, m, nil)
						if err != nil {
							continue
						}
						if bad && resp.Challenge != nil {
							st.requests.Add(1)
							resp, err = c.Request(ctx, m, &proto.Solution{Alg: resp.Challenge.Alg, Seed: resp.Challenge.Seed, Nonce: strconv.Itoa(i)})
							if err != nil {
								continue
							}
						}
						if resp.Sync != nil || resp.Hello != nil {
							st.answered.Add(1)
						}
					}
				})
			}
			fwg.Wait()
		})
	}
	wg.Wait()
}

// sybils makes o.Rate fresh ids a second; each connects, says hello
// (SybilHello, SybilSync) and asks for a sync page (SybilSync), keeps its
// connection o.Hold, and leaves. At most 8,192 are in flight.
func sybils(ctx context.Context, t Target, o Options, name string, st *stats) {
	atRate(ctx, o.Rate, 8192, func() { sybil(ctx, t, o.Hold, name != Sybil, name == SybilSync, st) })
}

// atRate runs f rate times a second, each in a goroutine of its own, at
// most inFlight at once (past that, a run is skipped: the attacker is
// saturated), until ctx ends; it returns once the runs have.
func atRate(ctx context.Context, rate, inFlight int, f func()) {
	sem := make(chan struct{}, inFlight)
	var wg sync.WaitGroup
	defer wg.Wait()
	// A batch every 10 ms, so that high rates need no fine timer.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	start, made := time.Now(), 0
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			due := int(now.Sub(start).Seconds()*float64(rate)) - made
			for range due {
				made++
				select {
				case sem <- struct{}{}:
				default:
					continue
				}
				wg.Go(func() {
					defer func() { <-sem }()
					f()
				})
			}
		}
	}
}

func sybil(ctx context.Context, t Target, hold time.Duration, hello, sync bool, st *stats) {
	withFresh(ctx, t, st, func(dctx context.Context, c *Conn) {
		if hello {
			st.requests.Add(1)
			if resp, err := c.Request(dctx, c.Hello(true), nil); err == nil && resp.Hello != nil {
				st.answered.Add(1)
			} else {
				sync = false
			}
		}
		if sync {
			st.requests.Add(1)
			if resp, err := c.Request(dctx, &proto.SyncRequest{After: 0, Limit: core.MaxPageEvents}, nil); err == nil && resp.Sync != nil {
				st.answered.Add(1)
			}
		}
		Pause(ctx, hold)
	})
}

// withFresh runs f with a fresh id's connection to t (freshConn), within
// requestTimeout (f's ctx), and closes it after; nothing when the dial
// fails. An id still at work when ctx (the run) ends is counted as cut.
func withFresh(ctx context.Context, t Target, st *stats, f func(ctx context.Context, c *Conn)) {
	dctx, cancel := context.WithTimeoutCause(ctx, requestTimeout, errRequestTimeout)
	defer cancel()
	defer func() {
		if ctx.Err() != nil {
			st.cut.Add(1)
		}
	}()
	c, _ := freshConn(dctx, t, st)
	if c == nil {
		return
	}
	defer c.Close()
	f(dctx, c)
}

// freshConn makes a fresh id and connects it to t, counting both; nil
// when the dial fails, counted as failed unless the run's end cut it off
// (ctx ended, and not at errRequestTimeout).
func freshConn(ctx context.Context, t Target, st *stats) (*Conn, *Identity) {
	id, err := st.newIdentity()
	if err != nil {
		return nil, nil
	}
	c, err := id.Dial(ctx, t, nil)
	if err != nil {
		if cause := context.Cause(ctx); cause == nil || cause == errRequestTimeout {
			st.failed.Add(1)
		}
		return nil, nil
	}
	st.conns.Add(1)
	return c, id
}

// hoard is o.IDs ids, each holding up to o.PerID streams that never name a
// protocol (prefix false) or /wats/1 streams stalled after one byte of a
// length prefix (prefix true); a reset stream is opened again, a closed
// connection dialled again.
func hoard(ctx context.Context, t Target, o Options, prefix bool, st *stats) {
	holders(ctx, t, o.IDs, o.PerID, 100*time.Millisecond, st, func(c *Conn) { holdStream(ctx, c, prefix, st) })
}

// holders is ids fresh ids, each connected (dialled again when the node
// closes its connection, after retry when a dial fails) and running hold
// perID times at once on its connection, until ctx ends.
func holders(ctx context.Context, t Target, ids, perID int, retry time.Duration, st *stats, hold func(*Conn)) {
	readyHolders(ctx, t, ids, perID, retry, st, nil, func(c *Conn, _ int) { hold(c) })
}

// readyHolders is holders whose connections are made ready first: one
// that ready turns down is closed and, after retry, dialled again. hold
// is told the number (0..perID-1) of its worker on the connection.
func readyHolders(ctx context.Context, t Target, ids, perID int, retry time.Duration, st *stats,
	ready func(*Conn) bool, hold func(c *Conn, w int)) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for range ids {
		wg.Go(func() {
			id, err := st.newIdentity()
			if err != nil {
				return
			}
			for ctx.Err() == nil {
				c, err := id.Dial(ctx, t, nil)
				if err != nil {
					st.failed.Add(1)
					Pause(ctx, retry)
					continue
				}
				st.conns.Add(1)
				if ready != nil && !ready(c) {
					c.Close()
					Pause(ctx, retry)
					continue
				}
				var swg sync.WaitGroup
				for w := range perID {
					swg.Go(func() { hold(c, w) })
				}
				swg.Wait()
				c.Close()
			}
		})
	}
}

// holdStream keeps one stream of c held until ctx ends or c closes,
// opening it again each time the node resets it.
func holdStream(ctx context.Context, c *Conn, prefix bool, st *stats) {
	buf := make([]byte, 256)
	for ctx.Err() == nil && !c.IsClosed() {
		var s network.MuxedStream
		var err error
		if prefix {
			s, err = c.OpenProtocol(ctx, proto.ID)
			if err == nil {
				_, err = s.Write([]byte{0x80})
			}
		} else {
			s, err = c.OpenRaw(ctx)
		}
		if err != nil {
			Pause(ctx, 10*time.Millisecond)
			continue
		}
		st.streams.Add(1)
		stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
		for {
			if _, err := s.Read(buf); err != nil {
				break
			}
		}
		stop()
		st.reset.Add(1)
		_ = s.Reset()
	}
}

// Pause waits d or until ctx ends.
func Pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
