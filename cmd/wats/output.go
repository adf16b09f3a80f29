package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/internal/humanize"
)

// isTerminal reports whether w is a terminal (for progress bars and
// refreshing tables; anything else gets plain lines).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}

// terminalWidth is the width in columns of the terminal w writes to; 0
// when w is not a terminal or its size is not known.
func terminalWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok || !isTerminal(w) {
		return 0
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return width
}

// byteBar returns a progress bar of total bytes on stderr, labelled desc,
// when stderr is a terminal; nil otherwise. Its sizes and rates are in
// binary units (KiB, MiB, GiB), as internal/humanize prints them
// everywhere else in the CLI.
func (c *cli) byteBar(total int64, desc string) *progressbar.ProgressBar {
	if !isTerminal(c.stderr) {
		return nil
	}
	return progressbar.NewOptions64(max(total, 1),
		progressbar.OptionSetWriter(c.stderr),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowBytes(true),
		progressbar.OptionUseIECUnits(true),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionFullWidth(),
		progressbar.OptionThrottle(50*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
}

// endBar ends bar (nil: none) after an operation that returned err: the
// bar is cleared on success, left with a newline after it on failure.
func endBar(w io.Writer, bar *progressbar.ProgressBar, err error) {
	switch {
	case bar == nil:
	case err == nil:
		_ = bar.Finish()
	default:
		_ = bar.Exit()
		fmt.Fprintln(w)
	}
}

// syncView shows the progress of `wats sync`.
type syncView interface {
	// update shows one progress report, the final one included.
	update(api.SyncProgress)
	// done ends the view after the sync returned final and err.
	done(final *api.SyncProgress, err error)
}

// jsonSyncView prints each report as one JSON line (NDJSON).
type jsonSyncView struct{ w io.Writer }

func (v *jsonSyncView) update(p api.SyncProgress) {
	b, err := json.Marshal(p)
	if err == nil {
		fmt.Fprintf(v.w, "%s\n", b)
	}
}

func (v *jsonSyncView) done(*api.SyncProgress, error) {}

// lineSyncView prints a plain line per report, for logs and pipes: a
// report that says what the last line said (the daemon reports at times,
// whether or not anything moved) prints nothing.
type lineSyncView struct {
	w    io.Writer
	last string
}

func (v *lineSyncView) update(p api.SyncProgress) {
	if p.Done || p.Error != "" {
		return // done prints the summary
	}
	var line string
	if p.Shares != nil {
		line = fmt.Sprintf("sync from %s: received %d, stored %d, dropped %d; %s\n",
			humanize.Plural(len(p.Shares), "peer"), p.Received, p.Stored, p.Dropped, sharesLine(p.Shares))
	} else {
		line = fmt.Sprintf("sync from %s: at position %d of %d, received %d, stored %d, dropped %d\n",
			shortPeer(p.Peer), p.Cursor, p.PeerHead, p.Received, p.Stored, p.Dropped)
	}
	if line != v.last {
		v.last = line
		io.WriteString(v.w, line)
	}
}

func (v *lineSyncView) done(final *api.SyncProgress, err error) {
	if final != nil && (err == nil || final.Shares != nil) {
		fmt.Fprintln(v.w, syncSummary(final))
	}
}

func syncSummary(p *api.SyncProgress) string {
	if p.Shares != nil {
		var b strings.Builder
		fmt.Fprintf(&b, "synced from %s: received %s, stored %d new, dropped %d invalid",
			humanize.Plural(len(p.Shares), "peer"), humanize.Plural(int(p.Received), "event"), p.Stored, p.Dropped)
		for _, s := range p.Shares {
			share := ""
			if p.Stored > 0 {
				share = fmt.Sprintf(" (%s of those stored)", percent(s.Stored, p.Stored))
			}
			state := "up to position %d of its log"
			if !s.Done {
				state = "not done: at position %d of its log"
			}
			fmt.Fprintf(&b, "\n  %s\n    received %d, stored %d%s, dropped %d; "+state,
				s.Peer, s.Received, s.Stored, share, s.Dropped, s.Cursor)
		}
		return b.String()
	}
	return fmt.Sprintf("synced %s: received %s, stored %d new, dropped %d invalid; up to position %d of its log",
		p.Peer, humanize.Plural(int(p.Received), "event"), p.Stored, p.Dropped, p.Cursor)
}

// sharesLine is each peer's share of a sync from several, on one line:
// the events stored from each, by short peer id.
func sharesLine(shares []api.SyncShare) string {
	parts := make([]string, len(shares))
	for i, s := range shares {
		parts[i] = fmt.Sprintf("%s %d", shortPeer(s.Peer), s.Stored)
	}
	return "stored from each: " + strings.Join(parts, ", ")
}

// percent is part of whole as a whole percentage, "-" of nothing.
func percent(part, whole uint64) string {
	if whole == 0 {
		return "-"
	}
	return fmt.Sprintf("%d%%", part*100/whole)
}

// barSyncView draws a progress bar of the cursor against the peer's head.
type barSyncView struct {
	w   io.Writer
	bar *progressbar.ProgressBar
}

func newBarSyncView(w io.Writer) *barSyncView { return &barSyncView{w: w} }

func (v *barSyncView) update(p api.SyncProgress) {
	desc, at := "sync "+shortPeer(p.Peer), p.Cursor
	if p.Shares != nil { // from several peers: the events stored against the highest head
		desc, at = fmt.Sprintf("sync from %d peers", len(p.Shares)), p.Stored
	}
	if v.bar == nil {
		v.bar = progressbar.NewOptions64(int64(max(p.PeerHead, 1)),
			progressbar.OptionSetWriter(v.w),
			progressbar.OptionSetDescription(desc),
			progressbar.OptionShowCount(),
			progressbar.OptionSetItsString("events"),
			progressbar.OptionShowIts(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionFullWidth(),
			progressbar.OptionClearOnFinish(),
		)
	}
	if int64(p.PeerHead) > v.bar.GetMax64() {
		v.bar.ChangeMax64(int64(p.PeerHead))
	}
	if p.Shares != nil {
		v.bar.Describe(desc + ": " + sharesLine(p.Shares))
	}
	_ = v.bar.Set64(int64(min(at, uint64(v.bar.GetMax64()))))
}

func (v *barSyncView) done(final *api.SyncProgress, err error) {
	if v.bar != nil {
		if err == nil {
			_ = v.bar.Finish()
		} else {
			_ = v.bar.Exit()
			fmt.Fprintln(v.w)
		}
	}
	if err == nil && final != nil {
		fmt.Fprintln(v.w, syncSummary(final))
	}
}

// printJSONLine prints v as one line of JSON: a bench's figure as it
// comes (--json output is then one object per line).
func (c *cli) printJSONLine(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.stdout, "%s\n", b)
	return err
}

// printFigure returns a bench's Measured callback for --json: each figure
// as a line {"figure": …}, as soon as it is measured.
func printFigure[T any](c *cli) func(T) {
	return func(f T) {
		if err := c.printJSONLine(struct {
			Figure T `json:"figure"`
		}{f}); err != nil {
			c.progress("warning: a figure not printed as JSON: %v", err)
		}
	}
}

// printResult prints a bench's result as the last line of its --json
// output, {"result": …}.
func printResult[T any](c *cli, r T) error {
	return c.printJSONLine(struct {
		Result T `json:"result"`
	}{r})
}

// table starts a table on standard output: columns two spaces apart, the
// header's columns (tab-separated) in the first line. The caller writes
// the rows, tab-separated, and flushes it.
func (c *cli) table(header string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	return tw
}
