package blobs

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/internal/scripttest"
)

// TestScheduleScripts runs the step tests of testdata/schedule.txt: each
// line is a command on one Scheduler and the output expected (see the
// file's header). The expectations were worked out by hand from ADR 0029.
func TestScheduleScripts(t *testing.T) {
	s := newScheduleScript()
	scripttest.Run(t, "testdata/schedule.txt", 80, s.run)
}

type scheduleScript struct {
	s *Scheduler
	// cids and names map the script's blob names to CIDs and back.
	cids  map[string]cid.Cid
	names map[cid.Cid]string
	// running are the jobs Next gave, by blob name.
	running map[string]Job
}

func newScheduleScript() *scheduleScript {
	return &scheduleScript{s: NewScheduler(&ScheduleOptions{}), cids: map[string]cid.Cid{},
		names: map[cid.Cid]string{}, running: map[string]Job{}}
}

func (sc *scheduleScript) cid(name string) cid.Cid {
	if c, ok := sc.cids[name]; ok {
		return c
	}
	c, err := CIDBuilder.Sum([]byte(name))
	if err != nil {
		panic(err)
	}
	sc.cids[name], sc.names[c] = c, name
	return c
}

// job parses "B [from=P] [guess=G]...".
func (sc *scheduleScript) job(f []string) (Job, error) {
	j := Job{CID: sc.cid(f[0]), Size: 1, Source: "gossip"}
	for _, a := range f[1:] {
		switch k, v, _ := strings.Cut(a, "="); k {
		case "from":
			if v != "-" {
				j.From = peer.ID(v)
			}
		case "guess":
			j.Guesses = append(j.Guesses, peer.ID(v))
		default:
			return Job{}, fmt.Errorf("job argument %q: want from=P or guess=G", a)
		}
	}
	return j, nil
}

func (sc *scheduleScript) run(f []string) (string, error) {
	if len(f) == 0 {
		return "", fmt.Errorf("empty command")
	}
	switch {
	case f[0] == "reset" && len(f) == 1:
		*sc = *newScheduleScript()
		return "ok", nil
	case f[0] == "add" && len(f) >= 2:
		j, err := sc.job(f[1:])
		if err != nil {
			return "", err
		}
		return sc.s.Add(j).String(), nil
	case f[0] == "fill" && len(f) == 4:
		// fill N PREFIX from=P: add N new jobs PREFIX0, PREFIX1, ...
		n, err := strconv.Atoi(f[1])
		if err != nil {
			return "", err
		}
		counts := map[Verdict]int{}
		for i := range n {
			j, err := sc.job([]string{f[2] + strconv.Itoa(i), f[3]})
			if err != nil {
				return "", err
			}
			counts[sc.s.Add(j)]++
		}
		return countVerdicts(counts), nil
	case f[0] == "next" && len(f) == 1:
		j, ok := sc.s.Next()
		if !ok {
			return "none", nil
		}
		name := sc.names[j.CID]
		sc.running[name] = j
		from := string(j.From)
		if from == "" {
			from = "-"
		}
		guesses := make([]string, len(j.Guesses))
		for i, g := range j.Guesses {
			guesses[i] = string(g)
		}
		return fmt.Sprintf("%s from %s guesses [%s] tries %d", name, from, strings.Join(guesses, " "), j.Tries), nil
	case f[0] == "take" && len(f) == 2:
		// take N: Next N times, the jobs kept running.
		n, err := strconv.Atoi(f[1])
		if err != nil {
			return "", err
		}
		for i := range n {
			j, ok := sc.s.Next()
			if !ok {
				return fmt.Sprintf("%d taken, then none", i), nil
			}
			sc.running[sc.names[j.CID]] = j
		}
		return fmt.Sprintf("%d taken", n), nil
	case f[0] == "done" && len(f) == 4:
		// done B ok|retry @T
		now, err := scriptTime(f[3])
		if err != nil {
			return "", err
		}
		j, ok := sc.running[f[1]]
		if !ok {
			j = Job{CID: sc.cid(f[1])} // not running: Done must ignore it
		}
		delete(sc.running, f[1])
		switch f[2] {
		case "ok":
			return sc.s.Done(j, false, now).String(), nil
		case "retry":
			return sc.s.Done(j, true, now).String(), nil
		}
		return "", fmt.Errorf("outcome %q: want ok or retry", f[2])
	case f[0] == "due" && len(f) == 2:
		now, err := scriptTime(f[1])
		if err != nil {
			return "", err
		}
		var out []string
		for _, a := range sc.s.Due(now) {
			out = append(out, fmt.Sprintf("%s %s", sc.names[a.Job.CID], a.Verdict))
		}
		if len(out) == 0 {
			return "none", nil
		}
		return strings.Join(out, ", "), nil
	case f[0] == "doneall" && len(f) == 3:
		// doneall ok|retry @T: Done on every running job; counts by verdict.
		now, err := scriptTime(f[2])
		if err != nil {
			return "", err
		}
		counts := map[Verdict]int{}
		for name, j := range sc.running {
			counts[sc.s.Done(j, f[1] == "retry", now)]++
			delete(sc.running, name)
		}
		return countVerdicts(counts), nil
	case f[0] == "duecount" && len(f) == 2:
		// duecount @T: Due, counted by verdict.
		now, err := scriptTime(f[1])
		if err != nil {
			return "", err
		}
		counts := map[Verdict]int{}
		for _, a := range sc.s.Due(now) {
			counts[a.Verdict]++
		}
		return countVerdicts(counts), nil
	case f[0] == "wait" && len(f) == 2:
		now, err := scriptTime(f[1])
		if err != nil {
			return "", err
		}
		d, ok := sc.s.Wait(now)
		if !ok {
			return "none", nil
		}
		return "in " + d.String(), nil
	case f[0] == "stats" && len(f) == 2:
		w, r, t, sh := sc.s.Stats(peer.ID(f[1]))
		return fmt.Sprintf("waiting %d running %d retrying %d share %d", w, r, t, sh), nil
	}
	return "", fmt.Errorf("unknown command %q", strings.Join(f, " "))
}

