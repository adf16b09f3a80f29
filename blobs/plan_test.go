package blobs

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/core"
)

func ids(n int, prefix string) []peer.ID {
	out := make([]peer.ID, n)
	for i := range out {
		out[i] = peer.ID(fmt.Sprint(prefix, i))
	}
	return out
}

// infos are ids as providers without addresses.
func infos(ids []peer.ID) []peer.AddrInfo {
	out := make([]peer.AddrInfo, len(ids))
	for i, id := range ids {
		out[i] = peer.AddrInfo{ID: id}
	}
	return out
}

// hinted are Sources naming ids, newest first.
func hinted(ids []peer.ID) Sources { return Sources{Named: infos(ids)} }

// candIDs are the ids of pl's candidates, in order.
func candIDs(pl *Plan) []peer.ID {
	out := make([]peer.ID, len(pl.cands))
	for i, c := range pl.cands {
		out[i] = c.id
	}
	return out
}

// TestPlanHints: duplicates and empty ids are dropped, the first core.MaxHintsPerBlob
// distinct hints (the newest) are kept, the requester comes first and does
// not count among them.
func TestPlanHints(t *testing.T) {
	hints := append([]peer.ID{"", "h0", "h0", "r"}, ids(20, "h")...)
	pl := NewPlan(Sources{First: "r", Named: infos(hints)}, "", nil, base)
	want := append([]peer.ID{"r"}, ids(core.MaxHintsPerBlob, "h")...)
	if fmt.Sprint(candIDs(pl)) != fmt.Sprint(want) {
		t.Fatalf("candidates %q, want %q", candIDs(pl), want)
	}
	// At the bound and just past it, without a requester.
	if got := len(NewPlan(hinted(ids(core.MaxHintsPerBlob, "h")), "", nil, base).cands); got != core.MaxHintsPerBlob {
		t.Errorf("%d hints: %d kept", core.MaxHintsPerBlob, got)
	}
	if got := len(NewPlan(hinted(ids(core.MaxHintsPerBlob+1, "h")), "", nil, base).cands); got != core.MaxHintsPerBlob {
		t.Errorf("%d hints: %d kept, want %d", core.MaxHintsPerBlob+1, got, core.MaxHintsPerBlob)
	}
	if pl := NewPlan(Sources{}, "", nil, base); len(pl.cands) != 0 {
		t.Errorf("no hints: candidates %q", candIDs(pl))
	}
}

// TestPlanSixHintsAtMostFour: six providers that all fail fast, with a nil
// backoff: exactly four attempts, then ErrAttempts wrapping the last error.
func TestPlanSixHintsAtMostFour(t *testing.T) {
	errRefused := errors.New("refused")
	pl := NewPlan(hinted(ids(6, "h")), "", nil, base)
	now := base
	var tried []peer.ID
	for {
		p, _, ok := pl.Next(now)
		if !ok {
			break
		}
		tried = append(tried, p)
		now = now.Add(time.Second)
		pl.Report(p, errRefused, now)
	}
	if fmt.Sprint(tried) != fmt.Sprint(ids(4, "h")) || pl.Attempts() != MaxAttempts {
		t.Fatalf("tried %q (%d attempts), want the first 4", tried, pl.Attempts())
	}
	if !pl.Done() || !errors.Is(pl.Err(), ErrAttempts) || !errors.Is(pl.Err(), errRefused) {
		t.Fatalf("Done %v Err %v, want ErrAttempts wrapping the last error", pl.Done(), pl.Err())
	}
}

// TestPlanNoProvider: with no hints, Err is ErrNoProvider saying none is
// known; with every hint under backoff, it names the one whose backoff
// ends first, and when.
func TestPlanNoProvider(t *testing.T) {
	pl := NewPlan(Sources{}, "", NewBackoff(), base)
	if _, _, ok := pl.Next(base); ok || !errors.Is(pl.Err(), ErrNoProvider) || !strings.Contains(pl.Err().Error(), "none is known") {
		t.Fatalf("ok %v Err %v, want ErrNoProvider, none known", ok, pl.Err())
	}
	b := NewBackoff()
	b.Failed("h0", base)
	b.Failed("h1", base.Add(time.Second))
	pl = NewPlan(hinted(ids(2, "h")), "", b, base.Add(2*time.Second))
	_, _, ok := pl.Next(base.Add(2 * time.Second))
	want := "2 of 2 skipped, under backoff after a failed fetch (ADR 0014), the first, " + peer.ID("h0").String() +
		", until " + base.Add(BackoffBase).UTC().Format(time.TimeOnly)
	if ok || !errors.Is(pl.Err(), ErrNoProvider) || !strings.Contains(pl.Err().Error(), want) {
		t.Fatalf("ok %v Err %v, want %q", ok, pl.Err(), want)
	}
}

