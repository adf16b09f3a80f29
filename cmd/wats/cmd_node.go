package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/spf13/cobra"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/internal/fileio"
	"github.com/wats-network/wats/internal/humanize"
	"github.com/wats-network/wats/store"
)

// Commands that call a running daemon through the control API.

func (c *cli) idCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "id",
		Short: "Print the node's peer ID and full multiaddrs",
		Long: `Print the node's peer ID on the first line, then each address it listens
on as a full multiaddr (ending in /p2p/<peer id>), one a line: what another
node passes to 'wats peers connect' or puts in p2p.bootstrap. Without a
running daemon it reads the repo: the peer ID, and the configured p2p.listen
addresses (a daemon resolves port 0 and 0.0.0.0 to what it listens on).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := c.client()
			if err != nil {
				return err
			}
			id, err := cl.ID(cmd.Context())
			if errors.Is(err, api.ErrNoDaemon) {
				// The key and config say it all: no database is opened, so
				// a daemon starting meanwhile finds the repo free.
				r, rerr := c.openRepo()
				if rerr != nil {
					return rerr
				}
				oid, rerr := store.OfflineID(r, "wats/"+version)
				if rerr != nil {
					return rerr
				}
				fmt.Fprintf(c.stderr, "no daemon runs: read from %s on disk\n", r.Dir)
				fmt.Fprintln(c.stderr, "the addresses are config.toml's p2p.listen; a running daemon prints the ones it listens on")
				id, err = &oid, nil
			}
			if err != nil {
				return c.apiError(err)
			}
			if asJSON {
				return c.printJSON(id)
			}
			fmt.Fprintln(c.stdout, id.PeerID)
			for _, a := range id.Addrs {
				fmt.Fprintln(c.stdout, a)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (c *cli) statusCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Print the node's status: peers, events, blobs, disk",
		Long: `Print the node's status in words, a line each: its peers (and how much
