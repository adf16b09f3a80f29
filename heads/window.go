package heads

import (
	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/proto"
)

// WindowSize is how many positions of a peer's log a Window remembers the
// short ids of: the latest, up to this many before the highest head
// announced. An announcement names at most proto.MaxHeadIDs, and the
// announcer sends at most one every MinAnnounceInterval, so this is the
// ids of at least 1.6 s of a log growing as fast as announcements can
// name; positions older than the window that the reader's cursor has not
// passed are pulled.
const WindowSize = 1024

// Window is what a reader knows of one peer's log from its announcements:
// the highest head announced, and the short ids of the positions they
// named, for the latest WindowSize positions. The zero Window knows
// nothing. It is not safe for concurrent use.
type Window struct {
	head core.Cursor
	ids  [WindowSize]slot
}

type slot struct {
	pos core.Cursor // the position whose id this is; 0 for none
	id  core.ShortID
}

// Head returns the highest head announced, 0 before any.
func (w *Window) Head() core.Cursor { return w.head }

// Add takes in announcement h: its head, if higher than any before (a
// log only grows: a lower head is an announcement overtaken by a later
// one), and its ids, each at its position.
func (w *Window) Add(h *proto.Heads) {
	w.head = max(w.head, h.Head)
	from := h.From()
	for i, id := range h.IDs {
		pos := from + 1 + core.Cursor(i)
		if pos+WindowSize <= w.head {
			continue // older than the window
		}
		w.ids[pos%WindowSize] = slot{pos: pos, id: id}
	}
}

// id returns the short id announced for pos, if the window holds it.
func (w *Window) id(pos core.Cursor) (core.ShortID, bool) {
	s := w.ids[pos%WindowSize]
	return s.id, s.pos == pos && pos != 0
}

// Decision is what a reader does about a peer's announcements (Decide).
type Decision struct {
	// Advance is the cursor to move to: past every position from the
	// cursor on whose event the reader holds. It is the cursor itself
	// when it moves not at all.
	Advance core.Cursor
	// Pull: the event at Advance+1 is missing, or its id unknown; the
	// reader syncs from Advance.
	Pull bool
}

// Decide returns what a reader whose sync cursor into a peer's log is
// cursor does about what w knows of it: it walks the positions after the
// cursor up to the head announced and moves past each whose event has
// says it holds; at the first it lacks, or whose id w does not know (an
// announcement it missed, or a position older than the window), it stops
// and pulls from there. has is called at most WindowSize times.
func Decide(cursor core.Cursor, w *Window, has func(core.ShortID) bool) Decision {
	pos := cursor
	for pos < w.head {
		id, ok := w.id(pos + 1)
		if !ok || !has(id) {
			return Decision{Advance: pos, Pull: true}
		}
		pos++
	}
	return Decision{Advance: pos}
}
