package blobs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/internal/scripttest"
)

// TestPlanScripts runs the step tests of testdata/plan.txt: each line is a
// command on one Backoff and one Plan and the output expected (see the
// file's header). The expectations were worked out by hand from ADR 0014.
func TestPlanScripts(t *testing.T) {
	s := &script{b: NewBackoff()}
	scripttest.Run(t, "testdata/plan.txt", 100, s.run)
}

// base is the time scripts count from; any fixed instant works.
var base = time.Date(2026, 10, 16, 12, 0, 0, 0, time.UTC)

type script struct {
	b  *Backoff
	pl *Plan
}

// scriptTime parses "@D" (a Go duration after base).
func scriptTime(s string) (time.Time, error) {
	d, ok := strings.CutPrefix(s, "@")
	if !ok {
		return time.Time{}, fmt.Errorf("time %q: want @DURATION", s)
	}
	dur, err := time.ParseDuration(d)
	if err != nil {
		return time.Time{}, err
	}
	return base.Add(dur), nil
}

func at(t time.Time) string { return "@" + t.Sub(base).String() }

func (s *script) skipState(p peer.ID, now time.Time) string {
	if skipped, until := s.b.Skipped(p, now); skipped {
		return "skipped until " + at(until)
	}
	return "not skipped"
}

// reason names why a plan ended, for the script.
func reason(err error) string {
	switch {
	case err == nil:
		return "success"
	case errors.Is(err, ErrSizeMismatch):
		return "size mismatch"
	case errors.Is(err, ErrStore):
		return "local store"
	case errors.Is(err, ErrAttempts):
		return "attempts used"
	case errors.Is(err, ErrFetchTimeout):
		return "time spent"
	case errors.Is(err, ErrNoProvider):
		return "no provider"
	}
	return "unexpected " + err.Error()
}

var errFake = errors.New("fake provider error")

// left lists the candidates of the plan not considered yet: "left A B",
// a guess as guess=G.
func (s *script) left() string {
	var names []string
	for _, c := range s.pl.cands[s.pl.next:] {
		if c.guess {
			names = append(names, "guess="+string(c.id))
		} else {
			names = append(names, string(c.id))
		}
	}
	return strings.TrimSpace("left " + strings.Join(names, " "))
}

func (s *script) run(f []string) (string, error) {
	if len(f) == 0 {
		return "", fmt.Errorf("empty command")
	}
	switch {
	case f[0] == "reset" && len(f) == 1:
		s.b, s.pl = NewBackoff(), nil
		return "ok", nil
	case f[0] == "fail" && len(f) == 3:
		now, err := scriptTime(f[2])
		if err != nil {
			return "", err
		}
		s.b.Failed(peer.ID(f[1]), now)
		return s.skipState(peer.ID(f[1]), now), nil
	case f[0] == "succeed" && len(f) == 2:
		s.b.Succeeded(peer.ID(f[1]))
		return "ok", nil
	case f[0] == "skipped" && len(f) == 3:
		now, err := scriptTime(f[2])
		if err != nil {
			return "", err
		}
		return s.skipState(peer.ID(f[1]), now), nil
	case f[0] == "len" && len(f) == 1:
		return fmt.Sprint(s.b.Len()), nil
	case f[0] == "prune" && len(f) == 2:
		now, err := scriptTime(f[1])
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%d dropped", s.b.Prune(now)), nil
	case f[0] == "plan" && len(f) >= 3:
		now, err := scriptTime(f[1])
		if err != nil {
			return "", err
		}
		first, ok := strings.CutPrefix(f[2], "first=")
		if !ok {
			return "", fmt.Errorf("want first=R or first=-")
		}
		if first == "-" {
			first = ""
		}
		src := Sources{First: peer.ID(first)}
		for _, h := range f[3:] {
			if g, ok := strings.CutPrefix(h, "guess="); ok {
				src.Guesses = append(src.Guesses, peer.ID(g))
			} else {
				src.Named = append(src.Named, peer.AddrInfo{ID: peer.ID(h)})
			}
		}
		s.pl = NewPlan(src, "self", s.b, now)
		var names []string
		for _, c := range s.pl.cands {
			names = append(names, string(c.id))
		}
		return "candidates " + strings.Join(names, " "), nil
	case f[0] == "route" && len(f) >= 1:
		if s.pl == nil {
			return "", fmt.Errorf("no plan yet")
		}
		var found []peer.AddrInfo
		for _, p := range f[1:] {
			found = append(found, peer.AddrInfo{ID: peer.ID(p)})
		}
		var added []string
		for _, ai := range s.pl.Route(found, "self") {
			added = append(added, string(ai.ID))
		}
		return fmt.Sprintf("added %d: %s; %s", len(added), strings.Join(added, " "), s.left()), nil
	case f[0] == "waiting" && len(f) == 1:
		if s.pl == nil {
			return "", fmt.Errorf("no plan yet")
		}
		return fmt.Sprint(s.pl.Waiting()), nil
	case f[0] == "next" && len(f) == 2:
		if s.pl == nil {
			return "", fmt.Errorf("no plan yet")
		}
		now, err := scriptTime(f[1])
		if err != nil {
			return "", err
		}
		p, deadline, ok := s.pl.Next(now)
		if !ok {
			return "over: " + reason(s.pl.Err()), nil
		}
		return fmt.Sprintf("%s until %s", string(p), at(deadline)), nil
	case f[0] == "report" && len(f) == 4:
		if s.pl == nil {
			return "", fmt.Errorf("no plan yet")
		}
		now, err := scriptTime(f[3])
		if err != nil {
			return "", err
		}
		var outcome error
		switch f[2] {
		case "ok":
		case "fail":
			outcome = errFake
		case "timeout":
			outcome = fmt.Errorf("fetch: %w", context.DeadlineExceeded)
		case "mismatch":
			outcome = fmt.Errorf("cid X: got 5 bytes, declared 4: %w", ErrSizeMismatch)
		case "store":
			outcome = fmt.Errorf("%w: disk full", ErrStore)
		case "canceled":
			outcome = fmt.Errorf("fetch: %w", context.Canceled)
		default:
			return "", fmt.Errorf("outcome %q: want ok, fail, timeout, mismatch, store or canceled", f[2])
		}
		p := peer.ID(f[1])
		s.pl.Report(p, outcome, now)
		state := "running"
		if s.pl.Done() {
			state = "over: " + reason(s.pl.Err())
		}
		return s.skipState(p, now) + "; " + state, nil
	}
	return "", fmt.Errorf("unknown command %q", strings.Join(f, " "))
}
