package limits

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/wats-network/wats/internal/scripttest"

	"github.com/wats-network/wats/core"
)

// TestAdmitScript runs the step tests of testdata/admit.txt: admission
// (Policy.Decide) on the states of named peers, one command a line (see the
// file's header). The expectations were worked out by hand from ADR 0014
// ("When", "What a solution buys") and ADR 0030 (tiers, misses).
func TestAdmitScript(t *testing.T) {
	s := &admitScript{}
	scripttest.Run(t, "testdata/admit.txt", 60, s.run)
}

// admitScript is the state of an admission script: the Policy, and each
// named peer's facts and State.
type admitScript struct {
	pl     *Policy
	facts  map[string]*Facts
	states map[string]*State
}

func (s *admitScript) run(f []string) (string, error) {
	if len(f) == 0 {
		return "", fmt.Errorf("empty command")
	}
	if f[0] != "reset" && s.pl == nil {
		return "", fmt.Errorf("start with reset")
	}
	switch f[0] {
	case "reset":
		return s.reset(f[1:])
	case "peer":
		if len(f) < 2 {
			return "", fmt.Errorf("peer NAME [tier=T] [solve=yes|no] [reputed=yes|no]")
		}
		fa := &Facts{}
		for _, kv := range f[2:] {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "tier":
				t, ok := parseTier(v)
				if !ok {
					return "", fmt.Errorf("bad tier %q", v)
				}
				fa.Tier = t
			case "solve":
				fa.CanSolve = v == "yes"
			case "reputed":
				fa.Reputed = v == "yes"
			default:
				return "", fmt.Errorf("unknown fact %q", k)
			}
		}
		s.facts[f[1]] = fa
		if s.states[f[1]] == nil {
			s.states[f[1]] = &State{}
		}
		return "ok", nil
	case "req":
		return s.req(f[1:])
	}
	return "", fmt.Errorf("unknown command %q", f[0])
}

// reset starts a new Policy from DefaultConfig with the overrides given
// (hello= sync= replicate= report= miss= suspect= valued= overload=
// challenge=on|off) and forgets every peer.
func (s *admitScript) reset(kvs []string) (string, error) {
	c := DefaultConfig()
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		if k == "challenge" {
			c.Challenge = v == "on"
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return "", fmt.Errorf("%s: %w", kv, err)
		}
		field := map[string]*int{"hello": &c.HelloPerMin, "sync": &c.SyncPerMin, "replicate": &c.ReplicatePerMin,
			"report": &c.ReportPerMin, "miss": &c.MissPerMin, "suspect": &c.SuspectPercent,
			"valued": &c.ValuedPercent, "overload": &c.OverloadInFlight}[k]
		if field == nil {
			return "", fmt.Errorf("unknown setting %q", k)
		}
		*field = n
	}
	pl, err := NewPolicy(c)
	if err != nil {
		return "", err
	}
	s.pl, s.facts, s.states = pl, map[string]*Facts{}, map[string]*State{}
	return "ok", nil
}

// req NAME KIND @T [class=C] [solved] [inflight=N] [xN] decides N
// requests (1 by default) at T and prints the decisions, runs of equal ones
// as "DECISION ×K", joined by "; ".
func (s *admitScript) req(f []string) (string, error) {
	if len(f) < 3 {
		return "", fmt.Errorf("req NAME KIND @T [class=C] [solved] [inflight=N] [xN]")
	}
	fa, st := s.facts[f[0]], s.states[f[0]]
	if fa == nil {
		return "", fmt.Errorf("no peer %q", f[0])
	}
	k, ok := core.ParseRequest(f[1])
	if !ok {
		return "", fmt.Errorf("bad kind %q", f[1])
	}
	now, err := scriptTime(f[2])
	if err != nil {
		return "", err
	}
	r := Request{Type: k, InFlight: 1}
	times := 1
	for _, a := range f[3:] {
		switch k, v, _ := strings.Cut(a, "="); {
		case a == "solved":
			r.Solved = true
		case k == "class":
			c, ok := map[string]Class{"hit": ClassHit, "miss": ClassMiss, "expected": ClassExpected}[v]
			if !ok {
				return "", fmt.Errorf("bad class %q", v)
			}
			r.Class = c
		case k == "inflight":
			if r.InFlight, err = strconv.Atoi(v); err != nil {
				return "", err
			}
		case strings.HasPrefix(a, "x"):
			if times, err = strconv.Atoi(a[1:]); err != nil || times < 1 {
				return "", fmt.Errorf("bad count %q", a)
			}
		default:
			return "", fmt.Errorf("unknown argument %q", a)
		}
	}
	var runs []string
	last, count := "", 0
	flush := func() {
		if count == 1 {
			runs = append(runs, last)
		} else if count > 1 {
			runs = append(runs, fmt.Sprintf("%s ×%d", last, count))
		}
	}
	for range times {
		d := s.pl.Decide(st, *fa, r, now)
		out := d.Verdict.String() + " " + d.Reason.String()
		if d.Verdict == Refuse && d.Reason != ReasonInvalid {
			out += " retry=" + d.RetryAfter.String()
		}
		if d.Pressure {
			out += " pressure"
		}
		if out != last {
			flush()
			last, count = out, 0
		}
		count++
	}
	flush()
	return strings.Join(runs, "; "), nil
}

