package dashboard

import (
	"math"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// The history the dashboard draws: a sample of the node's metrics every
// SampleInterval, the last HistoryLength of them (an hour).
const (
	SampleInterval = 5 * time.Second
	HistoryLength  = 720
)

// Recorded are the metric families the history keeps, one series per
// label value (label: the label that tells the series apart; "" for a
// sum over every label). Counters are kept as rates per second, gauges as
// they are.
var Recorded = []struct{ Name, Label string }{
	{"wats_bandwidth_bytes_total", "direction"},
	{"wats_bandwidth_cap_bytes_per_second", "direction"},
	{"wats_blob_received_bytes_total", ""},
	{"wats_requests_accepted_total", ""},
	{"wats_requests_refused_total", "type"},
	{"wats_challenges_issued_total", ""},
	{"wats_challenges_solved_total", ""},
	{"wats_challenge_effort_bits", ""},
	{"wats_peers_banned_total", ""},
	{"wats_strangers_evicted_total", ""},
	{"wats_strangers_refused_total", ""},
	{"wats_streams_refused_total", ""},
	{"wats_challenges_failed_total", ""},
	{"wats_gossip_ignored_total", "reason"},
	{"wats_dht_requests_refused_total", ""},
	{"wats_events_stored_total", ""},
	{"wats_peers", ""},
}

// History is the last HistoryLength samples of the Recorded metrics. Its
// methods are safe for concurrent use.
type History struct {
	mu sync.Mutex
	// times are the samples' wall-clock times in Unix milliseconds, never
	// decreasing (a clock stepped back repeats the last), oldest first;
	// series are the values by series key, aligned with times (NaN where
	// a series had no value).
	times  []int64
	series map[string][]float64
	// last are the previous sample's counters by series key, and
	// lastMono its monotonic reading, for the rates.
	last     map[string]float64
	lastMono time.Duration
	sampled  bool
}

// NewHistory returns an empty History.
func NewHistory() *History {
	return &History{series: map[string][]float64{}, last: map[string]float64{}}
}

// Add records a sample of families taken at wall (the x axis) and mono
// (the monotonic clock: rates are over its elapsed time, so a wall clock
// stepped back or forward changes no rate). The first sample, a counter
// that went down and a sample whose mono did not advance have no rate
// (NaN); a counter new since the last sample (a label value counted for
// the first time) counts from 0.
func (h *History) Add(wall time.Time, mono time.Duration, families []*dto.MetricFamily) {
	values, counters := extract(families)
	h.mu.Lock()
	defer h.mu.Unlock()
	dt := (mono - h.lastMono).Seconds()
	row := make(map[string]float64, len(values))
	for k, v := range values {
		if !counters[k] {
			row[k] = v
			continue
		}
		// A counter the last sample lacked (a label value counted for
		// the first time) was 0 then.
		prev := h.last[k]
		h.last[k] = v
		if !h.sampled || dt <= 0 || v < prev {
			row[k] = math.NaN()
			continue
		}
		row[k] = (v - prev) / dt
	}
	h.lastMono, h.sampled = mono, true
	ms := wall.UnixMilli()
	if n := len(h.times); n > 0 && ms < h.times[n-1] {
		ms = h.times[n-1]
	}
	drop := len(h.times) >= HistoryLength
	if drop {
		h.times = h.times[1:]
	}
	h.times = append(h.times, ms)
	for k, s := range h.series {
		if drop {
			s = s[1:]
		}
		v, ok := row[k]
		if !ok {
			v = math.NaN()
		}
		h.series[k] = append(s, v)
	}
	for k, v := range row {
		if _, ok := h.series[k]; !ok { // a series new in this sample
			s := make([]float64, len(h.times)-1, HistoryLength)
			for i := range s {
				s[i] = math.NaN()
			}
			h.series[k] = append(s, v)
		}
	}
}

// View is the history as GET /api/history answers it: Times in Unix
// milliseconds, oldest first, and each series' values aligned with them
// (null: no value). Counters are rates per second.
type View struct {
	IntervalSeconds float64               `json:"interval_seconds"`
	Times           []int64               `json:"times"`
	Series          map[string][]*float64 `json:"series"`
}

// View returns a copy of the history.
func (h *History) View() View {
	h.mu.Lock()
	defer h.mu.Unlock()
	v := View{IntervalSeconds: SampleInterval.Seconds(), Times: append([]int64{}, h.times...), Series: make(map[string][]*float64, len(h.series))}
	for k, s := range h.series {
		out := make([]*float64, len(s))
		for i, x := range s {
			if !math.IsNaN(x) {
				out[i] = &x
			}
		}
		v.Series[k] = out
	}
	return v
}

// Key returns the series key of a Recorded family's value: its name, and
// ":" and the label's value when the family is split by a label.
func Key(name, labelValue string) string {
	if labelValue == "" {
		return name
	}
	return name + ":" + labelValue
}

// extract returns the Recorded series' values in families, and which of
// them are counters.
func extract(families []*dto.MetricFamily) (map[string]float64, map[string]bool) {
	byName := make(map[string]*dto.MetricFamily, len(families))
	for _, f := range families {
		byName[f.GetName()] = f
	}
	values, counters := map[string]float64{}, map[string]bool{}
	for _, r := range Recorded {
		f := byName[r.Name]
		if f == nil {
			continue
		}
		counter := f.GetType() == dto.MetricType_COUNTER
		for _, m := range f.GetMetric() {
			lv := ""
			if r.Label != "" {
				lv = labelValue(m, r.Label)
			}
			k := Key(r.Name, lv)
			switch {
			case m.GetCounter() != nil:
				values[k] += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				values[k] += m.GetGauge().GetValue()
			default:
				continue
			}
			counters[k] = counter
		}
	}
	return values, counters
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
