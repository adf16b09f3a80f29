package blobs

import (
	"strings"
	"testing"
	"time"
)

// TestDeadlines: items come out earliest first, whatever the order of
// set, update and remove; the map and the heap stay in step.
func TestDeadlines(t *testing.T) {
	var d deadlines[string, int]
	if d.first() != nil || d.len() != 0 || d.remove("x") {
		t.Fatal("the zero set is not empty")
	}
	at := func(s int) time.Time { return base.Add(time.Duration(s) * time.Second) }
	d.set("c", at(3), 3)
	d.set("a", at(1), 1)
	d.set("b", at(2), 2)
	d.set("d", at(4), 4)
	d.set("c", at(0), 30) // moved to the front, value replaced
	if !d.remove("b") || d.remove("b") {
		t.Fatal("remove of b: want true once")
	}
	var got []string
	for d.len() > 0 {
		if d.first() != d.heap[0] {
			t.Fatal("first is not the heap's root")
		}
		it := d.popFirst()
		if d.get(it.key) != nil {
			t.Fatalf("%s still in the map after popFirst", it.key)
		}
		got = append(got, it.key)
	}
	if want := "c a d"; strings.Join(got, " ") != want {
		t.Fatalf("order %q, want %q", strings.Join(got, " "), want)
	}
}