// countVerdicts prints counts as "3 queued, 1 share full", in the order of
// the verdicts; "none" when empty.
func countVerdicts(counts map[Verdict]int) string {
	var out []string
	for v := Queued; v <= RetriesFull; v++ {
		if counts[v] > 0 {
			out = append(out, fmt.Sprintf("%d %s", counts[v], v))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// TestSchedulerConcurrent: adders and workers at once (run with -race):
// every job queued is taken exactly once, and at the end nothing waits,
// runs or holds a share.
func TestSchedulerConcurrent(t *testing.T) {
	s := NewScheduler(&ScheduleOptions{})
	sc := newScheduleScript()
	const adders, perAdder, workers = 4, 200, 4
	cids := make([][]cid.Cid, adders)
	for a := range adders {
		for i := range perAdder {
			cids[a] = append(cids[a], sc.cid(fmt.Sprint(a, "-", i)))
		}
	}
	var queued, taken atomic.Int64
	var wg, addWG sync.WaitGroup
	seen := sync.Map{}
	for a := range adders {
		addWG.Go(func() {
			for _, c := range cids[a] {
				if s.Add(Job{CID: c, From: peer.ID(fmt.Sprint("p", a))}) == Queued {
					queued.Add(1)
				}
			}
		})
	}
	addersDone := make(chan struct{})
	go func() { addWG.Wait(); close(addersDone) }()
	for range workers {
		wg.Go(func() {
			for {
				j, ok := s.Next()
				if !ok {
					select {
					case <-addersDone:
						if s.Len() == 0 {
							return
						}
					default:
					}
					runtime.Gosched()
					continue
				}
				if _, dup := seen.LoadOrStore(j.CID, true); dup {
					t.Errorf("%s taken twice", j.CID)
				}
				taken.Add(1)
				s.Done(j, false, base)
			}
		})
	}
	wg.Wait()
	if queued.Load() != taken.Load() || queued.Load() == 0 {
		t.Fatalf("%d queued, %d taken", queued.Load(), taken.Load())
	}
	for a := range adders {
		if w, r, rt, sh := s.Stats(peer.ID(fmt.Sprint("p", a))); w+r+rt+sh != 0 {
			t.Fatalf("left: waiting %d running %d retrying %d share %d", w, r, rt, sh)
		}
	}
}

// TestVerdictNames: every verdict has its name; an unknown one says so.
func TestVerdictNames(t *testing.T) {
	for v := Queued; v <= RetriesFull; v++ {
		if strings.HasPrefix(v.String(), "verdict(") {
			t.Errorf("verdict %d has no name", v)
		}
	}
	if got := Verdict(200).String(); got != "verdict(200)" {
		t.Errorf("unknown verdict: %q", got)
	}
	if !ShareFull.Dropped() || !QueueFull.Dropped() || Duplicate.Dropped() || Queued.Dropped() {
		t.Error("Dropped: want ShareFull and QueueFull only")
	}
}
