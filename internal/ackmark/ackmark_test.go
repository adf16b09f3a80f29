package ackmark

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/wats-network/wats/core"
)

func sid(p core.Cursor) core.ShortID {
	var s core.ShortID
	for i := range s {
		s[i] = byte(uint64(p) >> (8 * i))
	}
	s[7] ^= 0xa5
	return s
}

func ids(from, to core.Cursor) []core.ShortID {
	var out []core.ShortID
	for p := from; p <= to; p++ {
		out = append(out, sid(p))
	}
	return out
}

// record writes positions 1..n in batches of batch.
func record(t *testing.T, m *Mark, n, batch int) {
	t.Helper()
	for p := 1; p <= n; p += batch {
		last := min(p+batch-1, n)
		if err := m.Record(core.Cursor(p), ids(core.Cursor(p), core.Cursor(last))); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLostEventsAreNamed(t *testing.T) {
	for _, tc := range []struct {
		name        string
		acked       int
		batch       int
		head        core.Cursor
		count       uint64
		named       bool
		firstID     core.Cursor // the position of the first id listed
		listed      int
		description string
	}{
		{name: "nothing lost", acked: 1000, batch: 7, head: 1000},
		{name: "a head past the mark", acked: 1000, batch: 7, head: 1200},
		{name: "the tail of 40", acked: 1000, batch: 7, head: 960, count: 40, named: true, firstID: 961, listed: 40},
		{name: "wrapped around the ring", acked: Slots + 100, batch: 300, head: Slots - 50, count: 150, named: true, firstID: Slots - 49, listed: 150},
		{name: "exactly Slots", acked: 2 * Slots, batch: 1000, head: Slots, count: Slots, named: true, firstID: Slots + 1, listed: Slots},
		{name: "one past Slots", acked: 2 * Slots, batch: 1000, head: Slots - 1, count: Slots + 1, named: false, firstID: Slots + 1, listed: Slots},
		{name: "a batch larger than the ring", acked: 3 * Slots, batch: 3 * Slots, head: 3*Slots - 10, count: 10, named: true, firstID: 3*Slots - 9, listed: 10},
		{name: "everything", acked: 50, batch: 50, head: 0, count: 50, named: true, firstID: 1, listed: 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "acked")
			m, err := Open(path, 0)
			if err != nil {
				t.Fatal(err)
			}
			record(t, m, tc.acked, tc.batch)
			m.Close()
			lost, err := Read(path, tc.head)
			if err != nil {
				t.Fatal(err)
			}
			if lost.Count() != tc.count || lost.Named != (tc.named && tc.count > 0) || len(lost.IDs) != tc.listed {
				t.Fatalf("lost %d (named %v, %d ids); want %d (named %v, %d ids)", lost.Count(), lost.Named, len(lost.IDs), tc.count, tc.named, tc.listed)
			}
			for i, id := range lost.IDs {
				if want := sid(tc.firstID + core.Cursor(i)); id != want {
					t.Fatalf("id %d is %x, want %x", i, id, want)
				}
			}
			// Open sets the head: read again, nothing is lost.
			m, err = Open(path, tc.head)
			if err != nil {
				t.Fatal(err)
			}
			m.Close()
			if again, _ := Read(path, tc.head); again.Count() != 0 {
				t.Fatalf("after Open at the head: %d lost", again.Count())
			}
		})
	}
}

func TestNoMarkTellsNothing(t *testing.T) {
	dir := t.TempDir()
	if lost, err := Read(filepath.Join(dir, "none"), 5); err != nil || lost.Count() != 0 {
		t.Fatalf("a missing mark: %+v, %v", lost, err)
	}
	for name, b := range map[string][]byte{
		"short":     []byte("watsack1\x00\x00\x00\x00\x00\x00\x00\x09"),
		"not magic": append([]byte("watsack2\x00\x00\x00\x00\x00\x00\x00\x09"), make([]byte, Slots*slotSize)...),
		"one more":  append([]byte("watsack1\x00\x00\x00\x00\x00\x00\x00\x09"), make([]byte, Slots*slotSize+1)...),
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if lost, err := Read(path, 5); err != nil || lost.Count() != 0 {
			t.Errorf("%s: %+v, %v; want nothing lost", name, lost, err)
		}
		m, err := Open(path, 5)
		if err != nil {
			t.Fatalf("%s: Open: %v", name, err)
		}
		if err := m.Record(6, ids(6, 9)); err != nil {
			t.Fatal(err)
		}
		m.Close()
		if lost, _ := Read(path, 7); lost.Count() != 2 || !lost.Named {
			t.Errorf("%s rewritten: %+v; want 2 named", name, lost)
		}
	}
	// A mark whose slots were never written (a machine crash that kept
	// the head but not the slots) gives the count, unnamed.
	path := filepath.Join(dir, "zeros")
	b := make([]byte, fileSize)
	copy(b, "watsack1")
	b[15] = 9
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if lost, _ := Read(path, 5); lost.Count() != 4 || lost.Named || len(lost.IDs) != 0 {
		t.Fatalf("a mark without slots: %+v; want 4 unnamed", lost)
	}
}

func BenchmarkRecord(b *testing.B) {
	m, err := Open(filepath.Join(b.TempDir(), "acked"), 0)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	batch := ids(1, 256)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := m.Record(core.Cursor(1+i*256), batch); err != nil {
			b.Fatal(err)
		}
	}
}
