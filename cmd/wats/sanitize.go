package main

import (
	"strconv"
	"strings"
	"unicode"
)

// printable makes text that came from a peer (an agent string, an error
// message) safe to print on a terminal: control characters, including the
// escape that starts ANSI sequences, and other non-printing runes are
// shown as Go escapes (\x1b, \r) instead of acting on the terminal. Plain
// text passes unchanged. --json output needs none of this: JSON escapes
// control characters itself.
func printable(s string) string {
	if !strings.ContainsFunc(s, notPrintable) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if notPrintable(r) {
			q := strconv.QuoteRune(r) // '\x1b'
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func notPrintable(r rune) bool {
	return r != '\n' && r != '\t' && !unicode.IsPrint(r) && r != ' '
}
