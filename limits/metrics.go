package limits

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wats-network/wats/core"
)

// Counts are the answers of Table.Admit for one request type since the
// Table was built.
type Counts struct {
	// Accepted counts requests served.
	Accepted uint64 `json:"accepted"`
	// Refused counts requests refused or challenged.
	Refused uint64 `json:"refused"`
}

// Snapshot is a copy of a Table's counters, for `wats diag` and the line
// logged at a clean shutdown. The per-type fields are named after the wire
// types; Of gives them by request type (core.Request). The counters are read one by one, not under
// one lock: each is exact, their sum may miss a request in flight.
type Snapshot struct {
	Hello       Counts `json:"hello"`
	Sync        Counts `json:"sync"`
	Replicate   Counts `json:"replicate"`
	CrashReport Counts `json:"crash_report"`

	// SharedAtCap counts the requests of untracked peers decided on the
	// shared newcomer budget because the Table was at its cap (see
	// Table.Admit); they are also in the counts above.
	SharedAtCap uint64 `json:"shared_at_cap"`

	// TrackedPeers is the number of peers whose state the Table keeps.
	TrackedPeers int `json:"tracked_peers"`
}

// Of returns the counts of k (zero for an invalid core.Request).
func (s Snapshot) Of(k core.Request) Counts {
	if p := s.of(k); p != nil {
		return *p
	}
	return Counts{}
}

func (s *Snapshot) of(k core.Request) *Counts {
	switch k {
	case core.Hello:
		return &s.Hello
	case core.Sync:
		return &s.Sync
	case core.Replicate:
		return &s.Replicate
	case core.CrashReport:
		return &s.CrashReport
	}
	return nil
}

// String formats s on one line for logs:
// "hello 15/2 sync 150/0 replicate 0/0 crash_report 0/0 (accepted/refused), 0 on the shared budget at cap, 3 peers tracked".
func (s Snapshot) String() string {
	var b strings.Builder
	for _, k := range core.Requests() {
		c := s.Of(k)
		fmt.Fprintf(&b, "%s %d/%d ", k, c.Accepted, c.Refused)
	}
	fmt.Fprintf(&b, "(accepted/refused), %d on the shared budget at cap, %d peers tracked", s.SharedAtCap, s.TrackedPeers)
	return b.String()
}

// LogValue implements slog.LogValuer: a group with one "<type>" attribute
// per request type, "ACCEPTED/REFUSED" ("sync=150/0"), "tracked_peers",
// and "shared_at_cap" when it is not 0, e.g. for log.Info("requests",
// "limits", s): short enough that the line at shutdown reads at a glance
// (docs/adr/0051, second addendum); `wats diag --json` has every count
// as a number.
func (s Snapshot) LogValue() slog.Value {
	attrs := make([]slog.Attr, 0, core.NumRequests+2)
	for _, k := range core.Requests() {
		c := s.Of(k)
		attrs = append(attrs, slog.String(k.String(), fmt.Sprintf("%d/%d", c.Accepted, c.Refused)))
	}
	if s.SharedAtCap > 0 {
		attrs = append(attrs, slog.Uint64("shared_at_cap", s.SharedAtCap))
	}
	attrs = append(attrs, slog.Int("tracked_peers", s.TrackedPeers))
	return slog.GroupValue(attrs...)
}

// Snapshot returns the Table's counters and the number of tracked peers.
func (t *Table) Snapshot() Snapshot {
	var s Snapshot
	for i := range t.shards {
		sh := &t.shards[i]
		for _, k := range core.Requests() {
			c := s.of(k)
			c.Accepted += sh.accepted[k].Load()
			c.Refused += sh.refused[k].Load()
		}
		s.SharedAtCap += sh.atCap.Load()
	}
	s.TrackedPeers = t.Len()
	return s
}

// Collector returns a Prometheus collector of the Table's counters, read
// at each scrape (the hot path only adds to atomics). Metrics, none with a
// peer label (docs/design.md §12: labels come from small fixed sets):
//
//	wats_requests_accepted_total{type}  counter: requests within their limit
//	wats_requests_refused_total{type}   counter: requests over their limit (or at the cap)
//	wats_limits_shared_at_cap_total     counter: requests of untracked peers decided on the shared budget
//	wats_limits_tracked_peers           gauge:   peers whose state the Table keeps
//
// type is the wire type name: hello, sync, replicate, crash_report.
func (t *Table) Collector() prometheus.Collector {
	return &collector{
		t: t,
		accepted: prometheus.NewDesc("wats_requests_accepted_total",
			"/wats/1 requests within their per-peer rate limit (ADR 0014), by type.", []string{"type"}, nil),
		refused: prometheus.NewDesc("wats_requests_refused_total",
			"/wats/1 requests over their per-peer rate limit (ADR 0014), by type.", []string{"type"}, nil),
		atCap: prometheus.NewDesc("wats_limits_shared_at_cap_total",
			"Requests of untracked peers decided on the shared newcomer budget because the rate-limit table tracked as many peers as it may.", nil, nil),
		tracked: prometheus.NewDesc("wats_limits_tracked_peers",
			"Peers whose rate-limit state is kept (not all buckets full).", nil, nil),
	}
}

type collector struct {
	t                                 *Table
	accepted, refused, atCap, tracked *prometheus.Desc
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.accepted
	ch <- c.refused
	ch <- c.atCap
	ch <- c.tracked
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.t.Snapshot()
	for _, k := range core.Requests() {
		n := s.Of(k)
		ch <- prometheus.MustNewConstMetric(c.accepted, prometheus.CounterValue, float64(n.Accepted), k.String())
		ch <- prometheus.MustNewConstMetric(c.refused, prometheus.CounterValue, float64(n.Refused), k.String())
	}
	ch <- prometheus.MustNewConstMetric(c.atCap, prometheus.CounterValue, float64(s.SharedAtCap))
	ch <- prometheus.MustNewConstMetric(c.tracked, prometheus.GaugeValue, float64(s.TrackedPeers))
}
