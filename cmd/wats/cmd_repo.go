package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wats-network/wats/internal/humanize"
	"github.com/wats-network/wats/store"
)

func (c *cli) repoCmd() *cobra.Command {
	var checkJSON, repairJSON bool
	check := &cobra.Command{
		Use:   "check [--json]",
		Short: "Read every record of a stopped node's database and say what is damaged",
		Long: `Read the whole database of the repo, read-only: every event (decoded, its id
and signature verified), every complete blob whole, every peer record, then
every key with its value. Prints what it read and what it could not, and
exits 1 when something is damaged. It also tells of acknowledged events the
database lost with a damaged WAL tail (the repo's acked mark, ADR 0045) and
how many came back from peers since; it exits 1 while some are missing. The
daemon must be stopped (with one running, it says which holds the repo). A
database that does not open at all is read one table file at a time, to say
how many events 'repo repair' would keep.`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			r, err := c.openRepo()
			if err != nil {
				return err
			}
			rep, err := store.Check(r, time.Now())
			if err != nil {
				return err
			}
			if checkJSON {
				if err := c.printJSON(rep); err != nil {
					return err
				}
			} else {
				printCheck(c.stdout, rep)
			}
			if rep.Damaged() || rep.Missing() > 0 {
				return &exitCodeError{code: exitError}
			}
			return nil
		},
	}
	check.Flags().BoolVar(&checkJSON, "json", false, "print the report as JSON")

	repair := &cobra.Command{
		Use:   "repair [--json]",
		Short: "Move a damaged database aside and keep what can still be read",
		Long: `Move the repo's database aside, as db.corrupt-TIME (UTC) beside it, and make
a new one holding what can still be read of the old: its events, each
verified again; its complete blobs, each imported again and checked
against its CID; and its partial blobs (what fetches that did not complete
verified), each block checked against its CID, within
blobs.max_partial_bytes and max_partial_age, so that their fetches go on
from them. The peer cache starts empty: peers earn their records
again. Once the daemon starts, sync and the fetcher bring the rest from
peers. The identity key and config.toml are not touched. The daemon must be
stopped (the repo is locked meanwhile). Delete db.corrupt-TIME once the
node is back.`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			r, err := c.openRepo()
			if err != nil {
				return err
			}
			rep, err := store.Repair(r, time.Now())
			if err != nil {
				return err
			}
			if repairJSON {
				return c.printJSON(rep)
			}
			fmt.Fprintf(c.stdout, "moved the database to %s\n", rep.MovedTo)
			printCheck(c.stdout, &rep.Found)
			fmt.Fprintf(c.stdout, "kept %d events, %d blobs and %s (%s held, for their fetches to go on from) in a new database; "+
				"start the daemon: peers fill in the rest\n",
				rep.EventsKept, rep.BlobsKept, humanize.Plural(rep.PartialsKept, "partial blob"), humanize.Bytes(rep.PartialBytesKept))
			if rep.PartialsDropped > 0 {
				fmt.Fprintf(c.stdout, "dropped %s: past blobs.max_partial_bytes or max_partial_age, or no leaf read\n",
					humanize.Plural(rep.PartialsDropped, "partial blob"))
			}
			return nil
		},
	}
	repair.Flags().BoolVar(&repairJSON, "json", false, "print the report as JSON")
	return group("repo", "Check and repair a stopped node's database", check, repair)
}

// printCheck prints a CheckReport for people.
func printCheck(w io.Writer, rep *store.CheckReport) {
	if !rep.Opened {
		fmt.Fprintf(w, "the database does not open: %s\n", rep.OpenError)
		fmt.Fprintf(w, "its tables, read one by one, hold %d readable events (%d bad)\n", rep.EventsGood, rep.EventsBad)
	} else {
		fmt.Fprintf(w, "events: %d of %d read and verified, %d bad, %d unreadable\n",
			rep.EventsGood, rep.Events, rep.EventsBad, rep.EventsUnreadable)
		fmt.Fprintf(w, "blobs: %d, %d damaged\n", rep.Blobs, rep.BlobsDamaged)
		if rep.Partials > 0 {
			fmt.Fprintf(w, "partial blobs: %d, %d with blocks that do not read (fetched again)\n", rep.Partials, rep.PartialsDamaged)
		}
		fmt.Fprintf(w, "peer records: %d, %d damaged\n", rep.Peers, rep.PeersDamaged)
		if rep.ScanError != "" {
			fmt.Fprintf(w, "a scan of every key stopped after %d keys: %s\n", rep.Scanned, firstLine(rep.ScanError))
		} else {
			fmt.Fprintf(w, "a scan of every key read %d keys\n", rep.Scanned)
		}
	}
	if l := rep.Lost; l != nil {
		fmt.Fprintf(w, "lost: %d acknowledged events, dropped by the database with the damaged tail of its WAL (%s); "+
			"%d came back from peers, %d still missing\n", l.Lost, lostWhen(l), l.Back, l.Gone())
	}
	for _, e := range rep.Errors {
		fmt.Fprintf(w, "  %s\n", firstLine(e))
	}
	switch {
	case rep.Damaged():
		fmt.Fprintln(w, "damaged: 'wats repo repair' moves the database aside and keeps what can be read")
	case rep.Missing() > 0:
		fmt.Fprintln(w, "events lost: start the daemon; it fetches them back from the peers that hold them")
	default:
		fmt.Fprintln(w, "ok: nothing damaged")
	}
}

// lostWhen says when a loss was found: by this check (only the
// acknowledged mark shows it: no daemon started since), or at a start.
func lostWhen(l *store.LostEvents) string {
	if l.At.IsZero() {
		return "found by this check"
	}
	return "the latest found at the start of " + l.At.Format(time.RFC3339)
}

// firstLine is s up to its first newline (pebble's errors carry stacks).
func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
