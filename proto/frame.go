package proto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/libp2p/go-msgio"
)

// ErrFrameTooLarge is returned (wrapped, with the sizes) by ReadFrame when a
// frame's length prefix exceeds the reader's cap (docs/design.md §4: "a longer prefix
// is refused before any allocation"). Writers keep to the caps through
// Marshal, which refuses to produce a longer message.
var ErrFrameTooLarge = errors.New("proto: frame too large")

// ErrTruncatedFrame is returned (wrapped) by ReadFrame when the stream ends
// inside a frame, in its prefix or its payload. It wraps
// io.ErrUnexpectedEOF.
var ErrTruncatedFrame = fmt.Errorf("proto: truncated frame: %w", io.ErrUnexpectedEOF)

// copyFrameBytes is the largest payload WriteFrame copies behind its prefix
// to write both in one Write; a larger one is written as is after the
// prefix, so that sending a multi-MiB sync page does not hold a second copy
// of it.
const copyFrameBytes = 64 << 10

// WriteFrame writes b as one frame: its length as an unsigned varint, then
// b; in a single Write when b is small.
func WriteFrame(w io.Writer, b []byte) error {
	var err error
	if len(b) <= copyFrameBytes {
		err = msgio.NewVarintWriter(w).WriteMsg(b)
	} else {
		prefix := binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen64), uint64(len(b)))
		if _, err = w.Write(prefix); err == nil {
			_, err = w.Write(b)
		}
	}
	if err != nil {
		return fmt.Errorf("proto: write frame: %w", err)
	}
	return nil
}

// ReadFrame reads one frame from r and returns its payload, in a new slice
// of exactly its length. It reads the prefix byte by byte and then exactly
// the payload, never past the frame.
//
// Errors: a prefix above max is ErrFrameTooLarge, found before anything is
// allocated or read past the prefix; the end of r before the first byte
// wraps io.EOF; inside the frame it is ErrTruncatedFrame; a prefix that is
// not a minimal varint of at most 9 bytes is an error too; other errors of r
// are wrapped.
func ReadFrame(r io.Reader, max int) ([]byte, error) {
	return readFrame(r, max, func(n int) []byte { return make([]byte, n) }, nil)
}

// readFrame is ReadFrame, calling reserve (if not nil) with the payload
// length once the prefix is checked and before the payload is allocated,
// and taking the payload's buffer of n bytes from alloc.
func readFrame(r io.Reader, max int, alloc func(n int) []byte, reserve func(n int) error) ([]byte, error) {
	vr := msgio.NewVarintReaderSize(r, max)
	n, err := vr.NextMsgLen()
	switch {
	case err == io.EOF:
		return nil, fmt.Errorf("proto: read frame: %w", io.EOF)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return nil, fmt.Errorf("%w: in the length prefix", ErrTruncatedFrame)
	case err != nil:
		return nil, fmt.Errorf("proto: read frame length: %w", err)
	case n < 0 || n > max:
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrFrameTooLarge, n, max)
	}
	if reserve != nil {
		if err := reserve(n); err != nil {
			return nil, fmt.Errorf("proto: read frame of %d bytes: %w", n, err)
		}
	}
	b := alloc(n)
	_, err = vr.Read(b)
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return nil, fmt.Errorf("%w: payload shorter than its %d bytes", ErrTruncatedFrame, n)
	case err != nil:
		return nil, fmt.Errorf("proto: read frame: %w", err)
	}
	return b, nil
}
