package eventlog

import (
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// idRangeLog returns a log holding n events, and their ids in ascending
// order.
func idRangeLog(t *testing.T, n int) (*Log, []string) {
	t.Helper()
	l := openLog(t, memDB(t))
	key := testKey(t, 7)
	var evs []*Event
	var ids []string
	for i := range n {
		e := mustNew(t, key, testNow, "note", fmt.Sprintf(`{"i":%d}`, i), nil)
		evs = append(evs, e)
		ids = append(ids, e.ID)
	}
	if _, err := l.Append(evs); err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	return l, ids
}

// TestPageIDs: a range's events come in id order, every one once, within
// the page's limit (at and past it) and its bytes.
func TestPageIDs(t *testing.T) {
	l, ids := idRangeLog(t, 50)
	zero := strings.Repeat("0", 64)
	var got []string
	from := zero
	for {
		evs, more, err := l.PageIDsInto(nil, from, "", 7, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) > 7 || (more && len(evs) != 7) {
			t.Fatalf("%d events, more %v", len(evs), more)
		}
		for _, raw := range evs {
			e, err := Decode(raw)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, e.ID)
		}
		if !more {
			break
		}
		from = nextID(t, got[len(got)-1])
	}
	if !slices.Equal(got, ids) {
		t.Fatalf("paged %d ids, want the %d in order", len(got), len(ids))
	}
	// A bounded range: [ids[10], ids[20]) holds ten.
	evs, more, err := l.PageIDsInto(nil, ids[10], ids[20], 256, 1<<20)
	if err != nil || len(evs) != 10 || more {
		t.Fatalf("range: %d events, more %v, %v", len(evs), more, err)
	}
	// Limit exactly the range's size says no more; one less says more.
	if _, more, _ := l.PageIDsInto(nil, ids[10], ids[20], 10, 1<<20); more {
		t.Fatal("a full range at its limit says more")
	}
	if evs, more, _ := l.PageIDsInto(nil, ids[10], ids[20], 9, 1<<20); !more || len(evs) != 9 {
		t.Fatal("a range past its limit does not say more")
	}
	// Bytes: room for exactly two events, then one byte short of two.
	first, _, _ := l.PageIDsInto(nil, ids[10], "", 1, 1<<20)
	second, _, _ := l.PageIDsInto(nil, ids[11], "", 1, 1<<20)
	two := len(first[0]) + len(second[0])
	if evs, _, _ := l.PageIDsInto(nil, ids[10], ids[20], 256, two); len(evs) != 2 {
		t.Fatalf("%d events in %d bytes, want 2", len(evs), two)
	}
	if evs, more, _ := l.PageIDsInto(nil, ids[10], ids[20], 256, two-1); len(evs) != 1 || !more {
		t.Fatalf("%d events in %d bytes, want 1", len(evs), two-1)
	}
	if _, _, err := l.PageIDsInto(nil, ids[10], ids[20], 256, len(first[0])-1); !errors.Is(err, ErrPageTooSmall) {
		t.Fatalf("a page smaller than its first event: %v", err)
	}
	// Bad arguments.
	if _, _, err := l.PageIDsInto(nil, "xyz", "", 1, 1); !errors.Is(err, ErrMalformed) {
		t.Fatalf("bad from: %v", err)
	}
	if _, _, err := l.PageIDsInto(nil, zero, "", 0, 1); !errors.Is(err, ErrBadArgument) {
		t.Fatalf("limit 0: %v", err)
	}
	// An empty range holds nothing.
	if evs, more, err := l.PageIDsInto(nil, ids[20], ids[10], 256, 1<<20); len(evs) != 0 || more || err != nil {
		t.Fatalf("an empty range: %d, %v, %v", len(evs), more, err)
	}
}

