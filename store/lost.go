package store

import (
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/go-json-experiment/json"

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
