package store

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/go-json-experiment/json/jsontext"
	blocks "github.com/ipfs/go-block-format"
	"github.com/ipfs/go-cid"

	"github.com/wats-network/wats/blobs"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/internal/ackmark"
	"github.com/wats-network/wats/peercache"
	"github.com/wats-network/wats/proto"
	"github.com/wats-network/wats/repo"

	"github.com/wats-network/wats/core"
)

// A damaged database (ADR 0032). pebble finds damage when it opens the
// database (a MANIFEST that does not parse, an sstable of another size
// than recorded) or when it reads a block whose checksum fails; either way
// its error names files and keys, not what the operator can do. The node
// says what: its key and config are intact, `wats repo check` reads every
// record and reports what is damaged, `wats repo repair` moves the
// database aside and keeps what can still be read, and sync and the
// fetcher fill the rest from peers.

// ErrDamaged is matched (errors.Is) by a *DamagedError.
var ErrDamaged = errors.New("store: the database is damaged")

// DamagedError is the error of node.New, OpenOffline, Check and Repair for
// a database that pebble found damaged.
type DamagedError struct {
	// Repo is the repo directory; Err pebble's error.
	Repo string
	Err  error
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("the database of repo %s is damaged: %v\n%s", e.Repo, e.Err, damageAdvice(e.Repo))
}

func (e *DamagedError) Unwrap() []error { return []error{ErrDamaged, e.Err} }

// damageAdvice says what an operator can do about a damaged database.
func damageAdvice(dir string) string {
	return fmt.Sprintf(`The identity key and config.toml are intact; only %s is damaged. Choices:
  wats repo check --repo %s     read every record and say what is damaged
  wats repo repair --repo %s    move the database aside (db.corrupt-TIME) and start
                                 with what can still be read: events re-verified,
                                 complete blobs; sync and peers fill in the rest
  or put back db/ from a backup of this repo.`, filepath.Join(dir, "db"), dir, dir)
}

