package main

import "testing"

// TestPrintableNeutralizesTerminalControls: peer-controlled text (a hello
// agent, a peer's error message) cannot move the cursor, clear the screen
// or set the window title when printed.
func TestPrintableNeutralizesTerminalControls(t *testing.T) {
	cases := map[string]string{
		"wats/0.1.0":                       "wats/0.1.0",
		"héllo ✓":                          "héllo ✓",
		"\x1b[31mEVIL\x1b[0m\r\n":          `\x1b[31mEVIL\x1b[0m\r` + "\n",
		"\x1b[2J\x1b]0;evil title\x07":     `\x1b[2J\x1b]0;evil title\a`,
		"tab\there":                        "tab\there",
		"zero\u200bwidth and bidi \u202e!": `zero\u200bwidth and bidi \u202e!`,
	}
	for in, want := range cases {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %q, want %q", in, got, want)
		}
	}
}