// TestIDs: a range's ids in ascending order, bounded by max at and past
// it, the range's ends kept.
func TestIDs(t *testing.T) {
	l, ids := idRangeLog(t, 30)
	zero := strings.Repeat("0", 64)
	got, more, err := l.IDs(zero, "", 30)
	if err != nil || more || !slices.Equal(got, ids) {
		t.Fatalf("whole log at max: %d ids, more %v, %v", len(got), more, err)
	}
	if got, more, _ := l.IDs(zero, "", 29); !more || !slices.Equal(got, ids[:29]) {
		t.Fatalf("one past max: %d ids, more %v", len(got), more)
	}
	if got, more, _ := l.IDs(ids[5], ids[9], 100); more || !slices.Equal(got, ids[5:9]) {
		t.Fatalf("[ids[5], ids[9]): %v, more %v", got, more)
	}
	if got, more, _ := l.IDs(ids[5], ids[9], 4); more || len(got) != 4 {
		t.Fatalf("a range at its max: %d ids, more %v", len(got), more)
	}
	if got, more, err := l.IDs(ids[9], ids[5], 100); len(got) != 0 || more || err != nil {
		t.Fatalf("an empty range: %v, %v, %v", got, more, err)
	}
	if _, _, err := l.IDs(zero, "", 0); !errors.Is(err, ErrBadArgument) {
		t.Fatalf("max 0: %v", err)
	}
	if _, _, err := l.IDs(zero, strings.ToUpper(ids[3]), 1); !errors.Is(err, ErrMalformed) {
		t.Fatalf("bad to: %v", err)
	}
}

// TestFingerprint: the count and sum of a range, bounded by max at and
// past it, and equal for two logs holding the same ids in it whatever
// their order.
func TestFingerprint(t *testing.T) {
	l, ids := idRangeLog(t, 30)
	zero := strings.Repeat("0", 64)
	n, sum, more, err := l.Fingerprint(zero, "", 30)
	if err != nil || n != 30 || more {
		t.Fatalf("whole log at max: %d, more %v, %v", n, more, err)
	}
	var want [32]byte
	for _, id := range ids {
		raw, _ := hex.DecodeString(id)
		AddID(&want, [32]byte(raw))
	}
	if sum != want {
		t.Fatal("sum differs from the ids' sum")
	}
	if n, _, more, _ := l.Fingerprint(zero, "", 29); n != 29 || !more {
		t.Fatalf("one past max: %d, more %v", n, more)
	}
	if n, _, _, _ := l.Fingerprint(ids[5], ids[9], 100); n != 4 {
		t.Fatalf("range counted %d, want 4", n)
	}
	if _, _, _, err := l.Fingerprint(zero, "", 0); !errors.Is(err, ErrBadArgument) {
		t.Fatalf("max 0: %v", err)
	}
	if _, _, _, err := l.Fingerprint(zero, "Z", 1); !errors.Is(err, ErrMalformed) {
		t.Fatalf("bad to: %v", err)
	}
	// The same events appended in reverse order to another log.
	other := openLog(t, memDB(t))
	for i := len(ids) - 1; i >= 0; i-- {
		e, _, err := l.Get(ids[i])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	if n2, sum2, _, _ := other.Fingerprint(zero, "", 100); n2 != 30 || sum2 != want {
		t.Fatal("the same ids in another order fingerprint differently")
	}
}

// TestAddIDCarries: the sum carries across bytes and wraps at 2^256.
func TestAddIDCarries(t *testing.T) {
	var sum, one, ff [32]byte
	one[31] = 1
	for i := range ff {
		ff[i] = 0xff
	}
	AddID(&sum, ff)
	AddID(&sum, one)
	if sum != ([32]byte{}) {
		t.Fatalf("2^256-1 + 1 = %x, want 0", sum)
	}
	AddID(&sum, [32]byte{31: 0xff})
	AddID(&sum, one)
	if sum != ([32]byte{30: 1}) {
		t.Fatalf("0xff + 1 = %x", sum)
	}
}

// nextID is id + 1.
func nextID(t *testing.T, id string) string {
	raw, err := hex.DecodeString(id)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(raw) - 1; i >= 0; i-- {
		raw[i]++
		if raw[i] != 0 {
			break
		}
	}
	return hex.EncodeToString(raw)
}
