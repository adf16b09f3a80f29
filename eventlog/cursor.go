package eventlog

import (
	"fmt"
	"strconv"
)

// MaxCursorLen caps a cursor string: 20 decimal digits hold any uint64
// (18446744073709551615), so anything longer is refused before parsing.
const MaxCursorLen = 20

// FormatCursor returns the wire form of a log position: design §4, "cursors
// are opaque decimal strings of the responder's local log position"; "0"
// means from the start.
func FormatCursor(pos uint64) string { return strconv.FormatUint(pos, 10) }

// ParseCursor parses a cursor from a peer: 1..MaxCursorLen decimal digits
// without sign or leading zeros (so each position has one cursor), at most
// 2^64-1. Errors wrap ErrBadArgument.
func ParseCursor(s string) (uint64, error) {
	if s == "" || len(s) > MaxCursorLen {
		return 0, fmt.Errorf("%w: cursor of %d characters (1..%d)", ErrBadArgument, len(s), MaxCursorLen)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%w: cursor %q is not decimal digits", ErrBadArgument, s)
		}
	}
	if len(s) > 1 && s[0] == '0' {
		return 0, fmt.Errorf("%w: cursor %q has a leading zero", ErrBadArgument, s)
	}
	pos, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: cursor %q beyond 2^64-1", ErrBadArgument, s)
	}
	return pos, nil
}
