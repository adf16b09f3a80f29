package node

import (
	"fmt"
	"time"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/internal/ackmark"
	"github.com/wats-network/wats/store"
)

// lostCheckEvery is how often a node that lost acknowledged events looks
// whether sync brought them back.
const lostCheckEvery = 5 * time.Second

// openMark compares the log's head with the repo's acknowledged mark,
// records and logs what was lost, and opens the mark for the log's
// commits. Lost events still missing, of this start or an earlier one,
// are looked for by lostLoop.
func (n *Node) openMark(dir string) error {
	head := n.events.Head()
	lost, err := ackmark.Read(store.MarkPath(dir), head)
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	rec, err := store.ReadLost(n.db.DB)
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
	if n.mark, err = ackmark.Open(store.MarkPath(dir), head); err != nil {
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
func (n *Node) noteLost(rec *store.LostEvents, lost ackmark.Lost) error {
	rec.At = n.now().UTC()
	rec.Add(lost)
	if err := store.WriteLost(n.db.DB, rec); err != nil {
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
	if err := store.WriteLost(n.db.DB, &next); err != nil {
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
