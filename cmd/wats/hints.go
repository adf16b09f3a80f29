package main

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/repo"
)

// The hints the CLI prints (the next command to run, how to start a daemon,
// the next page of a list) are commands a user pastes into a shell: they
// name the binary as the user can run it, and quote what the shell would
// split.

// defaultName is the name of the binary in hints when it is on $PATH.
const defaultName = "wats"

// commandName returns how hints name this binary: "wats" when that is what
// $PATH runs, otherwise the path it was invoked by (os.Args[0], e.g.
// bin/wats after `make build`). Tests replace it.
var commandName = sync.OnceValue(func() string {
	exe, err := os.Executable()
	if err != nil {
		exe = ""
	}
	return hintName(os.Args[0], exe, exec.LookPath)
})

// hintName is the name of the binary in hints: defaultName when
// lookPath(defaultName) finds the running executable exe, else arg0 (the
// path as invoked), shell-quoted; defaultName if arg0 is empty.
func hintName(arg0, exe string, lookPath func(string) (string, error)) string {
	if p, err := lookPath(defaultName); err == nil && exe != "" && sameFile(p, exe) {
		return defaultName
	}
	if arg0 == "" {
		return defaultName
	}
	return shellQuote(arg0)
}

// sameFile reports whether the paths a and b name the same file, following
// symlinks.
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	if err != nil {
		return false
	}
	return os.SameFile(fa, fb)
}

// shellQuote returns s as one word of a POSIX shell: unchanged when it
// holds only characters no shell treats specially, else in single quotes.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-./,:@%+=", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// pkgPrefixes are the Go package names that open the errors of this
// project's packages and of the JSON decoder ("node: ", "jsontext: "). They
// tell a programmer which layer spoke; a user needs only the message, so
// userMessage removes them.
var pkgPrefixes = []string{"api", "catchup", "config", "eventlog", "gossip", "jsontext", "limits", "node", "p2p", "peercache", "peers",
	"proto", "repo", "routing", "store"}

// userMessage is err as the CLI prints it: its text without the package
// prefixes of pkgPrefixes where they open the message, a line or a wrapped
// part ("sync: node: x" becomes "sync: x"), and without the HTTP status of
// a daemon's refusal (4xx; a 500 keeps it, for a bug report). A repo in
// use by a daemon (repo.LockedError: a second daemon, an init --force or
// a repair) is said with what to do: stop that daemon, or use another
// repo.
func userMessage(err error) string {
	s := err.Error()
	// A refusal of the daemon (4xx) says in its message what was wrong
	// and what to do: its HTTP status adds nothing for a person.
	var ae *api.Error
	if errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500 {
		s = strings.Replace(s, fmt.Sprintf("%d %s: ", ae.Status, http.StatusText(ae.Status)), "", 1)
	}
	var le *repo.LockedError
	if errors.As(err, &le) {
		s += fmt.Sprintf("; stop it with: %s shutdown --repo %s, or use another --repo", commandName(), shellQuote(le.Dir))
	}
	return stripPkgPrefixes(s)
}

func stripPkgPrefixes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if i == 0 || s[i-1] == '\n' || i >= 2 && s[i-2:i] == ": " {
			if n := pkgPrefixLen(s[i:]); n > 0 {
				i += n
				continue
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// pkgPrefixLen is the length of the "pkg: " that opens s, 0 if none does.
func pkgPrefixLen(s string) int {
	for _, p := range pkgPrefixes {
		if strings.HasPrefix(s, p+": ") {
			return len(p) + 2
		}
	}
	return 0
}
