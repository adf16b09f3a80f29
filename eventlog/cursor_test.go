package eventlog

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestCursor(t *testing.T) {
	for _, pos := range []uint64{0, 1, 256, math.MaxUint64} {
		s := FormatCursor(pos)
		got, err := ParseCursor(s)
		if err != nil || got != pos {
			t.Errorf("ParseCursor(%q) = %d, %v", s, got, err)
		}
	}
	if len(FormatCursor(math.MaxUint64)) != MaxCursorLen {
		t.Errorf("MaxCursorLen %d does not fit 2^64-1", MaxCursorLen)
	}
	for _, s := range []string{"", "-1", "+1", "01", "00", "1.0", "1e3", " 1", "x", "18446744073709551616", "99999999999999999999",
		strings.Repeat("1", MaxCursorLen+1)} {
		if _, err := ParseCursor(s); !errors.Is(err, ErrBadArgument) {
			t.Errorf("ParseCursor(%q): %v", s, err)
		}
	}
}