// IsDamage reports whether err, from opening or reading the database,
// says its files are damaged (rather than, say, missing permissions).
func IsDamage(err error) bool {
	if err == nil {
		return false
	}
	if pebble.IsCorruptionError(err) {
		return true
	}
	s := err.Error()
	for _, m := range []string{"corrupt", "malformed manifest", "size mismatch", "checksum", "invalid table", "bad magic"} {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// CheckReport is what Check found. Counts are of records read whole;
// the Errors say what could not be read, the first maxReportErrors of
// them.
type CheckReport struct {
	// Opened: the database opened (read-only); OpenError why not, and
	// then EventsGood counts the events its tables still hold, read one
	// file at a time (what repair keeps).
	Opened    bool   `json:"opened"`
	OpenError string `json:"open_error,omitempty"`
	// Events is the log's head (the events it should hold); EventsGood
	// those read and verified (id, signature), EventsBad those read that
	// failed verification, EventsUnreadable those that could not be read.
	Events           uint64 `json:"events"`
	EventsGood       uint64 `json:"events_good"`
	EventsBad        uint64 `json:"events_bad"`
	EventsUnreadable uint64 `json:"events_unreadable"`
	// Blobs are the complete blobs; BlobsDamaged those that could not be
	// read whole.
	Blobs        int `json:"blobs"`
	BlobsDamaged int `json:"blobs_damaged"`
	// Partials are the partial blobs read (ADR 0054: what fetches that
	// did not complete verified, for the next fetch to go on from);
	// PartialsDamaged those with a block that does not read whole or
	// does not match its CID, each said in Errors. A repair keeps the
	// rest of each. Not counted by Damaged: a crash of the machine may
	// tear a partial's last leaves, which its next fetch drops and asks
	// for again (ADR 0054), and a repair skips the partials past
	// blobs.max_partial_bytes or max_partial_age unread.
	Partials        int `json:"partials"`
	PartialsDamaged int `json:"partials_damaged"`
	// Peers are the peer-cache records read; PeersDamaged those skipped.
	Peers        int `json:"peers"`
	PeersDamaged int `json:"peers_damaged"`
	// Scanned is how many keys a scan of the whole database read, with
	// their values, before the end or ScanError.
	Scanned   uint64   `json:"scanned"`
	ScanError string   `json:"scan_error,omitempty"`
	Errors    []string `json:"errors,omitempty"`
	// Lost is what is known of acknowledged events the database no
	// longer holds (ADR 0045): the record of the losses daemon starts
	// found, with the loss the acknowledged mark shows now, if no start
	// found it yet (then in Lost and Unnamed or Missing). Nil if none.
	Lost *LostEvents `json:"lost,omitempty"`
}

// maxReportErrors bounds CheckReport.Errors.
const maxReportErrors = 20

// Damaged reports whether the check found anything damaged.
func (c *CheckReport) Damaged() bool {
	return !c.Opened || c.EventsBad+c.EventsUnreadable > 0 || c.BlobsDamaged > 0 || c.PeersDamaged > 0 || c.ScanError != ""
}

// Missing is how many acknowledged events the database lost are not known
// to be back (Lost): a repair brings none of them, the daemon's syncs do.
func (c *CheckReport) Missing() uint64 {
	if c.Lost == nil {
		return 0
	}
	return c.Lost.Gone()
}

func (c *CheckReport) addError(format string, args ...any) {
	if len(c.Errors) < maxReportErrors {
		c.Errors = append(c.Errors, fmt.Sprintf(format, args...))
	}
}

// stores are the stores of a database opened read-only: for offline
// reads (Offline), a check or a repair. A store that did not open is nil.
type stores struct {
	db     *pebble.DB
	events *eventlog.Log
	blobs  *blobs.Store
	peers  *peercache.Cache
	// damagedPeers are the peer records the cache skipped.
	damagedPeers []peercache.DamagedRecord
}

// close closes the stores and the database. A read that a damaged block
// ended (discardFatal's panic, recovered) can leave pebble holding a file
// reference it never dropped, for which its Close panics in turn: that is
// recovered too, and reported as the error.
func (s *stores) close() error {
	if s.peers != nil {
		s.peers.Close()
	}
	if s.db == nil {
		return nil
	}
	return recovered(s.db.Close)
}

// openStores opens the database at dir read-only with logger as pebble's,
// and what of its stores will open: the error is for the database itself;
// problems lists why a store did not open (it is then nil). Nothing is
// written, not even an upgrade (which a writable open makes), and the
// blob store skips its sweep.
func openStores(dir string, maxPeers int, bo blobs.StoreOptions, logger pebble.Logger) (s *stores, problems []error, err error) {
	opts := PebbleOptions(slog.New(slog.DiscardHandler), "")
	opts.ReadOnly = true
	opts.Logger = logger
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, nil, err
	}
	s = &stores{db: db}
	// Each store reads some of the database as it opens (the log all its
	// ids, for its filter): a damaged block there is that store's problem
	// (with discardFatal as the logger, a panic), not the check's end.
	if err := recovered(func() (err error) { s.events, err = eventlog.Open(db); return err }); err != nil {
		s.events = nil
		problems = append(problems, fmt.Errorf("the event log does not open (a daemon's start may upgrade it): %w", err))
	}
	if err := recovered(func() (err error) {
		s.peers, s.damagedPeers, err = peercache.Open(db, &peercache.Options{MaxPeers: maxPeers})
		return err
	}); err != nil {
		s.peers = nil
		problems = append(problems, fmt.Errorf("the peer cache does not open: %w", err))
	}
	bo.ReadOnly = true
	bo.DataDir = DataDir(dir)
	if err := recovered(func() (err error) { s.blobs, err = blobs.OpenStore(db, &bo); return err }); err != nil {
		s.blobs = nil
		problems = append(problems, fmt.Errorf("the blob store does not open: %w", err))
	}
	return s, problems, nil
}

// recovered runs open and returns its error, or the panic it raised (a
// damaged block read through discardFatal) as an error.
func recovered(open func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%v", v)
		}
	}()
	return open()
}

