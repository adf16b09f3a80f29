package devnet

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/internal/humanize"
)

// Timing of `devnet run`.
const (
	// viewInterval is how often the convergence view refreshes.
	viewInterval = time.Second
	// settleTimeout is how long `devnet run --duration` waits, after it
	// stops publishing, for the nodes to converge before it reports.
	settleTimeout = 20 * time.Second
	// demoKind is the kind of the events the demo publishes.
	demoKind = "note"
)

// RunOptions are the settings of Run: the flags of `devnet run` and where
// it writes.
type RunOptions struct {
	// Dir is the devnet directory; "" for a temporary one, removed at the
	// end but for the nodes' logs, which are moved to a directory of their
	// own and named.
	Dir string
	// Nodes is the number of nodes, 1 to MaxNodes.
	Nodes int
	// Demo: every node publishes a note every Interval (at most
	// EventsPerNode each, 0: no limit), node0 a file event with a blob and
	// the last node a crash report with a dump to node0.
	Demo          bool
	Interval      time.Duration
	EventsPerNode int
	// Duration stops the run after this long, then waits for the nodes to
	// converge and says whether they did; 0 runs until ctx ends.
	Duration time.Duration
	// Network and Timeout are as in Options.
	Network string
	Timeout time.Duration
	// Stdout gets the run's lines and its view, redrawn in place if TTY
	// (Stdout is a terminal); Stderr the progress of the start and the
	// errors of the demo.
	Stdout, Stderr io.Writer
	TTY            bool
	// Width is the terminal's width in columns when TTY (0: not known):
	// the view's lines are wrapped to it, so that its redraw goes back
	// over exactly the rows it drew.
	Width int
	// Hint returns a wats command line to paste for args (e.g. "devnet",
	// "status", "--dir", DIR), naming the binary as the user runs it.
	Hint func(args ...string) string
}

// Run is `devnet run`: it starts o.Nodes daemons as Start does, in the
// foreground, shows their convergence (and with o.Demo publishes events
// and blobs from them) until ctx ends (Ctrl-C) or o.Duration has passed,
// then stops every daemon and waits for them. It returns an error when
// the devnet did not start, a node exited, or after o.Duration the nodes
// did not converge within 20 s; on any error the node repos and logs are
// kept (and named on Stderr).
func Run(ctx context.Context, o RunOptions) (err error) {
	progress := func(format string, args ...any) { fmt.Fprintf(o.Stderr, format+"\n", args...) }
	dir := o.Dir
	dirGiven := dir != ""
	if !dirGiven {
		if dir, err = os.MkdirTemp("", "wats-devnet-"); err != nil {
			return err
		}
	}
	keep := false // keep a temporary dir when something failed, for its logs
	defer func() {
		if dirGiven {
			return
		}
		if keep {
			fmt.Fprintf(o.Stderr, "the node repos and logs are kept in %s\n", dir)
			return
		}
		if logs, err := keepLogs(dir); err == nil && logs != "" {
			fmt.Fprintf(o.Stdout, "the nodes' logs are kept in %s (to keep the whole devnet: %s)\n", logs,
				o.Hint("devnet", "run", "--dir", "DIR"))
		}
		_ = os.RemoveAll(dir)
	}()

	d, err := Start(ctx, Options{
		Dir: dir, Nodes: o.Nodes, Network: o.Network, Timeout: o.Timeout, Foreground: true, Log: progress,
		DownHint: o.Hint("devnet", "down", "--dir", dir),
	})
	if err != nil {
		keep = ctx.Err() == nil
		return err
	}
	fmt.Fprintf(o.Stdout, "devnet of %s running in %s (network %s); Ctrl-C to stop\n", humanize.Plural(o.Nodes, "node"), dir, o.Network)
	fmt.Fprintf(o.Stdout, "try in another terminal: %s\n", o.Hint("devnet", "status", "--dir", dir))
	fmt.Fprintln(o.Stdout, columnsLegend(o.Demo))

	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	if o.Duration > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(runCtx, o.Duration)
		defer cancel()
	}
	died := make(chan *Daemon, len(d.procs))
	for _, p := range d.procs {
		go func() {
			select {
			case <-p.exited:
				died <- p
			case <-runCtx.Done():
			}
		}()
	}

	obs := newObserver(d.clients)
	view := newConvergenceView(o.Stdout, o.TTY)
	view.width = o.Width
	var pub *publisher
	var blobs *blobDemo
	var sp *spread
	if o.Demo {
		sp = newSpread(len(d.clients))
		for i, cl := range d.clients {
			go sp.watch(runCtx, i, cl)
		}
		pub = startPublisher(runCtx, d.clients, o.Interval, o.EventsPerNode, sp, o.Stderr)
		blobs = startBlobDemo(runCtx, d.clients, o.Stderr)
	}

	// A write to a closed stdout returns EPIPE instead of killing the
	// process with SIGPIPE, so that the nodes are still stopped. (Notify,
	// not Ignore: an ignored signal would stay ignored in the daemons.)
	sigpipe := make(chan os.Signal, 1)
	signal.Notify(sigpipe, syscall.SIGPIPE)
	defer signal.Stop(sigpipe)

	start := time.Now()
	tick := time.NewTicker(viewInterval)
	var runErr error
	outputGone := false
