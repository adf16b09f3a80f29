// Package ackmark keeps, beside the database, the mark of what the event
// log acknowledged (ADR 0045): its head after each durable commit, and the
// short ids of its newest events, so that a start can tell when pebble
// dropped acknowledged events with the damaged tail of its WAL, and which.
//
// pebble reads damage in a WAL's last block as a write torn by a crash,
// and drops the rest of the log from it without an error. The events it
// drops were acknowledged: their commits were synced. The mark is written
// after each of those commits, in place, without fsync: a killed process
// leaves it in the page cache, so it is whole after a kill -9; a machine
// crash may leave it older than the database (never newer, as it is
// written after the sync), which tells of no loss. The mark is no proof
// either way of a damaged database, only of a log shorter than it was.
package ackmark

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"github.com/wats-network/wats/core"
)

// Slots is how many of the newest events the mark names: a loss of up to
// Slots events is told event by event, a larger one by its count.
const Slots = 4096

const (
	magic      = "watsack1"
	headerSize = 16 // magic, head
	slotSize   = 8 + core.ShortIDBytes
	fileSize   = headerSize + Slots*slotSize
)

// Lost is what a mark found missing at Open: the events at positions
// From+1..To were acknowledged and the log no longer holds them.
type Lost struct {
	From, To core.Cursor
	// IDs are the short ids of the lost events the mark names, in order:
	// all of them when Named, the newest Slots otherwise.
	IDs   []core.ShortID
	Named bool
}

// Count is the number of events lost.
func (l Lost) Count() uint64 { return uint64(l.To - l.From) }

// Mark is an open mark file. Record is safe for use by one goroutine at a
// time (the log's commits are serial).
type Mark struct {
	mu  sync.Mutex
	f   *os.File
	buf []byte
}

// Read reads the mark at path against the log's head, without changing
// it: what was lost, if anything (Count 0 if nothing, or if the file is
// missing or not a mark).
func Read(path string, head core.Cursor) (Lost, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Lost{From: head, To: head}, nil
	}
	if err != nil {
		return Lost{}, fmt.Errorf("ackmark: %w", err)
	}
	return lostIn(b, head), nil
}

// lostIn reads a mark's bytes against the log's head.
func lostIn(b []byte, head core.Cursor) Lost {
	none := Lost{From: head, To: head}
	if len(b) != fileSize || string(b[:8]) != magic {
		return none
	}
	acked := core.Cursor(binary.BigEndian.Uint64(b[8:16]))
	if acked <= head {
		return none
	}
	lost := Lost{From: head, To: acked, Named: true}
	first := head + 1
	if acked-head > Slots {
		first, lost.Named = acked-Slots+1, false
	}
	for p := first; p <= acked; p++ {
		s := b[headerSize+int(p%Slots)*slotSize:]
		if core.Cursor(binary.BigEndian.Uint64(s)) != p {
			lost.Named = false // overwritten, or never written (a machine crash)
			continue
		}
		lost.IDs = append(lost.IDs, core.ShortID(s[8:slotSize]))
	}
	return lost
}

// Open opens the mark at path, or creates it, and sets its head to the
// log's head: whatever it said before is replaced (read it first with
// Read). A mark that is not one (another size, a torn header) is
// rewritten whole.
func Open(path string, head core.Cursor) (*Mark, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("ackmark: %w", err)
	}
	m := &Mark{f: f, buf: make([]byte, 0, 64*slotSize)}
	fi, err := f.Stat()
	if err == nil && fi.Size() != fileSize {
		err = f.Truncate(fileSize)
	}
	if err == nil {
		_, err = f.WriteAt([]byte(magic), 0)
	}
	if err == nil {
		err = m.writeHead(head)
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("ackmark: %w", err)
	}
	return m, nil
}

func (m *Mark) writeHead(head core.Cursor) error {
	var h [8]byte
	binary.BigEndian.PutUint64(h[:], uint64(head))
	_, err := m.f.WriteAt(h[:], 8)
	return err
}

// Record marks the events at positions first, first+1, … (ids, in order)
// as acknowledged: their slots, then the head. Call it after the commit
// that stored them is durable.
func (m *Mark) Record(first core.Cursor, ids []core.ShortID) error {
	if len(ids) == 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(ids) > Slots {
		first += core.Cursor(len(ids) - Slots)
		ids = ids[len(ids)-Slots:]
	}
	// One write per run of consecutive slots: two at most, where the
	// positions wrap around the ring.
	for len(ids) > 0 {
		slot := int(first % Slots)
		n := min(len(ids), Slots-slot)
		m.buf = m.buf[:0]
		for i := range n {
			m.buf = binary.BigEndian.AppendUint64(m.buf, uint64(first)+uint64(i))
			m.buf = append(m.buf, ids[i][:]...)
		}
		if _, err := m.f.WriteAt(m.buf, int64(headerSize+slot*slotSize)); err != nil {
			return fmt.Errorf("ackmark: %w", err)
		}
		first += core.Cursor(n)
		ids = ids[n:]
	}
	if err := m.writeHead(first - 1); err != nil {
		return fmt.Errorf("ackmark: %w", err)
	}
	return nil
}

// Close closes the file.
func (m *Mark) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.f.Close()
}