func parseTier(s string) (Tier, bool) {
	for t := range Tier(NumTiers) {
		if t.String() == s {
			return t, true
		}
	}
	return 0, false
}

// TestTierOf: each tier's rule at and just past its threshold.
func TestTierOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    History
		want Tier
	}{
		{"never seen", History{}, TierNew},
		{"served only", History{Counts: core.Counts{Served: 1000}}, TierNew},
		{"15 misses, nothing served", History{Counts: core.Counts{Misses: SuspectMinBad - 1}}, TierNew},
		{"16 misses, nothing served", History{Counts: core.Counts{Misses: SuspectMinBad}}, TierSuspect},
		{"4 held streams", History{Counts: core.Counts{Timeouts: 4}}, TierSuspect},
		{"3 held streams", History{Counts: core.Counts{Timeouts: 3}}, TierNew},
		{"16 misses against 64 served", History{Counts: core.Counts{Misses: 16, Served: 64}}, TierNew},
		{"16 misses against 63 served", History{Counts: core.Counts{Misses: 16, Served: 63}}, TierSuspect},
		{"invalid and failed add up", History{Counts: core.Counts{Invalid: 8, Failed: 8}}, TierSuspect},
		{"persisted", History{Persisted: true}, TierNormal},
		{"gave an event, no record yet", History{Counts: core.Counts{Events: 1}}, TierNew},
		{"solved, no record yet", History{Counts: core.Counts{Solved: 1}}, TierNew},
		{"aged, 63 events", History{Counts: core.Counts{Events: ValuedEvents - 1}, Persisted: true, Aged: true}, TierNormal},
		{"aged, 64 events", History{Counts: core.Counts{Events: ValuedEvents}, Persisted: true, Aged: true}, TierValued},
		{"aged, 16 MiB - 1 of blobs", History{Counts: core.Counts{Bytes: ValuedBytes - 1}, Persisted: true, Aged: true}, TierNormal},
		{"aged, 16 MiB of blobs", History{Counts: core.Counts{Bytes: ValuedBytes}, Persisted: true, Aged: true}, TierValued},
		{"64 events, record younger than a day", History{Counts: core.Counts{Events: ValuedEvents}, Persisted: true}, TierNormal},
		{"64 events, not persisted", History{Counts: core.Counts{Events: ValuedEvents}}, TierNew},
		{"valued but abusive", History{Counts: core.Counts{Events: 100, Misses: 100}, Persisted: true, Aged: true}, TierSuspect},
	} {
		got, why := TierOf(tc.h), Explain(tc.h)
		if got != tc.want || !strings.HasPrefix(why, got.String()+":") {
			t.Errorf("%s: %v (%q), want %v", tc.name, got, why, tc.want)
		}
	}
	young := History{Counts: core.Counts{Events: ValuedEvents}, Persisted: true}
	if why := Explain(young); !strings.Contains(why, "less than a day") {
		t.Errorf("Explain(%+v) = %q: does not say why it is not valued", young, why)
	}
}

// TestTierOfAllocates: TierOf is on the request path; it allocates nothing.
func TestTierOfAllocates(t *testing.T) {
	h := History{Counts: core.Counts{Misses: 20, Served: 3}}
	if n := testing.AllocsPerRun(100, func() { _ = TierOf(h) }); n != 0 {
		t.Errorf("TierOf allocates %v times a call, want 0", n)
	}
}