loop:
	for {
		select {
		case <-runCtx.Done():
			break loop
		case p := <-died:
			runErr = fmt.Errorf("node%d exited unexpectedly (%v); the end of its log:\n%s",
				p.index, p.err, LogTail(d.state.Nodes[p.index].Log, 15))
			break loop
		case <-tick.C:
			obs.refresh(runCtx)
			blobs.refresh(runCtx)
			if runCtx.Err() != nil {
				break loop // the refresh was cut short: settle shows the end
			}
			view.note = blobs.note()
			view.lags, view.spread = sp.lags(), sp.summary()
			view.show(time.Since(start), obs.views, pub.counts())
			if view.err != nil {
				// Nobody reads the output any more (a closed pipe):
				// stop as if interrupted.
				outputGone = true
				break loop
			}
		}
	}
	tick.Stop()
	stopRun()
	pub.wait()
	blobs.wait()

	// Stopped by --duration: let the last events spread, then report.
	interrupted := ctx.Err() != nil || outputGone
	if runErr == nil && !interrupted {
		runErr = settle(ctx, o.Stdout, obs, view, start, pub, blobs)
	}
	view.end()

	fmt.Fprintf(o.Stdout, "stopping %s\n", humanize.Plural(len(d.procs), "node"))
	d.Stop()
	for _, p := range d.procs {
		if p.err != nil && runErr == nil {
			// A daemon stopped by SIGTERM exits 0; anything else is news.
			fmt.Fprintf(o.Stderr, "node%d exited with %v; see %s\n", p.index, p.err, d.state.Nodes[p.index].Log)
			keep = true
		}
	}
	if dirGiven {
		_ = removeState(dir)
	}
	fmt.Fprintf(o.Stdout, "stopped\n")
	if runErr != nil {
		keep = true
	}
	return runErr
}