each kind is trusted), the events of its log and the room left for them, the
blobs it holds, whether other nodes can reach it, the lookup service it
shares with them (the DHT), its disk and how long it has run. --json prints
the same as JSON, with fields that stay as they are for scripts.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return show(c, cmd, asJSON, (*api.Client).Status, func(st *api.Status) error {
				_, err := io.WriteString(c.stdout, statusText(statusLines(st)))
				return err
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// statusText lays out status's lines: each label, then what it says from
// one column on, wrapped between words to fit in maxHelpWidth columns
// (a number and its unit kept on one line), its further lines indented
// to that column.
func statusText(lines [][2]string) string {
	col := 0
	for _, l := range lines {
		col = max(col, len(l[0])+2) // "label:" and a space
	}
	var b strings.Builder
	for _, l := range lines {
		// A NUL, which no value holds (peers' strings are made
		// printable), holds a number to its unit while humanize.Wrap cuts;
		// a space again once it has.
		glued := numberAndUnit.ReplaceAllString(l[1], "$1\x00$2")
		parts := humanize.Wrap(glued, maxHelpWidth-col)
		if len(parts) == 0 {
			parts = []string{""}
		}
		for i, part := range parts {
			label := ""
			if i == 0 {
				label = l[0] + ":"
			}
			fmt.Fprintf(&b, "%-*s%s\n", col, label, strings.ReplaceAll(part, "\x00", " "))
		}
	}
	return b.String()
}

// numberAndUnit matches a number, a space and a unit of bytes.
var numberAndUnit = regexp.MustCompile(`(\d) (B|KiB|MiB|GiB|TiB|PiB)\b`)

// statusLines are the lines of `wats status`, each a label and what it
// says, in words a newcomer reads without the ADRs.
func statusLines(st *api.Status) [][2]string {
	var lines [][2]string
	add := func(label, format string, args ...any) {
		lines = append(lines, [2]string{label, fmt.Sprintf(format, args...)})
	}
	add("peer id", "%s", st.PeerID)
	add("network", "%s", st.Network)
	add("agent", "%s", printable(st.Agent))
	add("peers", "%d connected (each greeted with hello)", st.Peers)
	if len(st.PeerTiers) > 0 || st.StrangerSlots > 0 {
		var tiers []string
		for _, t := range []string{"valued", "normal", "new", "suspect"} {
			if k := st.PeerTiers[t]; k > 0 {
				tiers = append(tiers, fmt.Sprintf("%d %s", k, t))
			}
		}
		add("peer tiers", "%s (valued peers are served the most, then normal, new, suspect)", orNone(strings.Join(tiers, ", ")))
		add("newcomers", "%d of %d connections for peers not remembered yet are in use", st.StrangerSlotsUsed, st.StrangerSlots)
	}
	add("events", "%d in the log (the newest at position %d)", st.Events, st.Head)
	lu := st.Log
	add("log room", "%d of %s events, %s of %s; %s, each allowed %s events, %s",
		lu.Events, quotaCount(lu.MaxEvents), humanize.Bytes(lu.Bytes), quotaBytes(lu.MaxBytes),
		humanize.Plural(int(lu.Authors), "author"), quotaCount(lu.MaxEventsPerAuthor), quotaBytes(lu.MaxBytesPerAuthor))
	if st.Gossip {
		add("gossip", "on: new events are sent to peers and received from them at once")
	} else {
		add("gossip", "off: new events come only when the node asks its peers for them")
	}
	add("dropped", "%d invalid events thrown away (bad signatures or shapes, from peers)", st.Dropped)
	add("busy", "%d requests from peers being handled now (over 64, new peers must first solve a puzzle)", st.InFlight)
	add("puzzles", "%d given to peers that asked too much, %d solved, %d failed; each now costs %d bits of work",
		st.ChallengesIssued, st.ChallengesSolved, st.ChallengesFailed, st.ChallengeEffort)
	add("blobs", "%d complete, %s of the %s allowed", st.Blobs, humanize.Bytes(st.BlobBytes), humanize.Bytes(st.BlobQuotaBytes))
	if st.PartialBlobs > 0 {
		add("partial blobs", "%d kept from fetches that did not complete, %s on disk ('blob ls --partial'; the next get goes on from them)",
			st.PartialBlobs, humanize.Bytes(st.PartialBytes))
	}
	add("bandwidth", "%s", bandwidthWords(st.Bandwidth))
	add("reachable", "%s", reachWords(st.Reachability))
	add("hole punches", "%d worked, %d failed (direct connections opened through a NAT)", st.HolePunches.Succeeded, st.HolePunches.Failed)
	for _, a := range st.RelayAddrs {
		add("relay addr", "%s (reached through this relay)", printable(a))
	}
	if d := st.DHT; d.Mode == config.DHTOff {
		add("dht", "off: peers and blobs are found only through connected peers")
	} else {
		role := "not answering others' lookups yet"
		if d.Server {
			role = "answering others' lookups too"
		}
		add("dht", "mode %s: looks up peers and blobs in the table nodes share; %s", d.Mode, role)
		add("dht peers", "%d in the network's table, %d in this LAN's; %s of this network found by the last search",
			d.RoutingTable, d.LANRoutingTable, humanize.Plural(d.Discovered, "node"))
		full := "none turned away"
		if d.ProviderRecordsRefused > 0 {
			full = fmt.Sprintf("%d turned away since the start because the store was full", d.ProviderRecordsRefused)
		}
		add("dht records", "%d of %d notes of who holds which blob, kept for other nodes; %s",
			d.ProviderRecords, d.MaxProviderRecords, full)
		if given := d.AllowancesBudget + d.AllowancesSolved; given+d.AllowancesOverSolved > 0 {
			add("dht greeted", "%s given a few lookups for their hello (%d paid from the share of new peers, %d by a "+
				"solved puzzle); %d more solved one past the most allowed a minute and got none",
				humanize.Plural(int(given), "new peer"), d.AllowancesBudget, d.AllowancesSolved, d.AllowancesOverSolved)
		}
	}
	if d := st.Disk; d != nil {
		state := "writes accepted"
		if d.Full {
			state = "FULL: new events, blobs and records refused until space is freed"
		}
		add("disk", "%s free, %s of it kept in reserve; %s", humanize.Bytes(d.FreeBytes), humanize.Bytes(d.ReserveBytes), state)
	}
	add("uptime", "%s", time.Duration(st.UptimeSeconds)*time.Second)
	return lines
}

// bandwidthWords is the status line of [bandwidth]: the bytes sent and
// received since the start, against the caps a second, and the month's
// bytes sent against the monthly cap (docs/adr/0048), in words: the peers
// with standing that blobs still go to past the monthly cap are those
// this node dialled or has known for a while (met in an earlier run, or
// ten minutes ago), as ADR 0041 defines them.
func bandwidthWords(b api.BandwidthStatus) string {
	rate := func(n uint64) string {
		if n == 0 {
			return "no cap"
		}
		return "cap " + humanize.Bytes(n) + "/s"
	}
	s := fmt.Sprintf("%s sent (%s), %s received (%s) since the start; %s sent in %s",
		humanize.Bytes(b.UpBytes), rate(b.UpBytesPerS), humanize.Bytes(b.DownBytes), rate(b.DownBytesPerS), humanize.Bytes(b.MonthUpBytes), b.Month)
	switch {
	case b.MonthlyUpBytes == 0:
		return s + " (no monthly cap)"
	case b.StrangerBlobsStopped:
		return s + fmt.Sprintf(", the monthly cap of %s reached: until the month ends, blobs go only to peers "+
			"this node dialled or has known for a while", humanize.Bytes(b.MonthlyUpBytes))
	}
	return s + fmt.Sprintf(" of the %s a month allowed", humanize.Bytes(b.MonthlyUpBytes))
}

// reachWords says what AutoNAT found (api.Status.Reachability) in words.
func reachWords(r string) string {
	switch r {
	case "public":
		return "yes: other nodes can dial this one directly"
	case "private":
		return "not directly: it is behind a NAT, reached through a relay, then directly once a hole punch works"
	case "unknown", "":
		return "not known yet: the node is still finding out whether other nodes can dial it"
	}
	return printable(r)
}

// orNone is s, or "none" when s is empty.
func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func (c *cli) peersCmd() *cobra.Command {
	var asJSON bool
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List the connected peers",
		Long: `List the connected peers, a row each: its peer ID; CONN: direct,
hole-punched (a direct connection a hole punch opened) or relayed (only
through a circuit relay: hello and sync, never blobs; docs/adr/0040); its
TIER; HEAD: the peer's log head as far as this node knows (as it said in
its hello, or as far as this node has synced since); CURSOR: how far this
node has synced the peer's log. Below, indented: who dialled, whether hello completed, its
gossipsub score (below -100 no gossip is exchanged with it, below -1000 it
is ignored; docs/adr/0031), its agent and the address of its connection.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return show(c, cmd, asJSON, (*api.Client).Peers, func(peers []api.Peer) error {
				_, err := io.WriteString(c.stdout, peersText(peers))
				return err
			})
		},
	}
	ls.Flags().BoolVar(&asJSON, "json", false, "print JSON")

	var connectJSON bool
	connect := &cobra.Command{
		Use:   "connect ADDR|PEERID [--json]",
		Short: "Connect to a peer by its multiaddr or peer ID and greet it",
		Long: `Dial ADDR, a full multiaddr ending in /p2p/<peer id> (as printed by
'wats id' on the other node), and wait until hello completes. A peer already
connected is dialled at ADDR all the same: a wrong address is an error.

Given a bare PEERID, the node dials the addresses it knows for the peer or,
when none answers, finds them on the network's DHT (p2p.dht; peer routing,
docs/adr/0040): behind a NAT, that may be a relay address, upgraded to a
direct connection by hole punching.

A peer that does not speak /wats/1 (an IPFS node such as kubo) is connected
too, and said to be one: it takes part in nothing but bitswap, where it can
serve blobs ('blob get CID --from ADDR').`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := c.clientFor(c.checkSyncPeer, args[0])
			if err != nil {
				return err
			}
			p, err := cl.Connect(cmd.Context(), args[0])
			if err != nil {
				return c.apiError(err)
			}
			if connectJSON {
				return c.printJSON(p)
			}
			if p.NotWats {
				fmt.Fprintf(c.stdout, "connected to %s, which does not speak /wats/1 (an IPFS node?): it can serve blobs over bitswap (blob get --from)\n", p.PeerID)
				return nil
			}
			fmt.Fprintf(c.stdout, "connected to %s (%s, head %d)\n", p.PeerID, printable(dash(p.Agent)), p.Head)
			return nil
		},
	}
	connect.Flags().BoolVar(&connectJSON, "json", false, "print the peer as JSON, as peers ls --json does")
	return group("peers", "List, connect, disconnect and remember peers", ls, connect, c.peersDisconnectCmd(), c.peersCacheCmd(), c.peersForgetCmd())
}

func (c *cli) peersCacheCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "List the peer cache: every peer this node remembers, most recently seen first",
		Long: `List the records of the persisted peer cache (docs/adr/0026, 0030): a peer
gets one only after it showed value (VALUE: stayed connected, gave events or
blobs, solved a challenge). For each: first and last seen, whether it is reputed
(met in an earlier run, or first hello at least 10 minutes ago: ADR 0014), its
tier and why (suspect, new, normal, valued: the rates it gets), and its value
history: requests served and missed (for what never existed here), and the
events and blob bytes it gave. --json has every count.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			peers, err := askOrRead(c, cmd, (*api.Client).PeerCache, func(o *store.Offline) ([]api.CachedPeer, error) {
				return store.CachedPeers(o.Peers(), time.Now(), nil), nil
			})
			if err != nil {
				return err
			}
			if asJSON {
				return c.printJSON(peers)
			}
			if len(peers) == 0 {
				_, err = io.WriteString(c.stdout, "no peer remembered yet: a peer gets a record once it shows value "+
					"(5 minutes connected, events or blobs given, a challenge solved)\n")
				return err
			}
			_, err = io.WriteString(c.stdout, peerCacheText(peers))
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (c *cli) peersForgetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "forget ID",
		Short: "Forget a peer: delete its record from the peer cache",
		Long: `Delete the record of peer ID from the peer cache: its addresses, sync cursor,
counts and reputation. A connected peer stays connected; its next hello starts
a new record.`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := c.clientFor(c.checkPeerID, args[0])
			if err != nil {
				return err
			}
			if err := cl.ForgetPeer(cmd.Context(), args[0]); err != nil {
				return c.apiError(err)
			}
			fmt.Fprintf(c.stdout, "forgot %s\n", args[0])
			return nil
		},
	}
}