// TestPolicyRates: the tiers' rates are the percentages of ADR 0014's, at
// least one a minute; unlimited stays unlimited.
func TestPolicyRates(t *testing.T) {
	c := DefaultConfig()
	c.ReportPerMin = 0
	pl, err := NewPolicy(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		t    Tier
		k    core.Request
		want int
	}{
		{TierNew, core.Sync, 600}, {TierNormal, core.Sync, 600}, {TierSuspect, core.Sync, 60},
		{TierValued, core.Sync, 1200}, {TierSuspect, core.Replicate, 12}, {TierValued, core.Hello, 120},
		{TierSuspect, core.CrashReport, 0}, {TierValued, core.CrashReport, 0},
	} {
		if got := pl.Rate(tc.t, tc.k).PerMin(); got != tc.want {
			t.Errorf("%v %v: %d a minute, want %d", tc.t, tc.k, got, tc.want)
		}
	}
	if got := pl.MissRate(TierSuspect).PerMin(); got != 3 {
		t.Errorf("suspect misses: %d a minute, want 3", got)
	}
	c = DefaultConfig()
	c.ReportPerMin, c.SuspectPercent = 5, 1
	if pl, _ = NewPolicy(c); pl.Rate(TierSuspect, core.CrashReport).PerMin() != 1 {
		t.Errorf("5 a minute at 1%%: %v, want at least 1 a minute", pl.Rate(TierSuspect, core.CrashReport))
	}
	c = DefaultConfig()
	c.SyncPerMin, c.ValuedPercent = MaxPerMin, MaxValuedPercent
	if pl, _ = NewPolicy(c); pl.Rate(TierValued, core.Sync).PerMin() != MaxPerMin {
		t.Errorf("the valued ceiling passed MaxPerMin: %v", pl.Rate(TierValued, core.Sync))
	}
}

// BenchmarkAdmit is the admission check of a known peer: one shard lock,
// the GCRA on two copies, no allocation.
func BenchmarkAdmit(b *testing.B) {
	tb, err := NewTable(DefaultConfig(), nil)
	if err != nil {
		b.Fatal(err)
	}
	p := testPeers(1)[0]
	f := Facts{Tier: TierNormal, CanSolve: true}
	r := Request{Type: core.Sync, InFlight: 1}
	b.ReportAllocs()
	now := int64(0)
	for b.Loop() {
		now += int64(200 * 1000 * 1000) // 5 a second: always within the rate
		tb.Admit(p, f, r, now)
	}
}

// BenchmarkAdmitVsRate is the admission check against its anchor in the
// same run: golang.org/x/time/rate's Limiter, looked up per peer the way a
// node would keep one per peer (a sync.Map), both deciding an allowed
// request of one known peer. docs/performance.md runs it five times,
// alternating, and reports the ratio.
func BenchmarkAdmitVsRate(b *testing.B) {
	p := testPeers(1)[0]
	b.Run("wats", func(b *testing.B) {
		tb, err := NewTable(DefaultConfig(), nil)
		if err != nil {
			b.Fatal(err)
		}
		f := Facts{Tier: TierNormal, CanSolve: true}
		r := Request{Type: core.Sync, InFlight: 1}
		b.ReportAllocs()
		now := int64(0)
		for b.Loop() {
			now += int64(100 * time.Millisecond) // 10 a second: 600 a minute
			if tb.Admit(p, f, r, now).Verdict != Serve {
				b.Fatal("refused")
			}
		}
	})
	b.Run("wats-held", func(b *testing.B) {
		tb, err := NewTable(DefaultConfig(), nil)
		if err != nil {
			b.Fatal(err)
		}
		h := tb.Hold(p, 0) // a connected peer's state (peers.Table)
		f := Facts{Tier: TierNormal, CanSolve: true}
		r := Request{Type: core.Sync, InFlight: 1}
		b.ReportAllocs()
		now := int64(0)
		for b.Loop() {
			now += int64(100 * time.Millisecond)
			if h.Admit(f, r, now).Verdict != Serve {
				b.Fatal("refused")
			}
		}
	})
	b.Run("x-time-rate", func(b *testing.B) {
		var limiters sync.Map
		limiters.Store(p, rate.NewLimiter(rate.Limit(600.0/60), 150))
		b.ReportAllocs()
		now := time.Unix(0, 0)
		for b.Loop() {
			now = now.Add(100 * time.Millisecond)
			v, _ := limiters.Load(p)
			if !v.(*rate.Limiter).AllowN(now, 1) {
				b.Fatal("refused")
			}
		}
	})
}