// settle waits up to settleTimeout for the nodes to converge, refreshing
// the view, and reports the outcome on w: nil when every node holds the
// same events.
//
// With the demo's blobs (blobs non-nil) it also waits until every node
// holds both of them.
func settle(ctx context.Context, w io.Writer, obs *observer, view *convergenceView, start time.Time, pub *publisher, blobs *blobDemo) error {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	tick := time.NewTicker(viewInterval / 4)
	defer tick.Stop()
	for {
		obs.refresh(ctx)
		blobs.refresh(ctx)
		conv := converged(obs.views)
		blobsOK, blobState := blobs.state()
		if conv.ok && blobsOK {
			view.show(time.Since(start), obs.views, pub.counts())
			view.end()
			fmt.Fprintf(w, "converged: all %d nodes hold the same %d events\n", len(obs.views), conv.events)
			if blobState != "" {
				fmt.Fprintln(w, blobState)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			view.show(time.Since(start), obs.views, pub.counts())
			view.end()
			if !conv.ok {
				return fmt.Errorf("not converged %s after the end of the run: %s", settleTimeout, conv.summary(obs.views))
			}
			return fmt.Errorf("not converged %s after the end of the run: %s", settleTimeout, blobState)
		case <-tick.C:
		}
	}
}

// publisher publishes the demo's events: every interval, one note from
// each node, until ctx ends or each node published max (0: no limit).
type publisher struct {
	wg sync.WaitGroup
	mu struct {
		sync.Mutex
		counts []int // events published per node
	}
}

func startPublisher(ctx context.Context, clients []*api.Client, interval time.Duration, max int, sp *spread, stderr io.Writer) *publisher {
	p := &publisher{}
	p.mu.counts = make([]int, len(clients))
	for i, cl := range clients {
		p.wg.Go(func() {
			// Half an interval out of phase with the view (which refreshes
			// on whole seconds), so that the view does not always catch
			// events in flight.
			select {
			case <-ctx.Done():
				return
			case <-time.After(interval / 2):
			}
			t := time.NewTicker(interval)
			defer t.Stop()
			failed := false
			for n := 1; max == 0 || n <= max; n++ {
				if n > 1 {
					select {
					case <-ctx.Done():
						return
					case <-t.C:
					}
				}
				body, _ := json.Marshal(demoBody{From: fmt.Sprintf("node%d", i), N: n})
				// Not cancelled with ctx: an event being added when the run
				// ends is finished (stored and gossiped), not cut short.
				cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CallTimeout)
				t0 := time.Now()
				ev, err := cl.AddEvent(cctx, demoKind, jsontext.Value(body))
				cancel()
				if err == nil {
					if id, err := api.EventID(ev); err == nil {
						sp.published(id, t0)
					}
				}
				if err != nil {
					if ctx.Err() == nil && !failed {
						fmt.Fprintf(stderr, "node%d: publish: %v\n", i, err)
						failed = true // once: the view shows the rest
					}
					n--
					continue
				}
				p.mu.Lock()
				p.mu.counts[i]++
				p.mu.Unlock()
			}
		})
	}
	return p
}

// demoBody is the body of a demo event, e.g. {"from":"node1","n":7}.
type demoBody struct {
	From string `json:"from"`
	N    int    `json:"n"`
}

// counts returns the number of events published per node; nil for a nil
// publisher (no --demo).
func (p *publisher) counts() []int {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int(nil), p.mu.counts...)
}

// wait waits until the publisher stopped.
func (p *publisher) wait() {
	if p != nil {
		p.wg.Wait()
	}
}

// nodeView is what the convergence view knows of one node.
type nodeView struct {
	// peers is from the node's last Status; events (the size of ids) and
	// head are from the last page of its log read, so that they agree
	// with ids even while events arrive.
	peers  int
	events uint64
	head   uint64
	// ids are the ids of the events read from the node's log so far, and
	// cursor is where reading stopped.
	ids    map[string]struct{}
	cursor uint64
	// err is the last API error, "" when the last refresh worked.
	err string
}

// observer keeps, per node, the set of event ids in its log, reading only
// the events added since its last refresh. It is used by one goroutine.
type observer struct {
	clients []*api.Client
	views   []nodeView
}

func newObserver(clients []*api.Client) *observer {
	o := &observer{clients: clients, views: make([]nodeView, len(clients))}
	for i := range o.views {
		o.views[i].ids = make(map[string]struct{})
	}
	return o
}

// refresh reads every node's status and new events, concurrently.
func (o *observer) refresh(ctx context.Context) {
	var wg sync.WaitGroup
	for i, cl := range o.clients {
		wg.Go(func() {
			if err := o.views[i].refresh(ctx, cl); err != nil {
				o.views[i].err = err.Error()
			} else {
				o.views[i].err = ""
			}
		})
	}
	wg.Wait()
}

