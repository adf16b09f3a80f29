package devnet

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/wats-network/wats/api"
)

// spread measures how fast the demo's events reach every node of `devnet
// run`: the publisher records when it published each event (published),
// and a tail of each node's log records when the event arrived there
// (arrived). The view shows, per node, how long the newest event took to
// reach it (LAG; "…" while it is on its way), and the slowest an event
// took to reach every node: what gossip does, in milliseconds, where the
// events counts alone show only that it is done.
type spread struct {
	mu sync.Mutex
	n  int
	// sent maps an event id to when it was published; got to when it
	// arrived at each node (zero: not yet).
	sent map[string]time.Time
	got  map[string][]time.Time
	// newest is the id of the event published last.
	newest string
	// slowest is the longest an event took to reach every node, and
	// reached how many events did.
	slowest time.Duration
	reached int
	// lastLags are the lags of the last newest event to reach every
	// node, shown until the next one is published.
	lastLags []time.Duration
}

func newSpread(n int) *spread {
	return &spread{n: n, sent: map[string]time.Time{}, got: map[string][]time.Time{}}
}

// maxSpreadEvents bounds the events a spread remembers; past it, the
// oldest are forgotten (a demo publishing for hours).
const maxSpreadEvents = 10_000

// published records that id was published at t.
func (s *spread) published(id string, t time.Time) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.sent) >= maxSpreadEvents {
		clear(s.sent)
		clear(s.got)
	}
	s.sent[id] = t
	s.newest = id
	s.check(id)
}

// arrived records that id reached node i at t.
func (s *spread) arrived(i int, id string, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.got[id]
	if g == nil {
		if len(s.got) >= maxSpreadEvents {
			return
		}
		g = make([]time.Time, s.n)
		s.got[id] = g
	}
	if g[i].IsZero() {
		g[i] = t
	}
	s.check(id)
}

// check counts id as reached once it is published and at every node.
// REQUIRES: s.mu held.
func (s *spread) check(id string) {
	sent, ok := s.sent[id]
	g := s.got[id]
	if !ok || g == nil {
		return
	}
	var last time.Time
	for _, t := range g {
		if t.IsZero() {
			return
		}
		if t.After(last) {
			last = t
		}
	}
	s.reached++
	s.slowest = max(s.slowest, last.Sub(sent))
	delete(s.sent, id)
	delete(s.got, id) // counted once
	if s.newest == id {
		s.newest = "" // every node has it: LAG shows the figures of lags
		s.lastLags = make([]time.Duration, s.n)
		for i, t := range g {
			s.lastLags[i] = max(0, t.Sub(sent))
		}
	}
}

// lags returns, per node, how long the newest event took to reach it:
// "…" while it is on its way, "-" before any event.
func (s *spread) lags() []string {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, s.n)
	for i := range out {
		switch {
		case s.newest != "":
			g := s.got[s.newest]
			if g == nil || g[i].IsZero() {
				out[i] = "…"
			} else {
				out[i] = lagText(max(0, g[i].Sub(s.sent[s.newest])))
			}
		case s.lastLags != nil:
			out[i] = lagText(s.lastLags[i])
		default:
			out[i] = "-"
		}
	}
	return out
}

// summary says how many events reached every node and the slowest.
func (s *spread) summary() string {
	if s == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reached == 0 {
		return ""
	}
	return fmt.Sprintf("%d events reached every node, the slowest in %s", s.reached, lagText(s.slowest))
}

func lagText(d time.Duration) string {
	if d < 10*time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return d.Round(time.Second).String()
}

// watch tails node i's log from its current head, recording arrivals,
// until ctx ends; a tail that fails is started again a second later.
func (s *spread) watch(ctx context.Context, i int, cl *api.Client) {
	for ctx.Err() == nil {
		st, err := cl.Status(ctx)
		if err == nil {
			_ = cl.Tail(ctx, st.Head, func(ev jsontext.Value) error {
				var e struct {
					ID string `json:"id"`
				}
				if json.Unmarshal(ev, &e) == nil {
					s.arrived(i, e.ID, time.Now())
				}
				return nil
			})
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}
