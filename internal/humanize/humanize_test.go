package humanize

import (
	"strings"
	"testing"
)

func TestBytes(t *testing.T) {
	for n, want := range map[uint64]string{
		0: "0 B", 1023: "1023 B", 1 << 10: "1.0 KiB", 3<<20 + 12345: "3.0 MiB", 3 << 29: "1.5 GiB",
		1<<40 - 1<<30: "1023.0 GiB", 1 << 40: "1.0 TiB", 20 << 40: "20.0 TiB", 1 << 50: "1.0 PiB", 1 << 53: "8.0 PiB",
	} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestPlural(t *testing.T) {
	for n, want := range map[int]string{0: "0 nodes", 1: "1 node", 3: "3 nodes"} {
		if got := Plural(n, "node"); got != want {
			t.Errorf("Plural(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestWrap(t *testing.T) {
	for _, tc := range []struct {
		s     string
		width int
		want  []string
	}{
		{"a bb ccc", 4, []string{"a bb", "ccc"}},
		{"a bb ccc", 3, []string{"a", "bb", "ccc"}},
		{"abcdef gh", 4, []string{"abcdef", "gh"}},
		{"é é é", 3, []string{"é é", "é"}}, // runes, not bytes
		{"", 4, nil},
	} {
		if got := Wrap(tc.s, tc.width); strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
			t.Errorf("Wrap(%q, %d) = %q, want %q", tc.s, tc.width, got, tc.want)
		}
	}
}