// maxPagesPerRefresh bounds the pages read from one node in one refresh,
// so that a node with a huge log does not stall the view; the next
// refresh goes on where this one stopped.
const maxPagesPerRefresh = 64

func (v *nodeView) refresh(ctx context.Context, cl *api.Client) error {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	st, err := cl.Status(ctx)
	if err != nil {
		return err
	}
	v.peers = st.Peers
	defer func() { v.events = uint64(len(v.ids)) }()
	for range maxPagesPerRefresh {
		page, err := cl.Events(ctx, v.cursor, 0)
		if err != nil {
			return err
		}
		for _, ev := range page.Events {
			id, err := api.EventID(ev)
			if err != nil {
				return err
			}
			v.ids[id] = struct{}{}
		}
		if page.Next > v.cursor {
			v.cursor = page.Next
		}
		v.head = page.Head
		if !page.More || len(page.Events) == 0 {
			return nil
		}
	}
	return nil
}

// convergence is the verdict on a set of nodes.
type convergence struct {
	// ok: every node answered and holds the same non-empty set of events.
	ok bool
	// events is the size of the union of the nodes' sets.
	events int
	// missing[i] is how many events of the union node i lacks.
	missing []int
}

// converged compares the nodes' event sets.
func converged(views []nodeView) convergence {
	union := make(map[string]struct{})
	for _, v := range views {
		for id := range v.ids {
			union[id] = struct{}{}
		}
	}
	c := convergence{ok: len(union) > 0, events: len(union), missing: make([]int, len(views))}
	for i, v := range views {
		c.missing[i] = len(union) - len(v.ids)
		if c.missing[i] != 0 || v.err != "" {
			c.ok = false
		}
	}
	return c
}

// summary says which nodes lack events.
func (c convergence) summary(views []nodeView) string {
	var parts []string
	for i, v := range views {
		switch {
		case v.err != "":
			parts = append(parts, fmt.Sprintf("node%d: %s", i, v.err))
		case c.missing[i] > 0:
			parts = append(parts, fmt.Sprintf("node%d lacks %d of %d events", i, c.missing[i], c.events))
		}
	}
	if len(parts) == 0 {
		return "no events yet"
	}
	return strings.Join(parts, ", ")
}

// state is the one-word state the view shows: converged, spreading or
// waiting for events.
func (c convergence) state() string {
	switch {
	case c.ok:
		return "converged"
	case c.events == 0:
		return "waiting for events"
	default:
		return "spreading"
	}
}

// maxNamedNodes bounds the nodes verdict names in one list, so that the
// line stays short with a large devnet.
const maxNamedNodes = 6

// verdict is the view's summary line: the state, and while the nodes have
// not converged which are behind (with how many events they lack) and
// which do not answer, e.g.
//
//	spreading: 12 events in all; behind: node1 (2 missing), node2 (1 missing)
func (c convergence) verdict(views []nodeView) string {
	if c.ok {
		return fmt.Sprintf("converged: all %d nodes hold the same %s", len(views), humanize.Plural(c.events, "event"))
	}
	var behind, silent []string
	for i, v := range views {
		switch {
		case v.err != "":
			silent = append(silent, fmt.Sprintf("node%d", i))
		case c.missing[i] > 0:
			behind = append(behind, fmt.Sprintf("node%d (%d missing)", i, c.missing[i]))
		}
	}
	parts := []string{c.state()}
	if c.events > 0 {
		parts[0] += fmt.Sprintf(": %s in all", humanize.Plural(c.events, "event"))
	}
	if len(behind) > 0 {
		parts = append(parts, "behind: "+nameList(behind))
	}
	if len(silent) > 0 {
		parts = append(parts, "not answering: "+nameList(silent))
	}
	return strings.Join(parts, "; ")
}