// TestPlanExemptFirst: a first provider named by an operator is tried
// under backoff; the hints under backoff are still skipped.
func TestPlanExemptFirst(t *testing.T) {
	b := NewBackoff()
	b.Failed("req", base)
	b.Failed("h0", base)
	pl := NewPlan(Sources{First: "req", FirstExempt: true, Named: infos(ids(2, "h"))}, "", b, base)
	tried := failAll(pl, base)
	if len(tried) != 2 || tried[0] != "req" || tried[1] != "h1" {
		t.Fatalf("tried %q, want [req h1]", tried)
	}
	// Without the exemption the requester is skipped.
	pl = NewPlan(Sources{First: "req"}, "", b, base)
	if _, _, ok := pl.Next(base); ok {
		t.Fatal("a requester under backoff was tried")
	}
}

// TestPlanSizeMismatchNoBackoff: a mismatch wrapped by the caller ends the
// plan with that error and leaves the provider unpunished; a plain error
// that merely mentions a size does back off.
func TestPlanSizeMismatchNoBackoff(t *testing.T) {
	b := NewBackoff()
	pl := NewPlan(hinted([]peer.ID{"a", "b"}), "", b, base)
	p, _, _ := pl.Next(base)
	mismatch := fmt.Errorf("blob bafy: 5 bytes, declared 4: %w", ErrSizeMismatch)
	pl.Report(p, mismatch, base.Add(time.Second))
	if skipped, _ := b.Skipped(p, base.Add(time.Second)); skipped || b.Len() != 0 {
		t.Fatalf("size mismatch backed %s off", string(p))
	}
	if !pl.Done() || pl.Err() != mismatch {
		t.Fatalf("Done %v Err %v, want the mismatch", pl.Done(), pl.Err())
	}
	if _, _, ok := pl.Next(base.Add(time.Second)); ok {
		t.Fatal("Next after a mismatch gave a provider")
	}

	pl = NewPlan(hinted([]peer.ID{"a"}), "", b, base)
	p, _, _ = pl.Next(base)
	pl.Report(p, errors.New("size 5, declared 4"), base)
	if skipped, _ := b.Skipped(p, base); !skipped {
		t.Fatal("a provider error not wrapping ErrSizeMismatch did not back off")
	}
}

// TestPlanCanceled: context.Canceled is the node giving up, not a fault.
func TestPlanCanceled(t *testing.T) {
	b := NewBackoff()
	pl := NewPlan(hinted([]peer.ID{"a"}), "", b, base)
	p, _, _ := pl.Next(base)
	pl.Report(p, fmt.Errorf("get: %w", context.Canceled), base)
	if b.Len() != 0 {
		t.Fatal("a cancelled attempt backed the provider off")
	}
	pl = NewPlan(hinted([]peer.ID{"a"}), "", b, base)
	p, _, _ = pl.Next(base)
	pl.Report(p, fmt.Errorf("get: %w", context.DeadlineExceeded), base)
	if skipped, _ := b.Skipped(p, base); !skipped {
		t.Fatal("a timed-out attempt did not back the provider off")
	}
}

