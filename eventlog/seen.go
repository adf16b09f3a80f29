package eventlog

import (
	"fmt"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/cockroachdb/pebble/v2"

	"github.com/wats-network/wats/core"
)

// seenFalsePositive is the false-positive rate of the in-memory filter of
// stored ids: one new event in 100 pays a pebble lookup it did not need.
const seenFalsePositive = 0.01

// minSeenCapacity is the smallest number of ids the filter is sized for
// (about 1.2 MB at 1%), so that a small log does not rebuild it often. A
// variable only so that tests can make rebuilds happen.
var minSeenCapacity uint64 = 1 << 20

// seenFilter is a Bloom filter of every id in the log. Append asks it
// first: an id it has never seen is new without a pebble lookup, which is
// the common case during a catch-up and the most expensive part of Append
// otherwise (a memtable seek and a filter probe per level). An id it may
// have seen is looked up as before, so the filter never changes a result.
//
// The filter is sized for twice the ids it holds and rebuilt from the
// store, twice as large, when the log outgrows it, keeping the
// false-positive rate near seenFalsePositive. Log.seen guards it.
type seenFilter struct {
	f        *bloom.BloomFilter
	capacity uint64
	count    uint64
}

// loadSeen builds the filter from the id keys in db, for a log of head
// events, and adds each id to sums (if not nil: at Open, in the same scan).
func loadSeen(db *pebble.DB, head uint64, sums *idSums) (*seenFilter, error) {
	capacity := max(2*head, minSeenCapacity)
	s := &seenFilter{f: bloom.NewWithEstimates(uint(capacity), seenFalsePositive), capacity: capacity}
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte(idPrefix), UpperBound: core.PrefixEnd([]byte(idPrefix))})
	if err != nil {
		return nil, fmt.Errorf("eventlog: load ids: %w", err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		id := it.Key()[len(idPrefix):]
		s.f.Add(id)
		s.count++
		if sums != nil && len(id) == 32 {
			sums.add([32]byte(id))
		}
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("eventlog: load ids: %w", err)
	}
	return s, nil
}

// mayHave reports whether id may be in the log; false is certain.
func (s *seenFilter) mayHave(id [32]byte) bool { return s.f.Test(id[:]) }

// add records ids as stored. It reports whether the filter is now over
// capacity and should be rebuilt.
func (s *seenFilter) add(id [32]byte) (full bool) {
	s.f.Add(id[:])
	s.count++
	return s.count > s.capacity
}