// openForCheck is openStores for a check or a repair: problems go to rep,
// and a damaged block read panics (discardFatal), which the readers
// recover, rather than ending the process.
func openForCheck(dir string, maxPeers int, rep *CheckReport) (*stores, error) {
	s, problems, err := openStores(dir, maxPeers, blobs.StoreOptions{MaxBlobBytes: 1 << 53, QuotaBytes: 1 << 62}, discardFatal{})
	if err != nil {
		return nil, err
	}
	for _, p := range problems {
		rep.addError("%v", p)
	}
	if s.peers != nil {
		rep.Peers, rep.PeersDamaged = len(s.peers.All()), len(s.damagedPeers)
		for _, d := range s.damagedPeers {
			rep.addError("peer record %x: %v", d.Key, d.Err)
		}
	}
	return s, nil
}

// readEvents reads the log's events 1..head in pages, one event at a time
// around a page that cannot be read, and gives each verified one to keep
// (nil: none), counting into rep.
func readEvents(l *eventlog.Log, now time.Time, rep *CheckReport, keep func([]*eventlog.Event) error) error {
	rep.Events = uint64(l.Head())
	take := func(raws []jsontext.Value) error {
		var good []*eventlog.Event
		for _, raw := range raws {
			e, err := eventlog.Decode(raw)
			if err == nil {
				err = e.Verify(now.Add(24 * time.Hour)) // a clock behind the events' is no damage
			}
			if err != nil {
				rep.EventsBad++
				rep.addError("event %.80s: %v", raw, err)
				continue
			}
			rep.EventsGood++
			good = append(good, e)
		}
		if keep != nil && len(good) > 0 {
			return keep(good)
		}
		return nil
	}
	for after := core.Cursor(0); uint64(after) < rep.Events; {
		page, next, err := pageSafely(l, after, core.MaxPageEvents, proto.MaxPageBytes)
		if err == nil && len(page) > 0 {
			if err := take(page); err != nil {
				return err
			}
			after = next
			continue
		}
		// One position at a time past the damage.
		one, next1, err1 := pageSafely(l, after, 1, eventlog.MaxEventBytes)
		switch {
		case err1 != nil || len(one) == 0:
			rep.EventsUnreadable++
			if err1 == nil {
				err1 = err
			}
			rep.addError("event at position %d: %v", after+1, err1)
			after++
		default:
			if err := take(one); err != nil {
				return err
			}
			after = next1
		}
	}
	return nil
}

// pageSafely is l.Page, with a panic of pebble's on a damaged block
// (discardFatal) returned as an error.
func pageSafely(l *eventlog.Log, after core.Cursor, limit, maxBytes int) (page []jsontext.Value, next core.Cursor, err error) {
	defer func() {
		if v := recover(); v != nil {
			page, err = nil, fmt.Errorf("%v", v)
		}
	}()
	page, next, _, err = l.Page(after, limit, maxBytes)
	return page, next, err
}

// readBlobs reads every complete blob whole, giving each readable one to
// keep (nil: none) as a reader of its bytes.
func readBlobs(st *blobs.Store, rep *CheckReport, keep func(b blobs.BlobInfo, r io.Reader) error) error {
	ctx := context.Background()
	for _, b := range st.List() {
		rep.Blobs++
		if keep == nil {
			if err := st.CheckBlob(ctx, b.CID, b.Size); err != nil {
				rep.BlobsDamaged++
				rep.addError("blob %s: %v", b.CID, err)
			}
			continue
		}
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(st.Export(ctx, b.CID, b.Size, pw)) }()
		err := keep(b, pr)
		pr.CloseWithError(err)
		if err != nil {
			rep.BlobsDamaged++
			rep.addError("blob %s: %v", b.CID, err)
		}
	}
	return nil
}

// scanAll reads every key of db and its value, counting into rep.
func scanAll(db *pebble.DB, rep *CheckReport) {
	it, err := db.NewIter(nil)
	if err != nil {
		rep.ScanError = err.Error()
		return
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		if _, err := it.ValueAndErr(); err != nil {
			rep.ScanError = fmt.Sprintf("key %q: %v", it.Key(), err)
			return
		}
		rep.Scanned++
	}
	if err := it.Error(); err != nil {
		rep.ScanError = err.Error()
	}
}