// TestPlanBoundsRandom drives many plans with random outcomes and
// durations and checks the ADR 0014 bounds on every one: at most 4
// attempts, each deadline at most 60 s after it starts and at most 120 s
// after the plan starts, no provider twice, none while under backoff, the
// requester first when not under backoff.
func TestPlanBoundsRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	b := NewBackoff()
	now := base
	for run := range 2000 {
		hints := ids(r.IntN(20), "h")
		r.Shuffle(len(hints), func(i, j int) { hints[i], hints[j] = hints[j], hints[i] })
		var first peer.ID
		if r.IntN(2) == 0 {
			first = peer.ID(fmt.Sprint("h", r.IntN(25)))
		}
		firstSkipped, _ := b.Skipped(first, now)
		pl := NewPlan(Sources{First: first, Named: infos(hints)}, "", b, now)
		start := now
		seen := map[peer.ID]bool{}
		for attempt := 0; ; attempt++ {
			p, deadline, ok := pl.Next(now)
			if !ok {
				if !pl.Done() || pl.Err() == nil && attempt == 0 {
					t.Fatalf("run %d: over without a reason", run)
				}
				break
			}
			if attempt == 0 && first != "" && !firstSkipped && p != first {
				t.Fatalf("run %d: first attempt %s, want the requester %s", run, string(p), string(first))
			}
			if attempt >= MaxAttempts {
				t.Fatalf("run %d: attempt %d", run, attempt+1)
			}
			if seen[p] {
				t.Fatalf("run %d: %s tried twice", run, string(p))
			}
			seen[p] = true
			if skipped, _ := b.Skipped(p, now); skipped {
				t.Fatalf("run %d: %s tried under backoff", run, string(p))
			}
			if deadline.Sub(now) > AttemptTimeout || deadline.Sub(start) > FetchTimeout || !deadline.After(now) {
				t.Fatalf("run %d: attempt at +%v has deadline +%v", run, now.Sub(start), deadline.Sub(start))
			}
			// The attempt ends at a random point up to its deadline.
			now = now.Add(time.Duration(r.Int64N(int64(deadline.Sub(now)) + 1)))
			var err error
			switch r.IntN(10) {
			case 0:
				err = nil
			case 1:
				err = ErrSizeMismatch
			default:
				err = errors.New("failed")
			}
			pl.Report(p, err, now)
		}
		if now.Sub(start) > FetchTimeout {
			t.Fatalf("run %d: took %v", run, now.Sub(start))
		}
		now = now.Add(time.Duration(r.Int64N(int64(10 * time.Minute))))
	}
}

// TestPlanGuessesAreNotBackedOff: a guessed provider that fails is not
// backed off; a named one is.
func TestPlanGuessesAreNotBackedOff(t *testing.T) {
	b := NewBackoff()
	pl := NewPlan(Sources{Named: infos(ids(1, "h")), Guesses: []peer.ID{"author", "h0", ""}}, "", b, base) // h0 is named already
	tried := failAll(pl, base)
	if len(tried) != 2 || tried[0] != "h0" || tried[1] != "author" {
		t.Fatalf("tried %q, want [h0 author]", tried)
	}
	if skipped, _ := b.Skipped("h0", base); !skipped {
		t.Fatal("a named provider that failed is not backed off")
	}
	if skipped, _ := b.Skipped("author", base); skipped {
		t.Fatal("a guessed provider that failed was backed off")
	}
}

// failAll runs pl to its end at now, every attempt failing; it returns the
// providers tried, in order.
func failAll(pl *Plan, now time.Time) []peer.ID {
	var tried []peer.ID
	for {
		p, _, ok := pl.Next(now)
		if !ok {
			return tried
		}
		tried = append(tried, p)
		pl.Report(p, errors.New("failed"), now)
	}
}

// TestPlanRoute: providers content routing found are tried after every
// other candidate once the plan ran out of them, at most
// core.MaxHintsPerBlob kept (at the bound and just past it), without the
// candidates already tried or self; MaxAttempts counts across both, and a
// plan over for another reason than ErrNoProvider stays over.
func TestPlanRoute(t *testing.T) {
	b := NewBackoff()
	pl := NewPlan(Sources{First: "r", Named: infos(ids(1, "h"))}, "self", b, base)
	if got := failAll(pl, base); fmt.Sprint(got) != fmt.Sprint([]peer.ID{"r", "h0"}) || !errors.Is(pl.Err(), ErrNoProvider) {
		t.Fatalf("tried %q, Err %v; want r, h0 and ErrNoProvider", got, pl.Err())
	}
	found := append([]peer.AddrInfo{{ID: "h0"}, {ID: "self"}, {ID: ""}, {ID: "r"}}, infos(ids(core.MaxHintsPerBlob+1, "d"))...)
	added := pl.Route(found, "self")
	if fmt.Sprint(infoIDs(added)) != fmt.Sprint(ids(core.MaxHintsPerBlob, "d")) {
		t.Fatalf("Route added %q, want the first %d of the DHT's, none tried already", infoIDs(added), core.MaxHintsPerBlob)
	}
	if pl.Done() || pl.Err() != nil {
		t.Fatalf("after Route: Done %v Err %v, want the plan going on", pl.Done(), pl.Err())
	}
	// Two attempts were spent on r and h0: two of the found are tried.
	if got := failAll(pl, base); fmt.Sprint(got) != fmt.Sprint(ids(2, "d")) || !errors.Is(pl.Err(), ErrAttempts) {
		t.Fatalf("tried %q, Err %v; want d0, d1 and ErrAttempts", got, pl.Err())
	}
	if skipped, _ := b.Skipped("d0", base); !skipped {
		t.Error("a found provider that failed is not backed off")
	}
	if added := pl.Route(infos(ids(2, "e")), "self"); added != nil || !pl.Done() {
		t.Errorf("Route after ErrAttempts added %q (Done %v), want nothing", infoIDs(added), pl.Done())
	}
	// The caller's Named is not written past its length.
	named := make([]peer.AddrInfo, 1, 4)
	named[0] = peer.AddrInfo{ID: "h0"}
	pl = NewPlan(Sources{Named: named}, "", nil, base)
	failAll(pl, base)
	pl.Route(infos(ids(3, "d")), "")
	if full := named[:4]; full[1].ID != "" || full[2].ID != "" || full[3].ID != "" {
		t.Errorf("Route wrote into the caller's Named: %q", infoIDs(full))
	}
}

