package store

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/go-json-experiment/json"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/internal/ackmark"
	"github.com/wats-network/wats/repo"
)

// LostKey holds the LostEvents record of a node's database (ADR 0045).
const LostKey = "node/lost"

// LostEvents is what the node knows of acknowledged events its database
// no longer held at a start: pebble dropped the damaged tail of its WAL
// with them (ADR 0045). It is kept in the database until every named one
// came back.
type LostEvents struct {
	// At is when the latest loss was found.
	At time.Time `json:"at"`
	// Lost counts the acknowledged events found missing, at every start
	// that found some.
	Lost uint64 `json:"lost"`
	// Back counts those that came back since, from peers (by sync or
	// gossip), among the named ones.
	Back uint64 `json:"back"`
	// Missing are the short ids (16 hex digits) of the named events not
	// back yet; Unnamed counts the lost events the mark could not name
	// (more than its 4,096 slots), which cannot be followed.
	Missing []string `json:"missing,omitempty"`
	Unnamed uint64   `json:"unnamed,omitempty"`
}

// Add counts the loss a mark shows: its events, the short ids it names
// as missing, the rest as unnamed.
func (l *LostEvents) Add(lost ackmark.Lost) {
	l.Lost += lost.Count()
	for _, id := range lost.IDs {
		l.Missing = append(l.Missing, hex.EncodeToString(id[:]))
	}
	l.Unnamed += lost.Count() - uint64(len(lost.IDs))
}

// Gone is how many lost events are not known to be back.
func (l *LostEvents) Gone() uint64 { return uint64(len(l.Missing)) + l.Unnamed }

// MarkPath is the acknowledged mark of the repo at dir.
func MarkPath(dir string) string { return filepath.Join(dir, repo.AckedFile) }

// ReadLost reads the database's LostEvents record; an empty one if none.
func ReadLost(db *pebble.DB) (*LostEvents, error) {
	v, closer, err := db.Get([]byte(LostKey))
	if errors.Is(err, pebble.ErrNotFound) {
		return &LostEvents{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: read the lost events: %w", err)
	}
	defer closer.Close()
	var rec LostEvents
	if err := json.Unmarshal(v, &rec); err != nil {
		return nil, fmt.Errorf("store: read the lost events: %w", err)
	}
	return &rec, nil
}

// WriteLost writes the database's LostEvents record, durably.
func WriteLost(db *pebble.DB, rec *LostEvents) error {
	v, err := json.Marshal(rec)
	if err == nil {
		err = db.Set([]byte(LostKey), v, pebble.Sync)
	}
	if err != nil {
		return fmt.Errorf("store: record the lost events: %w", err)
	}
	return nil
}

// LostCheckEvery is how often a node that lost acknowledged events looks
// whether sync brought them back (LostWatch.Run).
const LostCheckEvery = 5 * time.Second

// LostWatch keeps the event log's acknowledged mark (ADR 0045) and looks
// for the events a start found lost until sync has brought them all back.
// Build it with OpenLostWatch; Close closes the mark.
type LostWatch struct {
	db     *pebble.DB
	events *eventlog.Log
	log    *slog.Logger
	mark   *ackmark.Mark
	// markFailed, set once the mark's write failed (under the log's
	// lock), keeps the warning to one.
	markFailed bool
	// rec is what is still missing, nil if nothing; only check changes
	// it, from Run's goroutine.
	rec *LostEvents
}

// OpenLostWatch compares the head of events, the log of db in the repo at
// dir, with the repo's acknowledged mark, records durably and logs what
// was lost at now, and opens the mark for the log's commits. Lost events
// still missing, of this start or an earlier one, are looked for by Run.
func OpenLostWatch(db *pebble.DB, events *eventlog.Log, dir string, now time.Time, log *slog.Logger) (*LostWatch, error) {
	head := events.Head()
	lost, err := ackmark.Read(MarkPath(dir), head)
	if err != nil {
		return nil, err
	}
	rec, err := ReadLost(db)
	if err != nil {
		return nil, err
	}
	if lost.Count() > 0 {
		rec.At = now.UTC()
		rec.Add(lost)
		if err := WriteLost(db, rec); err != nil {
			return nil, err
		}
		log.Error("the database lost acknowledged events: pebble dropped the damaged tail of its WAL; "+
			"they are fetched back from peers that hold them (wats repo check tells how many came back)",
			"lost", lost.Count(), "positions", fmt.Sprintf("%d..%d", lost.From+1, lost.To), "named", len(lost.IDs))
	}
	w := &LostWatch{db: db, events: events, log: log}
	if len(rec.Missing) > 0 {
		w.rec = rec
	}
	if w.mark, err = ackmark.Open(MarkPath(dir), head); err != nil {
		return nil, err
	}
	events.SetCommitted(func(first core.Cursor, ids []core.ShortID) {
		if err := w.mark.Record(first, ids); err != nil && !w.markFailed {
			w.markFailed = true
			log.Warn("the acknowledged mark cannot be written; a WAL tail lost later would go unnoticed", "err", err)
		}
	})
	return w, nil
}

// Run looks whether the missing events came back every LostCheckEvery
// until all are back or ctx ends; with nothing missing it returns at once.
func (w *LostWatch) Run(ctx context.Context) {
	if w.rec == nil {
		return
	}
	t := time.NewTicker(LostCheckEvery)
	defer t.Stop()
	for w.rec != nil && len(w.rec.Missing) > 0 {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.check()
		}
	}
}

// check records and says it when some missing events came back.
func (w *LostWatch) check() {
	rec := w.rec
	still := rec.Missing[:0:0]
	for _, s := range rec.Missing {
		id, err := core.ParseShortID(s)
		if err != nil {
			continue
		}
		if ok, err := w.events.HasShort(id); err != nil || !ok {
			still = append(still, s)
		}
	}
	back := len(rec.Missing) - len(still)
	if back == 0 {
		return
	}
	next := *rec
	next.Missing, next.Back = still, rec.Back+uint64(back)
	if err := WriteLost(w.db, &next); err != nil {
		w.log.Warn("could not record the lost events that came back", "err", err)
		return
	}
	w.rec = &next
	w.log.Info("lost events came back from peers", "back", next.Back, "lost", next.Lost, "still_missing", next.Gone())
}

// Close closes the mark.
func (w *LostWatch) Close() error { return w.mark.Close() }