// peersText lays out `peers ls`: a row a peer (its full ID, the kind of
// its connection, its tier, head and cursor), then, indented, who dialled,
// whether hello completed, its gossipsub score, agent and address,
// wrapped at spaces to maxHelpWidth columns (a row fits them while heads
// and cursors have at most 9 digits).
func peersText(peers []api.Peer) string {
	return rowsAndDetails("PEER ID\tCONN\tTIER\tHEAD\tCURSOR", len(peers), func(i int) string {
		p := peers[i]
		return fmt.Sprintf("%s\t%s\t%s\t%d\t%d", p.PeerID, dash(p.Conn), dash(p.Tier), p.Head, p.Cursor)
	}, func(i int) []string {
		p := peers[i]
		addr := "-"
		if len(p.Addrs) > 0 {
			addr = p.Addrs[0]
		}
		score := "none"
		if p.HasScore {
			score = strconv.FormatFloat(p.Score, 'f', 1, 64)
		}
		hello := "hello completed"
		switch {
		case p.NotWats:
			hello = "no hello (not wats)"
		case !p.Hello:
			hello = "no hello yet"
		}
		return []string{fmt.Sprintf("%s; %s; score %s; agent %s; address %s", p.Direction, hello, score,
			printable(dash(p.Agent)), printable(addr))}
	})
}

