package eventlog

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckBlobName: a name of exactly MaxBlobNameBytes bytes (multi-byte
// runes counted as bytes) passes, one byte past it is ErrTooLarge;
// invalid UTF-8 and control characters are ErrMalformed; "" passes.
func TestCheckBlobName(t *testing.T) {
	for _, tc := range []struct {
		name string
		want error
	}{
		{"", nil},
		{"report.pdf", nil},
		{strings.Repeat("a", MaxBlobNameBytes), nil},
		{strings.Repeat("é", MaxBlobNameBytes/2) + "a", nil}, // 255 bytes
		{strings.Repeat("a", MaxBlobNameBytes+1), ErrTooLarge},
		{strings.Repeat("é", MaxBlobNameBytes/2+1), ErrTooLarge}, // 256 bytes
		{"a\nb", ErrMalformed},
		{"tab\there", ErrMalformed},
		{"del\x7f", ErrMalformed},
		{"bad\xffutf8", ErrMalformed},
	} {
		err := CheckBlobName(tc.name)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("CheckBlobName(%q) = %v; want %v", tc.name, err, tc.want)
		}
		var ve *ValidationError
		if err != nil && (!errors.As(err, &ve) || ve.Field != "name") {
			t.Errorf("CheckBlobName(%q) = %#v; want a *ValidationError of field name", tc.name, err)
		}
	}
}
