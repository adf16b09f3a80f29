package peers

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wats-network/wats/internal/scripttest"
)

// TestSlotsScript steps through testdata/slots.txt.
func TestSlotsScript(t *testing.T) {
	var (
		s     *Slots[string]
		facts map[string]Stranger
		mono  time.Duration
	)
	// reading is a monotonic reading: ns, or a duration ("1s").
	reading := func(v string) int64 {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
		d, _ := time.ParseDuration(v)
		return int64(d)
	}
	scripttest.Run(t, "testdata/slots.txt", 30, func(f []string) (string, error) {
		switch f[0] {
		case "slots":
			n, err := strconv.Atoi(f[1])
			if err != nil {
				return "", err
			}
			facts, mono = map[string]Stranger{}, 0
			s = NewSlots(n, func(k string, _ time.Duration) Stranger { return facts[k] })
			return fmt.Sprintf("%d slots, slack %d", s.N(), s.Slack()), nil
		case "peer":
			var st Stranger
			for _, kv := range f[2:] {
				k, v, _ := strings.Cut(kv, "=")
				n := reading(v)
				switch k {
				case "suspect":
					st.Suspect = true
				case "reputed":
					st.Reputed = true
				case "served":
					st.Served = uint32(n)
				case "connected":
					st.ConnectedAt = n
				case "active":
					st.LastActive = n
				case "paid":
					st.Paid, st.PaidAt = true, n
				default:
					return "", fmt.Errorf("unknown fact %q", k)
				}
			}
			facts[f[1]] = st
			return "ok", nil
		case "at":
			mono = time.Duration(reading(f[1]))
			return "ok", nil
		case "take":
			victim, evicted := s.Take(f[1], mono)
			if evicted {
				return "evict " + victim, nil
			}
			return "ok", nil
		case "drop":
			s.Drop(f[1])
			return "ok", nil
		case "gone":
			s.Gone(f[1])
			return "ok", nil
		case "admit":
			if s.Admit() {
				return "room", nil
			}
			return "busy", nil
		case "held":
			var held []string
			for k := range facts {
				if s.Holds(k) {
					held = append(held, k)
				}
			}
			slices.Sort(held)
			return fmt.Sprintf("%d %v", s.Len(), held), nil
		case "order":
			return fmt.Sprint(s.Order(f[1:], mono)), nil
		}
		return "", fmt.Errorf("unknown command %q", f[0])
	})
}

// TestReputed: met in an earlier run, or a first hello at least
// core.ReputationAge before: at the bound and just before it, and a first
// hello at the node's first instant (reading 0, stored as 1).
func TestReputed(t *testing.T) {
	const age = 10 * time.Minute
	for _, c := range []struct {
		met        bool
		firstHello int64
		mono       time.Duration
		want       bool
	}{
		{true, 0, 0, true},
		{false, 0, time.Hour, false},
		{false, 1, age, true},
		{false, 1, age - 1, false},
		{false, int64(time.Minute) + 1, time.Minute + age, true},
		{false, int64(time.Minute) + 1, time.Minute + age - 1, false},
		// A clock that stepped back before the first hello.
		{false, int64(time.Hour) + 1, time.Minute, false},
	} {
		if got := Reputed(c.met, c.firstHello, c.mono); got != c.want {
			t.Errorf("Reputed(%v, %d, %v) = %v, want %v", c.met, c.firstHello, c.mono, got, c.want)
		}
	}
}