// rowsAndDetails lays out a table of n rows, header and row(i) in
// tab-separated columns, aligned, with under each row the paragraphs
// details(i), indented by 4 and wrapped at spaces to maxHelpWidth columns.
func rowsAndDetails(header string, n int, row func(i int) string, details func(i int) []string) string {
	var rows strings.Builder
	tw := tabwriter.NewWriter(&rows, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for i := range n {
		fmt.Fprintln(tw, row(i))
	}
	tw.Flush()
	lines := strings.Split(strings.TrimSuffix(rows.String(), "\n"), "\n")
	var b strings.Builder
	b.WriteString(lines[0] + "\n")
	for i := range n {
		b.WriteString(lines[i+1] + "\n")
		for _, para := range details(i) {
			for _, l := range humanize.Wrap(para, maxHelpWidth-4) {
				b.WriteString("    " + l + "\n")
			}
		}
	}
	return b.String()
}

// peerCacheText lays out `peers cache`: a row a peer (its full ID, which
// `peers forget` takes, its tier, when it was last seen and whether it is
// reputed), then, indented, its value history, byte counts in binary units,
// and why it has its tier; every line fits in maxHelpWidth columns.
func peerCacheText(peers []api.CachedPeer) string {
	return rowsAndDetails("PEER ID\tTIER\tLAST SEEN (UTC)\tREPUTED", len(peers), func(i int) string {
		p := peers[i]
		return fmt.Sprintf("%s\t%s\t%s\t%s", p.PeerID, p.Tier, whenMinute(p.LastSeen), yesNo(p.Reputed))
	}, func(i int) []string {
		p := peers[i]
		detail := fmt.Sprintf("value: %s; served %d of its requests, %d asked for what never existed here; gave %s and %s of blobs; "+
			"first seen %s; agent %s", orNone(p.Value), p.Served, p.Misses, humanize.Plural(int(p.Events), "event"),
			humanize.Bytes(p.Bytes), whenMinute(p.FirstSeen), printable(dash(p.Agent)))
		return []string{detail, "why " + printable(p.TierReason)}
	})
}

// whenMinute is when to the minute, for a table that must fit.
func whenMinute(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04")
}

// when formats a time of the peer cache for a table: UTC to the second,
// "-" for never.
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

// checkPeerID checks that s is a peer ID, with a usage error that says what
// to pass.
func (c *cli) checkPeerID(s string) error {
	if _, err := peer.Decode(s); err != nil {
		return usageErrorf("%q is not a peer ID (12D3KooW…): pass one as '%s peers cache' lists them", s, c.name)
	}
	return nil
}

// fullAddrShape is what a full multiaddr looks like, for messages.
const fullAddrShape = "/ip4/…/tcp/…/p2p/12D3KooW…"

// checkFullAddr checks that addr is a multiaddr ending in /p2p/<peer id>
// (what `peers connect` dials), with a usage error that says what to pass.
func (c *cli) checkFullAddr(addr string) error {
	if _, err := ma.NewMultiaddr(addr); err != nil {
		return usageErrorf("address %q is not a multiaddr: pass a full multiaddr such as %s, as '%s id' prints",
			addr, fullAddrShape, c.name)
	}
	if !strings.Contains(addr, "/p2p/") {
		return usageErrorf("address %q has no /p2p/<peer id>: pass a full multiaddr, as '%s id' prints", addr, c.name)
	}
	return nil
}

// checkSyncPeer checks the PEER of `sync` and `peers connect`: a peer ID
// or a full multiaddr.
func (c *cli) checkSyncPeer(s string) error {
	if strings.HasPrefix(s, "/") {
		return c.checkFullAddr(s)
	}
	if _, err := peer.Decode(s); err != nil {
		return usageErrorf("%q is neither a peer ID (12D3KooW…) nor a full multiaddr (%s)", s, fullAddrShape)
	}
	return nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (c *cli) eventsCmd() *cobra.Command {
	return group("events", "Add, list, get and tail events",
		c.eventsAddCmd(), c.eventsLsCmd(), c.eventsGetCmd(), c.eventsTailCmd())
}

// maxBodyFlagBytes caps the --body of `events add`, read from the command
// line or a file. docs/design.md §5: a body is at most 16 KiB; the daemon enforces
// that exactly, this cap only keeps a wrong @file (a large file, a device)
// from being read whole.
const maxBodyFlagBytes = 1 << 20

func (c *cli) eventsAddCmd() *cobra.Command {
	var (
		kind, body string
		blobArgs   []string
		asJSON     bool
	)
	cmd := &cobra.Command{
		Use:   "add --kind KIND [--body JSON] [--blob CID:SIZE[:NAME]]...",
		Short: "Sign, store and gossip a new event; print its id",
		Long: `Ask the daemon to sign an event of kind KIND (1 to 32 of [a-z0-9._-]) with
body JSON (a JSON object of at most 16 KiB; default {}), store it and gossip
it. Prints the event's id, or the whole signed event with --json.
--body @FILE reads the body from FILE, --body @- from stdin.

--blob names a blob of the node's store (see 'blob add'), with its size in
bytes and an optional file name; up to 16. Gossip names this node as their
provider, and peers with blobs.auto_fetch on fetch them.`,
		Example: `  wats events add --kind note --body '{"text":"hello"}'
  wats events add --kind file --blob bafkr4…:1048576:report.pdf`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkKind(kind); err != nil {
				return &usageError{err}
			}
			var refs []api.BlobRef
			for _, a := range blobArgs {
				// CID:SIZE[:NAME]; a name may itself hold colons.
				c, rest, _ := strings.Cut(a, ":")
				sz, name, _ := strings.Cut(rest, ":")
				if _, ok := strings.CutPrefix(a, c+":"); !ok || c == "" {
					return usageErrorf("--blob %q is not CID:SIZE[:NAME] (e.g. bafkr4…:1048576:report.pdf)", a)
				}
				b, err := parseBlobArg(c + ":" + sz)
				if err != nil {
					return usageErrorf("--blob %w", err)
				}
				refs = append(refs, api.BlobRef{CID: b.CID, Size: b.Size, Name: name})
			}
			b, err := c.readBody(body)
			if err != nil {
				return err
			}
			cl, err := c.client()
			if err != nil {
				return err
			}
			ev, err := cl.AddEvent(cmd.Context(), kind, b, refs...)
			if err != nil {
				return c.apiError(err)
			}
			return c.printStored(ev, asJSON)
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "the event's kind, 1 to 32 of [a-z0-9._-] (required)")
	cmd.Flags().StringVar(&body, "body", "{}", "the event's body: a JSON object, or @FILE, or @- for stdin")
	cmd.Flags().StringArrayVar(&blobArgs, "blob", nil, "a blob the event names, CID:SIZE[:NAME] (repeatable)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the stored signed event")
	return cmd
}

// checkKind applies docs/design.md §5's rule for kinds (core.MaxKindLen,
// core.IsKindChar) so that a typo is a usage error before any call; the
// daemon checks again.
func checkKind(kind string) error {
	if kind == "" {
		return errors.New("--kind is required, e.g. --kind note")
	}
	if len(kind) > core.MaxKindLen {
		return fmt.Errorf("--kind %q is %d bytes long: at most %d", kind, len(kind), core.MaxKindLen)
	}
	for _, r := range kind {
		if !core.IsKindChar(r) {
			return fmt.Errorf("--kind %q has %q: use only a-z, 0-9, '.', '_' and '-'", kind, r)
		}
	}
	return nil
}

// readBody returns the --body value as JSON: inline, @FILE or @-. It must
// be a JSON object (docs/design.md §5).
func (c *cli) readBody(flag string) (jsontext.Value, error) {
	raw := []byte(flag)
	if name, ok := strings.CutPrefix(flag, "@"); ok {
		var err error
		if raw, err = fileio.ReadCapped(name, c.stdin, maxBodyFlagBytes); err != nil {
			return nil, fmt.Errorf("--body: %w", err)
		}
	}
	// Unmarshal, unlike Value.IsValid, says why: a duplicate name, an
	// invalid escape or UTF-8, with the offset where it was found.
	var v jsontext.Value
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, usageErrorf("--body %.80q is not valid JSON (%s); give a JSON object in single quotes, "+
			"as in --body '{\"text\":\"hi\"}', or --body @FILE", raw, strings.TrimPrefix(err.Error(), "jsontext: "))
	}
	v = jsontext.Value(raw)
	if v.Kind() != '{' {
		return nil, usageErrorf("--body must be a JSON object such as '{\"text\":\"hi\"}', got %.80q", raw)
	}
	return v, nil
}

func (c *cli) eventsLsCmd() *cobra.Command {
	var (
		asJSON bool
		after  uint64
		limit  int
	)
	cmd := &cobra.Command{
		Use:   "ls [--after N] [--limit N]",
		Short: "List the events of the local log, oldest first",
		Long: `List one page of the local log: the events stored after cursor N
(default 0, from the start), at most --limit of them (1 to 256; default: the
daemon's page size). A page may hold fewer events than --limit: pages also
have a size in bytes. A row an event: its id cut to 16 characters (which
'events get' accepts), its time (UTC), the last 8 characters of its author's
peer ID, its kind and its body, cut to fit in 100 columns ('events get' shows
it whole); under it, indented, the blobs it names, if any. When more events
follow the page, a last line gives the command that lists the next page;
when none does, the page reached the head.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("limit") && (limit < 1 || limit > core.MaxPageEvents) {
				return usageErrorf("--limit %d: must be from 1 to %d (a page holds at most %d events)",
					limit, core.MaxPageEvents, core.MaxPageEvents)
			}
			page, err := askOrRead(c, cmd, func(cl *api.Client, ctx context.Context) (*api.EventPage, error) { return cl.Events(ctx, after, limit) },
				func(o *store.Offline) (*api.EventPage, error) {
					p, err := o.Events(after, limit)
					return &p, err
				})
			if err != nil {
				return err
			}
			if asJSON {
				return c.printJSON(page)
			}
			if _, err := io.WriteString(c.stdout, eventsText(page.Events)); err != nil {
				return err
			}
			if page.More {
				fmt.Fprintf(c.stdout, "more: %s\n", c.nextPageHint(page.Next, limit))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the page as JSON (events, next, more, head)")
	cmd.Flags().Uint64Var(&after, "after", 0, "list the events after this cursor")
	cmd.Flags().IntVar(&limit, "limit", 0, "list at most this many events, 1 to 256 (default: the daemon's page size)")
	return cmd
}

// nextPageHint is the `events ls` command that lists the page after next,
// with the same repo and limit (0: not given).
func (c *cli) nextPageHint(next uint64, limit int) string {
	args := append([]string{"events", "ls"}, c.repoHint()...)
	args = append(args, "--after", strconv.FormatUint(next, 10))
	if limit > 0 {
		args = append(args, "--limit", strconv.Itoa(limit))
	}
	return c.hint(args...)
}

// Widths of the columns of `events ls` and `events tail` before KIND: a
// short id (16 characters, which `events get` accepts), the time in UTC to
// the millisecond, and a short author (shortPeer). KIND is as wide as the
// page's widest kind up to maxKindWidth (ls) or tailKindWidth (tail: a
// stream cannot be aligned after the fact as a table is); a longer kind
// pushes its own row's BODY right, not every row's. BODY takes what is
// left of maxHelpWidth (at least 11 columns, after a kind of
// core.MaxKindLen).
const (
	eventIDWidth     = 16
	eventTimeWidth   = 24
	eventAuthorWidth = 9
	tailKindWidth    = 8
	maxKindWidth     = 12
)

// eventHeader is the first line of `events ls` and `events tail`.
func eventHeader(kindWidth int) string {
	return eventLine([5]string{"ID", "TIME", "AUTHOR", "KIND", "BODY"}, kindWidth)
}

// eventsText lays out a page of `events ls`: the header, then each event
// (eventText), its KIND column as wide as the widest kind of the page, up
// to maxKindWidth.
func eventsText(events []jsontext.Value) string {
	kindWidth := len("KIND")
	for _, ev := range events {
		cols, _ := eventFields(ev)
		kindWidth = max(kindWidth, min(utf8.RuneCountInString(cols[3]), maxKindWidth))
	}
	var b strings.Builder
	b.WriteString(eventHeader(kindWidth) + "\n")
	for _, ev := range events {
		b.WriteString(eventText(ev, kindWidth))
	}
	return b.String()
}

// eventText is an event of `events ls` or `events tail`: a row (a short id
// and author, the time in UTC, the kind, the body cut to fit in
// maxHelpWidth columns), then, indented by 4, the blobs it names
// (eventBlobs), wrapped at spaces to maxHelpWidth; every line fits in it.
func eventText(ev jsontext.Value, kindWidth int) string {
	cols, refs := eventFields(ev)
	var b strings.Builder
	b.WriteString(eventLine(cols, kindWidth) + "\n")
	if len(refs) > 0 {
		// A NUL, which no printable name holds, keeps each blob's name
		// and size on one line while humanize.Wrap cuts; a space again
		// once it has.
		glued := strings.ReplaceAll(eventBlobs(refs), " ", "\x00")
		glued = strings.ReplaceAll(glued, ",\x00", ", ")
		for _, l := range humanize.Wrap("blobs: "+glued, maxHelpWidth-4) {
			b.WriteString("    " + strings.ReplaceAll(l, "\x00", " ") + "\n")
		}
	}
	return b.String()
}

// eventFields are the columns of ev (id, time, author, kind, body; "?"
// for what does not decode) and the blobs it names.
func eventFields(ev jsontext.Value) ([5]string, []api.BlobRef) {
	var e struct {
		ID     string         `json:"id"`
		Author string         `json:"author"`
		Time   int64          `json:"time"`
		Kind   string         `json:"kind"`
		Body   jsontext.Value `json:"body"`
		Blobs  []api.BlobRef  `json:"blobs"`
	}
	if err := json.Unmarshal(ev, &e); err != nil {
		return [5]string{"?", "?", "?", "?", printable(string(ev))}, nil
	}
	t := time.UnixMilli(e.Time).UTC().Format("2006-01-02T15:04:05.000Z")
	body := e.Body.Clone()
	_ = body.Compact() // on one line, whatever whitespace it was signed with
	return [5]string{printable(short(e.ID, eventIDWidth)), t, printable(shortPeer(e.Author)), printable(e.Kind), printable(string(body))}, e.Blobs
}

// eventLine lays out cols (id, time, author, kind, body) two spaces apart
// in the widths above, KIND at least kindWidth wide, the body cut with "…"
// to what is left of maxHelpWidth columns.
func eventLine(cols [5]string, kindWidth int) string {
	var b strings.Builder
	for i, w := range []int{eventIDWidth, eventTimeWidth, eventAuthorWidth, kindWidth} {
		b.WriteString(cols[i])
		for n := utf8.RuneCountInString(cols[i]); n < w; n++ {
			b.WriteByte(' ')
		}
		b.WriteString("  ")
	}
	b.WriteString(cutRunes(cols[4], maxHelpWidth-utf8.RuneCountInString(b.String())))
	return b.String()
}

// cutRunes is s cut to at most n runes, its last one "…" when cut.
func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:max(n-1, 0)]) + "…"
}

// maxBlobNameShown is the most runes of a blob's name that `events ls`
// shows ('events get' shows it whole).
const maxBlobNameShown = 60

// eventBlobs is what `events ls` says of an event's blobs: each blob's
// name (cut to maxBlobNameShown; its short CID when it has none) and size;
// past two, how many more ('events get' shows them all).
func eventBlobs(refs []api.BlobRef) string {
	var parts []string
	for i, r := range refs {
		if i == 2 {
			parts = append(parts, fmt.Sprintf("+%d more", len(refs)-2))
			break
		}
		name := cutRunes(printable(r.Name), maxBlobNameShown)
		if name == "" {
			name = shortCID(r.CID)
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", name, humanize.Bytes(r.Size)))
	}
	return strings.Join(parts, ", ")
}

func short(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// shortPeer shortens a peer ID to its last 8 characters, the part that
// differs between peers (every Ed25519 peer ID starts with 12D3KooW).
func shortPeer(id string) string {
	if len(id) <= 12 {
		return id
	}
	return "…" + id[len(id)-8:]
}

func (c *cli) eventsGetCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "get ID",
		Short: "Print the event with this id (or id prefix) as JSON",
		Long: `Print the event whose id is ID as indented JSON (with or without --json).
ID is the full id (64 hex characters, as 'events add' prints) or the start
of one, from 8 characters (the 16 that 'events ls' shows will do), as long as
no other event's id starts the same way; upper or lower case.`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Ids are lowercase hex; one copied from elsewhere in
			// uppercase names the same event.
			id := strings.ToLower(args[0])
			if !api.IsEventIDPrefix(id) {
				return usageErrorf("event id %q: want %d to %d hex characters: the id 'events add' prints, or its start, as 'events ls' shows",
					args[0], api.MinEventIDPrefix, api.EventIDLen)
			}
			cl, err := c.client()
			if err != nil {
				return err
			}
			ev, err := cl.Event(cmd.Context(), id)
			switch {
			case errors.Is(err, api.ErrNotFound) && len(id) == api.EventIDLen:
				return fmt.Errorf("no event %s in the log of repo %s", id, c.repoDir)
			case errors.Is(err, api.ErrNotFound):
				return fmt.Errorf("no event whose id starts with %s in the log of repo %s", id, c.repoDir)
			case errors.Is(err, api.ErrAmbiguous):
				return fmt.Errorf("id prefix %s matches several events; give more characters", id)
			case err != nil:
				return c.apiError(err)
			}
			return c.printValue(ev)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (the output is JSON anyway; accepted like the other commands' --json)")
	return cmd
}

func (c *cli) eventsTailCmd() *cobra.Command {
	var (
		after  uint64
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "tail [--after N] [--json]",
		Short: "Print events as they are stored, until interrupted",
		Long: `Print each event as the daemon stores it (from peers, gossip or
'events add'), until interrupted: a line each, with the columns of 'events ls'
(the header first) and its blobs under it, or with --json the whole signed
event as one compact JSON object a line. By default it starts at the current
head; --after 0 prints the whole log first.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := c.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if !cmd.Flags().Changed("after") {
				st, err := cl.Status(ctx)
				if err != nil {
					return c.apiError(err)
				}
				after = st.Head
			}
			if !asJSON {
				fmt.Fprintln(c.stdout, eventHeader(tailKindWidth))
			}
			err = cl.Tail(ctx, after, func(ev jsontext.Value) error {
				var err error
				if asJSON {
					_, err = fmt.Fprintf(c.stdout, "%s\n", ev)
				} else {
					_, err = fmt.Fprint(c.stdout, eventText(ev, tailKindWidth))
				}
				return err
			})
			if ctx.Err() != nil {
				return nil // interrupted: the normal way to stop
			}
			// The stream is endless: its end means the daemon closed it
			// (apiError says so).
			return c.apiError(err)
		},
	}
	cmd.Flags().Uint64Var(&after, "after", 0, "start after this cursor (default: the current head)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print each signed event as one JSON object a line")
	return cmd
}

func (c *cli) syncCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "sync [PEER]",
		Short: "Catch up on a peer's log, or on every connected peer's, now, showing progress",
		Long: `Ask the daemon to sync PEER's log to its head now. PEER is the peer ID of
a connected peer or a full multiaddr to dial first. Without PEER, sync from
every connected peer at once: the peers that serve sync by id range share
the catch-up between them, each within its own rate limits (ADR 0052), and
the output shows each peer's share (the events that came from it). On a
terminal this shows a progress bar; otherwise it prints a line per progress
report; --json prints the reports as JSON lines.`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return c.syncAll(cmd.Context(), asJSON)
			}
			cl, err := c.clientFor(c.checkSyncPeer, args[0])
			if err != nil {
				return err
			}
			view := c.syncView(asJSON)
			final, err := cl.Sync(cmd.Context(), args[0], view.update)
			view.done(final, err)
			switch {
			case errors.Is(err, api.ErrSyncFailed):
				return &daemonError{what: "sync of " + args[0], msg: final.Error, err: err}
			case errors.Is(err, api.ErrStreamEnded):
				return fmt.Errorf("sync of %s did not finish: %w", args[0], errStreamClosed)
			}
			return c.apiError(err)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print each progress report as a JSON line")
	return cmd
}

// syncView is how a sync's progress is shown: JSON lines with --json, a
// bar on a terminal, else a line a report.
func (c *cli) syncView(asJSON bool) syncView {
	switch {
	case asJSON:
		return &jsonSyncView{w: c.stdout}
	case isTerminal(c.stdout):
		return newBarSyncView(c.stdout)
	}
	return &lineSyncView{w: c.stdout}
}

// syncAll is `wats sync` without a PEER: a sync from every connected peer
// (api.Client.SyncAll), each peer's share shown.
func (c *cli) syncAll(ctx context.Context, asJSON bool) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	view := c.syncView(asJSON)
	final, err := cl.SyncAll(ctx, view.update)
	view.done(final, err)
	switch {
	case errors.Is(err, api.ErrSyncFailed):
		return &daemonError{what: "sync from every peer", msg: final.Error, err: err}
	case errors.Is(err, api.ErrStreamEnded):
		return fmt.Errorf("sync from every peer did not finish: %w", errStreamClosed)
	}
	return c.apiError(err)
}

// printValue writes a JSON value from the daemon, indented.
// printStored prints an event the daemon stored for this command (events
// add, crash report): its id, or with asJSON the signed event.
func (c *cli) printStored(ev jsontext.Value, asJSON bool) error {
	if asJSON {
		return c.printValue(ev)
	}
	id, err := api.EventID(ev)
	if err != nil {
		return err
	}
	fmt.Fprintln(c.stdout, id)
	return nil
}

func (c *cli) printValue(v jsontext.Value) error {
	v = v.Clone()
	if err := v.Indent(jsontext.WithIndent("  ")); err != nil {
		return fmt.Errorf("the daemon returned invalid JSON: %w", err)
	}
	_, err := fmt.Fprintf(c.stdout, "%s\n", v)
	return err
}

func marshalIndent(v any) ([]byte, error) {
	return json.Marshal(v, jsontext.WithIndent("  "))
}

// quotaCount and quotaBytes print a quota of the [events] table: 0 is
// unlimited.
func quotaCount(n uint64) string {
	if n == 0 {
		return "unlimited"
	}
	return strconv.FormatUint(n, 10)
}

func quotaBytes(n uint64) string {
	if n == 0 {
		return "unlimited"
	}
	return humanize.Bytes(n)
}