// Check reads every record of r's database, read-only, as `wats repo
// check` does: every event (decoded, its id and signature verified),
// every complete blob whole, every peer record, then every key of the
// database with its value. The daemon must not run (the database is
// locked while it does). now verifies events' times.
func Check(r *repo.Repo, now time.Time) (*CheckReport, error) {
	// A running daemon holds the database: pebble would refuse to open it,
	// which reads as damage. Say who holds it instead (repo.ErrLocked).
	release, err := r.RLock()
	if err != nil {
		return nil, err
	}
	defer release()
	rep := &CheckReport{}
	if _, err := os.Stat(r.DBPath()); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			rep.Opened = true // a repo whose daemon never ran: nothing to damage
			return rep, nil
		}
		return nil, err
	}
	s, err := openForCheck(r.DBPath(), r.Config.PeerCache.MaxPeers, rep)
	if err != nil {
		// What repair could still keep: the events of its tables.
		rep.OpenError = err.Error()
		if err := salvageTables(r.DBPath(), now, rep, func([]*eventlog.Event) error { return nil }); err != nil {
			return nil, err
		}
		return rep, nil
	}
	defer s.close()
	rep.Opened = true
	if s.events != nil {
		safely(rep, func() { _ = readEvents(s.events, now, rep, nil) })
	}
	if s.blobs != nil {
		safely(rep, func() { _ = readBlobs(s.blobs, rep, nil) })
		for _, p := range s.blobs.Partials() {
			safely(rep, func() { _, _ = readPartial(s.blobs, p.CID, rep, func(blocks.Block) error { return nil }) })
		}
	}
	safely(rep, func() { scanAll(s.db, rep) })
	if err := reportLost(r.Dir, s, rep); err != nil {
		rep.addError("%v", err)
	}
	return rep, nil
}

// reportLost fills rep.Lost from the database's record and the repo's
// acknowledged mark.
func reportLost(dir string, s *stores, rep *CheckReport) error {
	rec, err := ReadLost(s.db)
	if err != nil {
		return err
	}
	if s.events != nil {
		lost, err := ackmark.Read(MarkPath(dir), s.events.Head())
		if err != nil {
			return err
		}
		rec.Add(lost)
	}
	if rec.Lost > 0 {
		rep.Lost = rec
	}
	return nil
}

// RepairReport is what Repair did.
type RepairReport struct {
	// MovedTo is where the damaged database now is.
	MovedTo string `json:"moved_to"`
	// Found is what was read of it (a CheckReport of the old database).
	Found CheckReport `json:"found"`
	// EventsKept and BlobsKept are what the new database holds.
	EventsKept int `json:"events_kept"`
	BlobsKept  int `json:"blobs_kept"`
	// PartialsKept are the partial blobs (ADR 0054) the new database
	// holds, carried over block by block, each checked against its CID,
	// within blobs.max_partial_bytes and max_partial_age;
	// PartialBytesKept the bytes of their leaves, from which the next
	// fetch of each goes on. PartialsDropped are the old database's
	// partial blobs not kept: past a bound, or with no leaf that reads.
	PartialsKept     int    `json:"partials_kept"`
	PartialBytesKept uint64 `json:"partial_bytes_kept"`
	PartialsDropped  int    `json:"partials_dropped"`
}

