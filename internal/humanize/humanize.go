// Package humanize formats figures as the CLI (cmd/wats) and its harnesses
// (internal/devnet, internal/bench) print them: byte counts in binary
// units and counted nouns. It imports no other wats package.
package humanize

import (
	"fmt"
	"strconv"
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