// nameList joins names with commas, naming at most maxNamedNodes of them.
func nameList(names []string) string {
	if len(names) <= maxNamedNodes {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:maxNamedNodes], ", ") + fmt.Sprintf(" and %d more", len(names)-maxNamedNodes)
}

// columnsLegend explains the columns of the view, printed once before it
// (demo: with the PUBLISHED column of --demo).
func columnsLegend(demo bool) string {
	lines := []string{"For each node:"}
	if demo {
		lines = append(lines, "  PUBLISHED  events the demo published from the node")
	}
	lines = append(lines,
		"  EVENTS     events the node holds",
		"  HEAD       its log position: the cursor of its newest event",
		"  PEERS      peers that completed hello with it",
		"  MISSING    events other nodes hold that it lacks (0 everywhere: converged)",
	)
	if demo {
		lines = append(lines, "  LAG        how long the newest demo event took to reach it from the node that published it (… on its way)")
	}
	return strings.Join(lines, "\n")
}

// convergenceView shows the nodes' state: a table redrawn in place on a
// terminal, otherwise a few plain lines at each refresh that finds it
// changed.
type convergenceView struct {
	w     io.Writer
	tty   bool
	width int   // the terminal's columns (0: not known, lines not wrapped)
	drawn int   // rows of the table last drawn, to redraw over
	err   error // of the last write: the reader is gone if set
	// lags (per node) and spread (a summary) are the demo's spread
	// figures (type spread); nil and "" without --demo.
	lags   []string
	spread string
	// note is a line shown under the table (the blob demo's state); in
	// plain lines it is printed when it changes, noted being the last one
	// printed.
	note, noted string
	// plain is the state the plain lines printed last said, their times
	// left out: lines that would say the same are not printed again.
	plain string
}

func newConvergenceView(w io.Writer, tty bool) *convergenceView {
	return &convergenceView{w: w, tty: tty}
}

// show draws the state at elapsed, with the events published per node
// (nil without --demo).
func (cv *convergenceView) show(elapsed time.Duration, views []nodeView, published []int) {
	conv := converged(views)
	if !cv.tty {
		state := strings.Join(statusLines(0, views, published, cv.lags, cv.spread, conv), "\n")
		if state == cv.plain && cv.note == cv.noted {
			return // nothing new since the lines printed last
		}
		cv.plain = state
		lines := statusLines(elapsed, views, published, cv.lags, cv.spread, conv)
		if cv.note != "" && cv.note != cv.noted {
			// A note is printed when it changes.
			lines = append(lines, fmt.Sprintf("at %s: %s", elapsed.Round(time.Second), cv.note))
			cv.noted = cv.note
		}
		_, cv.err = io.WriteString(cv.w, strings.Join(lines, "\n")+"\n")
		return
	}
	lines := statusTable(elapsed, views, published, cv.lags, cv.spread, conv)
	if cv.note != "" {
		lines = append(lines, cv.note)
	}
	var b strings.Builder
	if cv.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", cv.drawn) // back to the table's first line
	}
	rows := 0
	for _, l := range lines {
		for _, r := range fitRows(l, cv.width) {
			b.WriteString("\x1b[2K") // clear the old row
			b.WriteString(r)
			b.WriteByte('\n')
			rows++
		}
	}
	_, cv.err = io.WriteString(cv.w, b.String())
	cv.drawn = rows
}

// fitRows splits line into rows of fewer than width columns (a rune a
// column: the view prints no wide characters), at spaces where it can
// (humanize.Wrap) and within a word longer than a row, so that a terminal
// of that width wraps none of them; width 1 or less: line as one row.
func fitRows(line string, width int) []string {
	if width <= 1 || utf8.RuneCountInString(line) < width {
		return []string{line}
	}
	var rows []string
	for _, r := range humanize.Wrap(line, width-1) {
		for rs := []rune(r); len(rs) > 0; rs = rs[min(len(rs), width-1):] {
			rows = append(rows, string(rs[:min(len(rs), width-1)]))
		}
	}
	return rows
}

