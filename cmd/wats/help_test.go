package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// maxHelpLine is the widest line of any command's --help: beyond it a
// usual terminal wraps it, mid-word.
const maxHelpLine = 100

// TestHelpLinesFit: every command's --help is at most maxHelpLine wide,
// and the commands that do not use --repo do not offer it.
func TestHelpLinesFit(t *testing.T) {
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.Fields(c.CommandPath())[1:]
		code, out, stderr := runCLI(t, "", append(path, "--help")...)
		if code != exitOK {
			t.Errorf("%s --help: exit %d: %s", c.CommandPath(), code, stderr)
		}
		for _, l := range strings.Split(out, "\n") {
			if n := len([]rune(l)); n > maxHelpLine {
				t.Errorf("%s --help has a line of %d characters:\n%s", c.CommandPath(), n, l)
			}
		}
		if top := path; len(top) > 0 && (top[0] == "devnet" || top[0] == "bench") && strings.Contains(out, "--repo string") {
			t.Errorf("%s --help offers --repo, which it does not use", c.CommandPath())
		}
		for _, s := range c.Commands() {
			if !s.Hidden && s.Name() != "help" {
				walk(s)
			}
		}
	}
	walk(newRootCmd(strings.NewReader(""), nil, nil))
}
