// Package humanize formats figures as the CLI (cmd/wats) and its harnesses
// (internal/devnet, internal/bench) print them: byte counts in binary
// units, counted nouns and text wrapped to a width. It imports no other
// wats package.
package humanize

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bytes formats a byte count n with one decimal in the largest binary
// unit it reaches, up to PiB, e.g. "3.0 MiB", "1.5 GiB", "2.0 TiB" (a
// monthly cap of bandwidth.monthly_up_bytes), and in bytes below a KiB,
// e.g. "512 B".
func Bytes(n uint64) string {
	switch {
	case n >= 1<<50:
		return fmt.Sprintf("%.1f PiB", float64(n)/(1<<50))
	case n >= 1<<40:
		return fmt.Sprintf("%.1f TiB", float64(n)/(1<<40))
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// Plural is n and noun, with an "s" unless n is 1: "1 node", "3 nodes",
// "0 nodes".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// Wrap cuts s into lines of at most width runes, between words (a run of
// spaces between two words is one space); a word longer than width has a
// line of its own, whole. None for a string of no word.
func Wrap(s string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		switch {
		case line == "":
			line = w
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(w) > width:
			lines = append(lines, line)
			line = w
		default:
			line += " " + w
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
