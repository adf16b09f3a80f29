// Command tracestat reads an execution trace (runtime/trace, as `wats
// bench sync --trace` writes one) and prints where the cores stood idle:
// how long 0, 1, 2… goroutines were running at once, how long a goroutine
// was ready while a P ran none, and, by the function each goroutine
// started in, the time its syscalls took. A P stays with a
// goroutine in a syscall until the runtime's monitor takes it back, so a
// long fsync can keep a core from a goroutine ready to run (ADR 0039).
//
//	go run ./internal/bench/tracestat t.trace
package main

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/exp/trace"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: tracestat TRACE")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "tracestat:", err)
		os.Exit(1)
	}
	defer f.Close()
	s, err := summarize(f)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tracestat:", err)
		os.Exit(1)
	}
	s.print(os.Stdout)
}

// summary is what summarize found in a trace.
type summary struct {
	// total is the time from the first event to the last.
	total time.Duration
	// running[k] is the time exactly k goroutines were running.
	running []time.Duration
	// readyWhileSyscall is the time a goroutine was ready and fewer ran
	// than there are Ps, every P being taken: by a goroutine in a
	// syscall, which keeps its P until the runtime takes it back, or by
	// the scheduler between two goroutines.
	readyWhileSyscall time.Duration
	// syscalls are the syscalls by the function their goroutine started
	// in, the longest in all first.
	syscalls []syscallTotal
}

// syscallTotal is the syscalls of the goroutines that started in one
// function: how many, and how long in all.
type syscallTotal struct {
	entry string
	count int
	time  time.Duration
}

// goroutine is what summarize keeps of one goroutine.
type goroutine struct {
	entry string     // the function it started in, once a stack showed it
	since trace.Time // when it entered its state
}

// summarize reads a trace from r.
func summarize(r io.Reader) (*summary, error) {
	rd, err := trace.NewReader(r)
	if err != nil {
		return nil, err
	}
	gs := map[trace.GoID]*goroutine{}
	procs := 1
	running, ready, busyProcs := 0, 0, 0
	var first, last trace.Time
	var byRunning []time.Duration
	var readyTime time.Duration
	sys := map[string]*syscallTotal{}
	for {
		ev, err := rd.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		t := ev.Time()
		if first == 0 {
			first = t
		}
		if last != 0 && t > last {
			dt := time.Duration(t - last)
			for len(byRunning) <= running {
				byRunning = append(byRunning, 0)
			}
			byRunning[running] += dt
			if running < procs && busyProcs >= procs && ready > 0 {
				readyTime += dt
			}
		}
		last = max(last, t)
		switch ev.Kind() {
		case trace.EventMetric:
			if m := ev.Metric(); m.Name == "/sched/gomaxprocs:threads" {
				procs = int(m.Value.Uint64())
			}
			continue
		case trace.EventStateTransition:
		default:
			continue
		}
		st := ev.StateTransition()
		if st.Resource.Kind == trace.ResourceProc {
			from, to := st.Proc()
			if from == trace.ProcRunning {
				busyProcs--
			}
			if to == trace.ProcRunning {
				busyProcs++
			}
			continue
		}
		if st.Resource.Kind != trace.ResourceGoroutine {
			continue
		}
		id := st.Resource.Goroutine()
		from, to := st.Goroutine()
		g := gs[id]
		if g == nil {
			g = &goroutine{}
			gs[id] = g
		}
		if e := entryOf(st.Stack); e != "" {
			g.entry = e
		}
		switch from {
		case trace.GoRunnable:
			ready--
		case trace.GoRunning:
			running--
		case trace.GoSyscall:
			if g.since != 0 {
				s := sys[g.entry]
				if s == nil {
					s = &syscallTotal{entry: g.entry}
					sys[g.entry] = s
				}
				s.count++
				s.time += time.Duration(t - g.since)
			}
		}
		switch to {
		case trace.GoRunnable:
			ready++
		case trace.GoRunning:
			running++
		}
		g.since = t
		if to == trace.GoNotExist {
			delete(gs, id)
		}
	}
	s := &summary{total: time.Duration(last - first), running: byRunning, readyWhileSyscall: readyTime}
	for _, v := range sys {
		s.syscalls = append(s.syscalls, *v)
	}
	slices.SortFunc(s.syscalls, func(a, b syscallTotal) int { return cmp.Compare(b.time, a.time) })
	return s, nil
}

// entryOf is the function at the bottom of stack, where its goroutine
// started; "" for an empty stack.
func entryOf(stack trace.Stack) string {
	e := ""
	for f := range stack.Frames() {
		e = f.Func
	}
	return e
}

// print writes s as text: the share of each running count, the ready
// time, and the ten goroutine entries that spent the most in syscalls.
func (s *summary) print(w io.Writer) {
	fmt.Fprintf(w, "trace of %v\n", s.total.Round(time.Millisecond))
	for k, d := range s.running {
		fmt.Fprintf(w, "%d running: %8v  %5.1f%%\n", k, d.Round(time.Millisecond), 100*d.Seconds()/s.total.Seconds())
	}
	fmt.Fprintf(w, "a goroutine ready while a P ran none (a syscall, the scheduler): %v\n", s.readyWhileSyscall.Round(time.Millisecond))
	fmt.Fprintln(w, "syscalls by the function their goroutine started in:")
	for i, c := range s.syscalls {
		if i == 10 {
			break
		}
		entry := c.entry
		if entry == "" {
			entry = "(unknown)"
		}
		if j := strings.LastIndex(entry, "/"); j >= 0 {
			entry = entry[j+1:]
		}
		fmt.Fprintf(w, "%8v %7d  %s\n", c.time.Round(time.Millisecond), c.count, entry)
	}
}
