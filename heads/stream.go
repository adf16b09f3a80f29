package heads

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/proto"
)

// Pace of a Heads stream (docs/adr/0041).
const (
	// MinAnnounceInterval is the least time between two announcements to
	// one peer: a log that grows faster is announced in batches, at most
	// ten a second, each naming the newest proto.MaxHeadIDs events since
	// the last. An idle log is announced never.
	MinAnnounceInterval = 100 * time.Millisecond
	// MinReadInterval is the least time between two announcements a
	// reader takes in from one peer: a faster writer is not read
	// meanwhile (its stream's flow control holds it back), so a peer
	// cannot make the node decide more than twenty times a second for it.
	MinReadInterval = 50 * time.Millisecond
	// WriteTimeout bounds the write of one announcement: a peer that does
	// not read its stream for this long has it reset.
	WriteTimeout = 10 * time.Second
)

// Source is the log an announcer announces (eventlog.Log).
type Source interface {
	// Head returns the position of the newest event, 0 for none.
	Head() core.Cursor
	// Changed returns a channel closed the next time the log grows.
	Changed() <-chan struct{}
	// ShortIDs returns the short ids of the events after `after` up to
	// the head, the newest max of them, and the position before the
	// first.
	ShortIDs(after core.Cursor, max int) ([]core.ShortID, core.Cursor, error)
}

// Stream is the writing end of a Heads stream (network.Stream).
type Stream interface {
	io.Writer
	SetWriteDeadline(time.Time) error
}

// Announce writes the announcements of src on s until ctx ends (nil is
// returned) or a write fails: first, at once, the head now with the short
// ids of the newest events (head 0 and none for an empty log: the first
// write also names the protocol, which the reader's side wants within
// seconds of the stream's opening), then, each time the log grows, the
// new head with the ids of the events since the last announcement (the
// newest proto.MaxHeadIDs), at most one every MinAnnounceInterval. Each
// write has WriteTimeout.
func Announce(ctx context.Context, s Stream, src Source) error {
	var sent core.Cursor // the head announced last
	var last time.Time
	for first := true; ; first = false {
		changed := src.Changed()
		if head := src.Head(); head > sent || first {
			if wait := MinAnnounceInterval - time.Since(last); !last.IsZero() && wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					return nil
				case <-t.C:
				}
				continue // the head may have moved again while waiting
			}
			ids, from, err := src.ShortIDs(sent, proto.MaxHeadIDs)
			if err != nil {
				return fmt.Errorf("heads: read the log: %w", err)
			}
			h := &proto.Heads{Head: from + core.Cursor(len(ids)), IDs: ids}
			b, err := proto.MarshalHeads(h)
			if err != nil {
				return fmt.Errorf("heads: %w", err)
			}
			if err := s.SetWriteDeadline(time.Now().Add(WriteTimeout)); err != nil {
				return fmt.Errorf("heads: %w", err)
			}
			if err := proto.WriteFrame(s, b); err != nil {
				return fmt.Errorf("heads: announce: %w", err)
			}
			sent, last = h.Head, time.Now()
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
	}
}

// Read reads the announcements of a Heads stream from r and hands each to
// f, at most one every MinReadInterval, until r ends (io.EOF) or an
// announcement is bad: a frame over proto.MaxHeadsBytes, or one that
// DecodeHeads refuses (a *proto.Error). It returns what ended it.
func Read(r io.Reader, f func(*proto.Heads)) error {
	var last time.Time
	for {
		b, err := proto.ReadFrame(r, proto.MaxHeadsBytes)
		if err != nil {
			return err
		}
		h, err := proto.DecodeHeads(b)
		if err != nil {
			return err
		}
		if wait := MinReadInterval - time.Since(last); !last.IsZero() && wait > 0 {
			time.Sleep(wait)
		}
		last = time.Now()
		f(h)
	}
}