func infoIDs(infos []peer.AddrInfo) []peer.ID {
	out := make([]peer.ID, len(infos))
	for i, ai := range infos {
		out[i] = ai.ID
	}
	return out
}

// TestPlanRouteBeforeGuesses: content routing is asked once every claimed
// provider was tried, before the guesses: the providers it finds are tried
// first, and a guess it names is tried among them and backed off on
// failure, as a provider that claimed the blob.
func TestPlanRouteBeforeGuesses(t *testing.T) {
	b := NewBackoff()
	pl := NewPlan(Sources{Named: infos([]peer.ID{"h0"}), Guesses: []peer.ID{"g0", "g1"}}, "self", b, base)
	if pl.Routable(base) {
		t.Fatal("routable before the named provider was tried")
	}
	p, _, _ := pl.Next(base)
	pl.Report(p, errors.New("failed"), base)
	if !pl.Routable(base) || !pl.GuessesLeft() {
		t.Fatalf("after the named provider: Routable %v GuessesLeft %v, want both", pl.Routable(base), pl.GuessesLeft())
	}
	if pl.Routable(base.Add(FetchTimeout)) {
		t.Error("routable with the fetch's time spent")
	}
	added := pl.Route(infos([]peer.ID{"d0", "g1", "h0"}), "self")
	if fmt.Sprint(infoIDs(added)) != fmt.Sprint([]peer.ID{"d0", "g1"}) {
		t.Fatalf("Route added %q, want d0 and the guess g1", infoIDs(added))
	}
	if got := failAll(pl, base); fmt.Sprint(got) != fmt.Sprint([]peer.ID{"d0", "g1", "g0"}) {
		t.Fatalf("tried %q after h0, want d0, g1, then the guess g0", got)
	}
	if skipped, _ := b.Skipped("g1", base); !skipped {
		t.Error("g1, named by the DHT, was not backed off after failing")
	}
	if skipped, _ := b.Skipped("g0", base); skipped {
		t.Error("g0, only a guess, was backed off")
	}
}

// TestPlanRoutableAfterBackedOff: a named provider under backoff is passed
// over (SkipBackedOff) so that content routing is asked before the guesses,
// and a plan whose only candidate is backed off is still routable, and
// goes on with what Route adds.
func TestPlanRoutableAfterBackedOff(t *testing.T) {
	b := NewBackoff()
	b.Failed("h0", base)
	pl := NewPlan(Sources{Named: infos([]peer.ID{"h0"}), Guesses: []peer.ID{"g0"}}, "", b, base)
	if pl.Routable(base) {
		t.Fatal("routable before the named provider was considered")
	}
	pl.SkipBackedOff(base)
	if !pl.Routable(base) {
		t.Fatal("not routable with the only named provider under backoff")
	}
	pl.Route(infos([]peer.ID{"d0"}), "")
	if p, _, ok := pl.Next(base); !ok || p != "d0" {
		t.Fatalf("Next = %q, %v; want the DHT's d0 before the guess", p, ok)
	}

	pl = NewPlan(Sources{Named: infos([]peer.ID{"h0"})}, "", b, base)
	if _, _, ok := pl.Next(base); ok || !errors.Is(pl.Err(), ErrNoProvider) {
		t.Fatalf("Next with h0 backed off: ok %v, Err %v; want ErrNoProvider", ok, pl.Err())
	}
	if !pl.Routable(base) {
		t.Fatal("a plan over for want of a provider is not routable")
	}
	if added := pl.Route(infos([]peer.ID{"d0"}), ""); len(added) != 1 || pl.Done() {
		t.Fatalf("Route added %q, Done %v; want d0 and the plan going on", infoIDs(added), pl.Done())
	}
	if p, _, ok := pl.Next(base); !ok || p != "d0" {
		t.Fatalf("Next = %q, %v; want d0", p, ok)
	}
}