// end leaves the table as it is: what follows is printed below it.
func (cv *convergenceView) end() { cv.drawn = 0 }

// statusLines is the view as plain lines, for logs and pipes: one a node
// and the verdict, each opened by the time elapsed, e.g.
//
//	at 3s: node0 published=3 events=5 head=5 peers=2 missing=0 lag=2ms
//	at 3s: node1 published=2 events=4 head=4 peers=2 missing=1 lag=…
//	at 3s: spreading: 5 events in all; behind: node1 (1 missing)
//
// lags (per node) and spread are the demo's; nil and "" without it.
func statusLines(elapsed time.Duration, views []nodeView, published []int, lags []string, spread string, conv convergence) []string {
	at := fmt.Sprintf("at %s:", elapsed.Round(time.Second))
	lines := make([]string, 0, len(views)+1)
	for i, v := range views {
		var b strings.Builder
		fmt.Fprintf(&b, "%s node%d", at, i)
		if i < len(published) {
			fmt.Fprintf(&b, " published=%d", published[i])
		}
		if v.err != "" {
			fmt.Fprintf(&b, " error: %s", short(v.err, 60))
		} else {
			fmt.Fprintf(&b, " events=%d head=%d peers=%d missing=%d", v.events, v.head, v.peers, conv.missing[i])
			if i < len(lags) {
				fmt.Fprintf(&b, " lag=%s", strings.ReplaceAll(lags[i], " ", ""))
			}
		}
		lines = append(lines, b.String())
	}
	verdict := conv.verdict(views)
	if spread != "" {
		verdict += "; " + spread
	}
	return append(lines, at+" "+verdict)
}

// statusTable is the view as a table of lines: a row a node, then the
// time elapsed and the verdict.
func statusTable(elapsed time.Duration, views []nodeView, published []int, lags []string, spread string, conv convergence) []string {
	lines := []string{fmt.Sprintf("%-6s %9s %9s %6s %6s %8s %8s", "NODE", "PUBLISHED", "EVENTS", "HEAD", "PEERS", "MISSING", "LAG")}
	for i, v := range views {
		pub, lag := "-", "-"
		if i < len(published) {
			pub = fmt.Sprint(published[i])
		}
		if i < len(lags) {
			lag = lags[i]
		}
		if v.err != "" {
			lines = append(lines, fmt.Sprintf("node%-2d %9s error: %s", i, pub, short(v.err, 60)))
			continue
		}
		lines = append(lines, fmt.Sprintf("node%-2d %9s %9d %6d %6d %8d %8s", i, pub, v.events, v.head, v.peers, conv.missing[i], lag))
	}
	verdict := conv.verdict(views)
	if spread != "" {
		verdict += "; " + spread
	}
	return append(lines, fmt.Sprintf("at %s: %s", elapsed.Round(time.Second), verdict))
}

// keepLogs moves the daemon logs of the devnet in dir to a new temporary
// directory beside it, as nodeI.log, and returns that directory ("" when
// there was no log to keep).
func keepLogs(dir string) (string, error) {
	st, err := Load(dir)
	if err != nil {
		// devnet.json is removed at the end of a run: find the logs.
		st = &State{}
		for i := range MaxNodes {
			st.Nodes = append(st.Nodes, NodeState{Index: i, Log: filepath.Join(NodeDir(dir, i), LogFileName)})
		}
	}
	var logs string
	for _, n := range st.Nodes {
		if _, err := os.Stat(n.Log); err != nil {
			continue
		}
		if logs == "" {
			if logs, err = os.MkdirTemp(filepath.Dir(dir), "wats-devnet-logs-"); err != nil {
				return "", err
			}
		}
		if err := os.Rename(n.Log, filepath.Join(logs, fmt.Sprintf("node%d.log", n.Index))); err != nil {
			return logs, err
		}
	}
	return logs, nil
}

// short is s cut to its first n bytes (an error in a table cell).
func short(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
