package core

import (
	"bytes"
	"errors"
	"testing"
)

// TestIsKindChar: exactly a-z, 0-9, '.', '_' and '-', checked at the edges
// of each range.
func TestIsKindChar(t *testing.T) {
	for _, r := range "`{/:AZ ,+\x00\x7f" {
		if IsKindChar(r) {
			t.Errorf("IsKindChar(%q) = true", r)
		}
	}
	for _, r := range "az09._-" {
		if !IsKindChar(r) {
			t.Errorf("IsKindChar(%q) = false", r)
		}
	}
	if IsKindChar('é') || IsKindChar('ａ') {
		t.Error("a non-ASCII letter is a kind character")
	}
}

// TestCursor: exactly the canonical decimal form of a uint64, both ways, at
// and just past 2^64-1; a failed UnmarshalText leaves the cursor as it was.
func TestCursor(t *testing.T) {
	for s, want := range map[string]Cursor{"0": 0, "1": 1, "10": 10, "18446744073709551615": 1<<64 - 1, "18446744073709551610": 1<<64 - 6} {
		got, err := ParseCursor(s)
		if err != nil || got != want {
			t.Errorf("ParseCursor(%q) = %d, %v; want %d", s, got, err, want)
		}
		if want.String() != s {
			t.Errorf("Cursor(%d).String() = %q, want %q", want, want.String(), s)
		}
		if b, _ := want.MarshalText(); string(b) != s {
			t.Errorf("Cursor(%d).MarshalText() = %q, want %q", want, b, s)
		}
	}
	for _, s := range []string{"", "-1", "1.0", "0x10", " 1", "1 ", "01", "00", "+1", "1e3", "18446744073709551616", "18446744073709551620", "99999999999999999999", "100000000000000000000", "١"} {
		if _, err := ParseCursor(s); !errors.Is(err, ErrCursor) {
			t.Errorf("ParseCursor(%q): %v, want ErrCursor", s, err)
		}
		c := Cursor(7)
		if err := c.UnmarshalText([]byte(s)); err == nil || c != 7 {
			t.Errorf("UnmarshalText(%q) = %v and set %d, want an error and 7 kept", s, err, c)
		}
	}
}

// TestRequests: the wire names of ADR 0014's four request types, both
// ways; a response type is no request.
func TestRequests(t *testing.T) {
	want := []string{"hello", "sync", "replicate", "crash_report"}
	for i, r := range Requests() {
		if r.String() != want[i] || !r.Valid() {
			t.Errorf("Requests()[%d] = %q (valid %v), want %q", i, r, r.Valid(), want[i])
		}
		if got, ok := ParseRequest(want[i]); !ok || got != r {
			t.Errorf("ParseRequest(%q) = %v, %v", want[i], got, ok)
		}
	}
	for _, s := range []string{"", "error", "refused", "challenge", "Hello", "crash-report"} {
		if _, ok := ParseRequest(s); ok {
			t.Errorf("ParseRequest(%q) is a request", s)
		}
	}
	if Request(NumRequests).Valid() || Request(NumRequests).String() != "request(4)" {
		t.Errorf("Request(4): valid %v, %q", Request(NumRequests).Valid(), Request(NumRequests))
	}
}

// TestPrefixEnd: the bound is past every key with the prefix and before
// every other key above it, with trailing 0xff bytes and without.
func TestPrefixEnd(t *testing.T) {
	for _, tc := range []struct{ p, want []byte }{
		{[]byte("ev/"), []byte("ev0")},
		{[]byte{'b', 'l', 0xff}, []byte("bm")},
		{[]byte{'a', 0xfe, 0xff, 0xff}, []byte{'a', 0xff}},
		{[]byte{0xff, 0xff}, nil},
		{nil, nil},
	} {
		p := bytes.Clone(tc.p)
		if got := PrefixEnd(p); !bytes.Equal(got, tc.want) || (tc.want == nil) != (got == nil) {
			t.Errorf("PrefixEnd(%q) = %q, want %q", tc.p, got, tc.want)
		}
		if !bytes.Equal(p, tc.p) {
			t.Errorf("PrefixEnd changed its argument %q to %q", tc.p, p)
		}
	}
}

// TestShortID: exactly 16 lowercase hex digits, both ways; one digit more
// or less, an uppercase or a non-hex digit is an error.
func TestShortID(t *testing.T) {
	for _, s := range []string{"0123456789abcdef", "0000000000000000", "ffffffffffffffff"} {
		id, err := ParseShortID(s)
		if err != nil || id.String() != s {
			t.Errorf("ParseShortID(%q) = %v, %v; String %q", s, id, err, id.String())
		}
	}
	id, _ := ParseShortID("0123456789abcdef")
	if id != (ShortID{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}) {
		t.Errorf("ParseShortID bytes %x", id)
	}
	for _, s := range []string{"", "0123456789abcde", "0123456789abcdef0", "0123456789ABCDEF", "0123456789abcdeg", " 123456789abcdef"} {
		if _, err := ParseShortID(s); !errors.Is(err, ErrShortID) {
			t.Errorf("ParseShortID(%q) = %v, want ErrShortID", s, err)
		}
	}
	before := id
	if err := id.UnmarshalText([]byte("nope")); err == nil || id != before {
		t.Errorf("a failed UnmarshalText: %v, id %v", err, id)
	}
	if b, _ := id.MarshalText(); string(b) != "0123456789abcdef" {
		t.Errorf("MarshalText %q", b)
	}
}