// Repair is `wats repo repair`: with the repo locked (no daemon may
// run), it moves r's database aside as db.corrupt-<UTC time> and makes a
// new one holding what can still be read of the old: its events, each
// verified again, and its complete blobs, each imported again (so checked
// against its CID). The peer cache starts empty (peers earn records
// again); sync and the fetcher bring the rest from peers. Its partial
// blobs are carried over too (carryPartials), so that their fetches go
// on from what they verified (ADR 0054, addendum).
func Repair(r *repo.Repo, now time.Time) (*RepairReport, error) {
	release, err := r.Lock()
	if err != nil {
		return nil, err
	}
	defer release()
	if _, err := os.Stat(r.DBPath()); err != nil {
		return nil, fmt.Errorf("store: repair: %w", err)
	}
	moved := r.DBPath() + repo.MovedAsideInfix + now.UTC().Format("20060102T150405Z")
	for i := 2; ; i++ { // a repair of the same second
		if _, err := os.Lstat(moved); errors.Is(err, os.ErrNotExist) {
			break
		}
		moved = fmt.Sprintf("%s%s%s-%d", r.DBPath(), repo.MovedAsideInfix, now.UTC().Format("20060102T150405Z"), i)
	}
	if err := os.Rename(r.DBPath(), moved); err != nil {
		return nil, fmt.Errorf("store: repair: move the database aside: %w", err)
	}
	rep := &RepairReport{MovedTo: moved}
	ndb, err := pebble.Open(r.DBPath(), PebbleOptions(slog.New(slog.DiscardHandler), ""))
	if err != nil {
		return nil, fmt.Errorf("store: repair: a new database: %w", err)
	}
	defer ndb.Close()
	nlog, err := eventlog.Open(ndb)
	if err != nil {
		return nil, fmt.Errorf("store: repair: %w", err)
	}
	// The partials' bounds are the node's, applied as the daemon's open
	// would; clock stands for the time each carried partial last
	// progressed while it is carried, so that it keeps its age and its
	// place among the least recently progressed.
	maxPartial, maxAge := r.Config.Blobs.PartialBounds()
	var clock atomic.Pointer[time.Time]
	nblobs, err := blobs.OpenStore(ndb, &blobs.StoreOptions{
		MaxBlobBytes: 1 << 53, QuotaBytes: 1 << 62, DataDir: DataDir(r.DBPath()),
		MaxPartialBytes: maxPartial, MaxPartialAge: maxAge,
		Now: func() time.Time {
			if t := clock.Load(); t != nil {
				return *t
			}
			return time.Now()
		},
	})
	if err != nil {
		return nil, fmt.Errorf("store: repair: %w", err)
	}
	defer nblobs.Close() // before ndb's: the kept blobs' data files synced
	old, err := openForCheck(moved, r.Config.PeerCache.MaxPeers, &rep.Found)
	if err != nil {
		// pebble cannot open it: read its tables one by one.
		rep.Found.OpenError = err.Error()
		err := salvageTables(moved, now, &rep.Found, func(evs []*eventlog.Event) error {
			added, err := nlog.Append(evs)
			rep.EventsKept += len(added)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("store: repair: store events: %w", err)
		}
		return rep, nil
	}
	defer old.close()
	rep.Found.Opened = true
	keep := func(evs []*eventlog.Event) error {
		added, err := nlog.Append(evs)
		rep.EventsKept += len(added)
		return err
	}
	var storeErr error
	if old.events != nil {
		safely(&rep.Found, func() { storeErr = readEvents(old.events, now, &rep.Found, keep) })
	} else {
		// The log did not open (a damaged block of its id index, which
		// opening reads): its events are read from the tables, as for a
		// database that does not open.
		storeErr = salvageTables(moved, now, &rep.Found, keep)
	}
	if storeErr != nil {
		return nil, fmt.Errorf("store: repair: store events: %w", storeErr)
	}
	if old.blobs != nil {
		safely(&rep.Found, func() {
			_ = readBlobs(old.blobs, &rep.Found, func(b blobs.BlobInfo, rd io.Reader) error {
				c, size, err := nblobs.ImportSized(context.Background(), rd, -1, b.Name)
				switch {
				case err != nil:
					return err
				case !c.Equals(b.CID) || size != b.Size:
					_ = nblobs.Remove(context.Background(), c)
					return fmt.Errorf("read back as %s (%d bytes)", c, size)
				}
				rep.BlobsKept++
				return nil
			})
		})
		carryPartials(old.blobs, nblobs, &clock, now, maxPartial, maxAge, rep)
	}
	return rep, nil
}

// carryPartials carries the partial blobs of the old store (ADR 0054)
// into the new one by the new store's own fetch path: a Reservation,
// each block of the partial that reads whole and matches its CID put as
// a fetch puts it, the Reservation released (ADR 0054, addendum). The
// bounds are applied as at the daemon's open: a partial to which no
// leaf was added for more than maxAge before now is not carried, nor,
// the most recently progressed first, those past the first that would
// take the leaves kept beyond maxBytes (below 0: none kept; the new
// store's own bounds then check what was carried). Each keeps the time
// it last progressed (clock, the new store's Now meanwhile). A block
// that does not read is said in rep.Found's errors and not carried; a
// partial none of whose leaves reads is dropped.
func carryPartials(old, nb *blobs.Store, clock *atomic.Pointer[time.Time], now time.Time, maxBytes int64, maxAge time.Duration, rep *RepairReport) {
	ctx := context.Background()
	ps := old.Partials() // the least recently progressed first
	var kept uint64
	full := maxBytes < 0
	for _, p := range slices.Backward(ps) {
		if maxAge >= 0 && now.UnixMilli()-p.Progressed.UnixMilli() > maxAge.Milliseconds() {
			continue
		}
		if full || kept+p.Held > uint64(maxBytes) {
			full = true
			continue
		}
		safely(&rep.Found, func() {
			at := p.Progressed
			clock.Store(&at)
			defer clock.Store(nil)
			res, err := nb.Reserve(p.CID, p.Size)
			if err != nil {
				rep.Found.addError("partial blob %s: %v", p.CID, err)
				return
			}
			defer res.Release()
			held, err := readPartial(old, p.CID, &rep.Found, func(b blocks.Block) error { return nb.PutBlock(ctx, p.CID, b) })
			if err != nil {
				rep.Found.addError("partial blob %s: %v", p.CID, err)
			}
			kept += held
			if held == 0 && p.Held > 0 {
				res.Release()
				_ = nb.Remove(ctx, p.CID) // what was carried: inner nodes alone
			}
		})
	}
	for _, p := range nb.Partials() {
		rep.PartialsKept++
		rep.PartialBytesKept += p.Held
	}
	rep.PartialsDropped = len(ps) - rep.PartialsKept
}

// readPartial reads the partial blob root of st, giving each block that
// reads whole and matches its CID to put (blobs.Store.ReadPartial), and
// counts it into rep, each block that does not read said in rep.Errors.
// held is the bytes of the leaves given to put.
func readPartial(st *blobs.Store, root cid.Cid, rep *CheckReport, put func(blocks.Block) error) (held uint64, err error) {
	rep.Partials++
	held, bad, err := st.ReadPartial(context.Background(), root, put)
	if len(bad) > 0 {
		rep.PartialsDamaged++
	}
	for _, e := range bad {
		rep.addError("partial blob %s: %v (to be fetched again)", root, e)
	}
	return held, err
}

// safely runs read, turning a panic of pebble's (discardFatal) into an
// error of rep.
func safely(rep *CheckReport, read func()) {
	defer func() {
		if v := recover(); v != nil {
			rep.ScanError = fmt.Sprint(v)
			rep.addError("%v", v)
		}
	}()
	read()
}

// discardFatal is the pebble logger of a check or a repair: they report
// what they find, and a damaged block must not end the process.
type discardFatal struct{}

func (discardFatal) Infof(string, ...any)  {}
func (discardFatal) Errorf(string, ...any) {}
func (discardFatal) Fatalf(format string, args ...any) {
	panic(fmt.Errorf("pebble: "+format, args...))
}

// salvageTable calls event with the position and value of every event key
// of r that can be read, in key order. A damaged block ends an sstable
// iterator: salvageTable then finds the first position past it that reads
// (seeking past the last event read, with a doubling step and then a
// bisection: the positions whose seek lands in the damaged block are the
// ones just after the last read) and goes on from there. Each damaged
// block and unreadable value is reported to problem; unreadable counts the
// values that do not read.
func salvageTable(r *sstable.Reader, event func(pos uint64, v []byte), problem func(error), unreadable *uint64) {
	prefix := []byte(eventlog.KeyPrefix + "p/")
	upper := []byte(eventlog.KeyPrefix + "p0")
	key := func(pos uint64) []byte { return binary.BigEndian.AppendUint64(slices.Clone(prefix), pos) }
	// seek reports whether the first event at or after pos reads (ok), or
	// there is none (end); neither means that the seek hit damage.
	seek := func(pos uint64) (ok, end bool) {
		it, err := r.NewIter(sstable.NoTransforms, key(pos), upper, sstable.AssertNoBlobHandles)
		if err != nil {
			return false, false
		}
		defer it.Close()
		kv := it.First()
		return kv != nil, kv == nil && it.Error() == nil
	}
	var last uint64 // the position of the last event read; 0 before the first
	for from := prefix; ; {
		it, err := r.NewIter(sstable.NoTransforms, from, upper, sstable.AssertNoBlobHandles)
		if err != nil {
			problem(err)
			return
		}
		for kv := it.First(); kv != nil; kv = it.Next() {
			k := kv.K.UserKey
			if kv.Kind() != pebble.InternalKeyKindSet || len(k) != len(prefix)+8 {
				continue
			}
			last = binary.BigEndian.Uint64(k[len(prefix):])
			v, _, err := kv.Value(nil)
			if err != nil {
				*unreadable++
				continue
			}
			event(last, v)
		}
		err = it.Error()
		it.Close()
		if err == nil {
			return // the end of the table
		}
		problem(err)
		// The damaged positions are last+1 up to some bound: find the
		// first past them. lo fails; hi does not.
		lo, hi := last, uint64(0)
		for i := 0; i < 64 && hi == 0; i++ {
			step := uint64(1) << i
			if step > math.MaxUint64-last {
				return
			}
			switch ok, end := seek(last + step); {
			case end:
				return // nothing readable after the damaged block
			case ok:
				hi = last + step
			default:
				lo = last + step
			}
		}
		if hi == 0 {
			return // every seek past last hit the damaged block: it is the last
		}
		for lo+1 < hi {
			if mid := lo + (hi-lo)/2; func() bool { ok, _ := seek(mid); return ok }() {
				hi = mid
			} else {
				lo = mid
			}
		}
		from = key(hi)
	}
}

// salvageTables reads the events of every sstable of the database at dir
// one file at a time, as files, for a database that pebble cannot open (a
// damaged MANIFEST, an sstable of another size than it recorded) or whose
// event log does not (a damaged block of its id index): an
// event's key and value are in one table, so what a damaged file or block
// loses is only its own. Events are verified, deduplicated by id, and
// given to keep in log order. Blobs are not salvaged this way: their
// leaves live in blob files that only the MANIFEST ties to their keys.
func salvageTables(dir string, now time.Time, rep *CheckReport, keep func([]*eventlog.Event) error) error {
	files, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	type found struct {
		pos uint64
		e   *eventlog.Event
	}
	byID := map[string]found{}
	for _, f := range files {
		func() {
			defer func() {
				if v := recover(); v != nil {
					rep.addError("%s: %v", filepath.Base(f), v)
				}
			}()
			file, err := vfs.Default.Open(f)
			if err != nil {
				rep.addError("%s: %v", filepath.Base(f), err)
				return
			}
			readable, err := sstable.NewSimpleReadable(file)
			if err != nil {
				file.Close()
				rep.addError("%s: %v", filepath.Base(f), err)
				return
			}
			r, err := sstable.NewReader(context.Background(), readable, sstable.ReaderOptions{})
			if err != nil {
				readable.Close()
				rep.addError("%s: %v", filepath.Base(f), err)
				return
			}
			defer r.Close()
			salvageTable(r, func(pos uint64, v []byte) {
				e, err := eventlog.Decode(v)
				if err == nil {
					err = e.Verify(now.Add(24 * time.Hour))
				}
				if err != nil {
					rep.EventsBad++
					rep.addError("%s: event %.80s: %v", filepath.Base(f), v, err)
					return
				}
				if _, dup := byID[e.ID]; !dup {
					byID[e.ID] = found{pos: pos, e: e}
				}
			}, func(err error) { rep.addError("%s: %v", filepath.Base(f), err) }, &rep.EventsUnreadable)
		}()
	}
	all := make([]found, 0, len(byID))
	for _, f := range byID {
		all = append(all, f)
	}
	slices.SortFunc(all, func(a, b found) int { return cmp.Compare(a.pos, b.pos) })
	rep.EventsGood = uint64(len(all))
	for chunk := range slices.Chunk(all, core.MaxPageEvents) {
		evs := make([]*eventlog.Event, len(chunk))
		for i, f := range chunk {
			evs[i] = f.e
		}
		if err := keep(evs); err != nil {
			return err
		}
	}
	return nil
}
