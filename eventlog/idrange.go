package eventlog

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/wats-network/wats/core"
)

// Reads by id range (ADR 0052): the "ev/i/" index holds every event's id
// in byte order, which is the order of their hex, so that a range of ids
// is a range of keys. A peer's catch-up asks for the events of a range of
// ids, or for its fingerprint, where a position is a place in one log
// alone.

// idRangeBounds returns the index keys of the ids from from (inclusive)
// to to (exclusive; "" for the end of the id space), each 64 lowercase
// hex digits (ErrMalformed otherwise).
func idRangeBounds(from, to string) (lower, upper []byte, err error) {
	lo, ok := parseID(from)
	if !ok {
		return nil, nil, invalid(ErrMalformed, "id range", "from is not 64 lowercase hex digits")
	}
	lower, upper = idKey(lo), core.PrefixEnd([]byte(idPrefix))
	if to != "" {
		hi, ok := parseID(to)
		if !ok {
			return nil, nil, invalid(ErrMalformed, "id range", "to is not 64 lowercase hex digits")
		}
		upper = idKey(hi)
	}
	return lower, upper, nil
}

// PageIDsInto returns, copied into *buf as PageInto does, the stored
// events (as Marshal encoded them) whose ids are from from (inclusive) to
// to (exclusive; "" for the end of the id space), in ascending id order:
// at most limit events and at most maxBytes bytes of event JSON in all.
// more reports whether the range holds events past the last one returned.
// from and to are 64 lowercase hex digits (ErrMalformed); limit and
// maxBytes are at least 1 (ErrBadArgument), and a maxBytes below the next
// event's size is ErrPageTooSmall, as for Page. A range with to at or
// below from holds nothing.
func (l *Log) PageIDsInto(buf *[]byte, from, to string, limit, maxBytes int) (events []jsontext.Value, more bool, err error) {
	if limit < 1 || maxBytes < 1 {
		return nil, false, fmt.Errorf("%w: page limit %d, maxBytes %d (both must be ≥ 1)", ErrBadArgument, limit, maxBytes)
	}
	lower, upper, err := idRangeBounds(from, to)
	if err != nil {
		return nil, false, err
	}
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, false, fmt.Errorf("eventlog: page by ids: %w", err)
	}
	defer it.Close()
	if buf == nil {
		buf = new([]byte)
	}
	data := (*buf)[:0]
	defer func() { *buf = data }()
	var ends []int
	for ok := it.First(); ok; ok = it.Next() {
		if len(ends) == limit {
			more = true
			break
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, false, fmt.Errorf("eventlog: page by ids: %w", err)
		}
		if len(v) != 8 {
			return nil, false, fmt.Errorf("eventlog: page by ids: damaged index value of %d bytes", len(v))
		}
		ev, closer, err := l.db.Get(posKey(core.Cursor(binary.BigEndian.Uint64(v))))
		if err != nil {
			return nil, false, fmt.Errorf("eventlog: page by ids: index points at a position not read: %w", err)
		}
		if len(data)+len(ev) > maxBytes {
			closer.Close()
			if len(ends) == 0 {
				return nil, false, fmt.Errorf("%w: event of %d bytes, maxBytes %d", ErrPageTooSmall, len(ev), maxBytes)
			}
			more = true
			break
		}
		data = append(data, ev...)
		closer.Close()
		ends = append(ends, len(data))
	}
	if err := it.Error(); err != nil {
		return nil, false, fmt.Errorf("eventlog: page by ids: %w", err)
	}
	events = make([]jsontext.Value, len(ends))
	start := 0
	for i, end := range ends {
		events[i] = jsontext.Value(data[start:end:end])
		start = end
	}
	return events, more, nil
}

// IDs returns the stored ids from from (inclusive) to to (exclusive; ""
// for the end of the id space), in ascending order, 64 lowercase hex
// digits each: at most max of them, more reporting that the range holds
// more (ADR 0057: the list a peer compares with its own, to fetch only the
// ids it lacks). It reads the keys of the index by id alone. from and to
// are 64 lowercase hex digits (ErrMalformed); max is at least 1
// (ErrBadArgument). A range with to at or below from holds nothing.
func (l *Log) IDs(from, to string, max int) (ids []string, more bool, err error) {
	if max < 1 {
		return nil, false, fmt.Errorf("%w: ids max %d (must be ≥ 1)", ErrBadArgument, max)
	}
	lower, upper, err := idRangeBounds(from, to)
	if err != nil {
		return nil, false, err
	}
	if bytes.Compare(lower, upper) >= 0 {
		return nil, false, nil
	}
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, false, fmt.Errorf("eventlog: ids: %w", err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		id := it.Key()[len(idPrefix):]
		if len(id) != 32 {
			return nil, false, fmt.Errorf("eventlog: ids: damaged id key %q", it.Key())
		}
		if len(ids) == max {
			more = true
			break
		}
		ids = append(ids, hex.EncodeToString(id))
	}
	if err := it.Error(); err != nil {
		return nil, false, fmt.Errorf("eventlog: ids: %w", err)
	}
	return ids, more, nil
}

// AddID adds id to sum, both 256-bit big-endian numbers, modulo 2^256
// (Fingerprint's sum).
func AddID(sum *[32]byte, id [32]byte) {
	var carry uint16
	for i := 31; i >= 0; i-- {
		carry += uint16(sum[i]) + uint16(id[i])
		sum[i] = byte(carry)
		carry >>= 8
	}
}
