package node

import (
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/go-json-experiment/json"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/internal/ackmark"
	"github.com/wats-network/wats/repo"
)

// lostKey holds the LostEvents record of the node's database (ADR 0045).
const lostKey = "node/lost"

// lostCheckEvery is how often a node that lost acknowledged events looks
// whether sync brought them back.
const lostCheckEvery = 5 * time.Second

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

// add counts the loss a mark shows: its events, the short ids it names
// as missing, the rest as unnamed.
func (l *LostEvents) add(lost ackmark.Lost) {
	l.Lost += lost.Count()
	for _, id := range lost.IDs {
		l.Missing = append(l.Missing, hex.EncodeToString(id[:]))
	}
	l.Unnamed += lost.Count() - uint64(len(lost.IDs))
}

// Gone is how many lost events are not known to be back.
func (l *LostEvents) Gone() uint64 { return uint64(len(l.Missing)) + l.Unnamed }

// markPath is the acknowledged mark of the repo at dir.
func markPath(dir string) string { return filepath.Join(dir, repo.AckedFile) }

// openMark compares the log's head with the repo's acknowledged mark,
// records and logs what was lost, and opens the mark for the log's
// commits. Lost events still missing, of this start or an earlier one,
// are looked for by lostLoop.
func (n *Node) openMark(dir string) error {
	head := n.events.Head()
	lost, err := ackmark.Read(markPath(dir), head)
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	rec, err := readLost(n.db)
	if err != nil {
		return err
	}
	if lost.Count() > 0 {
		if err := n.noteLost(rec, lost); err != nil {
			return err
		}
	}
	if len(rec.Missing) > 0 {
		n.lost = rec
	}
	if n.mark, err = ackmark.Open(markPath(dir), head); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.events.SetCommitted(func(first core.Cursor, ids []core.ShortID) {
		if err := n.mark.Record(first, ids); err != nil && !n.markFailed {
			n.markFailed = true
			n.log.Warn("the acknowledged mark cannot be written; a WAL tail lost later would go unnoticed", "err", err)
		}
	})
	return nil
}

// noteLost adds a loss found at this start to rec, the database's record,
// writes it durably, and says so.
func (n *Node) noteLost(rec *LostEvents, lost ackmark.Lost) error {
	rec.At = n.now().UTC()
	rec.add(lost)
	if err := writeLost(n.db, rec); err != nil {
		return err
	}
	n.log.Error("the database lost acknowledged events: pebble dropped the damaged tail of its WAL; "+
		"they are fetched back from peers that hold them (wats repo check tells how many came back)",
		"lost", lost.Count(), "positions", fmt.Sprintf("%d..%d", lost.From+1, lost.To), "named", len(lost.IDs))
	return nil
}

// checkLost looks whether the missing events came back, and records and
// says it when some did.
func (n *Node) checkLost() {
	rec := n.lost
	if rec == nil || len(rec.Missing) == 0 {
		return
	}
	still := rec.Missing[:0:0]
	for _, s := range rec.Missing {
		id, err := core.ParseShortID(s)
		if err != nil {
			continue
		}
		if ok, err := n.events.HasShort(id); err != nil || !ok {
			still = append(still, s)
		}
	}
	back := len(rec.Missing) - len(still)
	if back == 0 {
		return
	}
	next := *rec
	next.Missing, next.Back = still, rec.Back+uint64(back)
	if err := writeLost(n.db, &next); err != nil {
		n.log.Warn("could not record the lost events that came back", "err", err)
		return
	}
	n.lost = &next
	n.log.Info("lost events came back from peers", "back", next.Back, "lost", next.Lost, "still_missing", next.Gone())
}

// lostLoop runs checkLost until every named lost event is back.
func (n *Node) lostLoop() {
	if n.lost == nil || len(n.lost.Missing) == 0 {
		return
	}
	n.every(lostCheckEvery, n.checkLost)
}

// readLost reads the database's LostEvents record; an empty one if none.
func readLost(db *pebble.DB) (*LostEvents, error) {
	v, closer, err := db.Get([]byte(lostKey))
	if errors.Is(err, pebble.ErrNotFound) {
		return &LostEvents{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("node: read the lost events: %w", err)
	}
	defer closer.Close()
	var rec LostEvents
	if err := json.Unmarshal(v, &rec); err != nil {
		return nil, fmt.Errorf("node: read the lost events: %w", err)
	}
	return &rec, nil
}

// writeLost writes the database's LostEvents record, durably.
func writeLost(db *pebble.DB, rec *LostEvents) error {
	v, err := json.Marshal(rec)
	if err == nil {
		err = db.Set([]byte(lostKey), v, pebble.Sync)
	}
	if err != nil {
		return fmt.Errorf("node: record the lost events: %w", err)
	}
	return nil
}
