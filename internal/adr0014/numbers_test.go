package adr0014

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wats-network/wats/blobs"
	"github.com/wats-network/wats/challenge"
	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/proto"
)

// numbers are ADR 0014's numbers as the code defines them, by the name
// the table gives.
var numbers = map[string]any{
	"limits.DefaultConfig().HelloPerMin":        limits.DefaultConfig().HelloPerMin,
	"limits.DefaultConfig().SyncPerMin":         limits.DefaultConfig().SyncPerMin,
	"limits.DefaultConfig().ReplicatePerMin":    limits.DefaultConfig().ReplicatePerMin,
	"limits.DefaultConfig().ReportPerMin":       limits.DefaultConfig().ReportPerMin,
	"core.MaxPageEvents":                        core.MaxPageEvents,
	"limits.LogInterval":                        limits.LogInterval,
	"limits.DefaultConfig().BlobFetchesPerPeer": limits.DefaultConfig().BlobFetchesPerPeer,
	"proto.MaxProviders":                        proto.MaxProviders,
	"core.MaxHintsPerBlob":                      core.MaxHintsPerBlob,
	"blobs.MaxAttempts":                         blobs.MaxAttempts,
	"blobs.AttemptTimeout":                      blobs.AttemptTimeout,
	"blobs.FetchTimeout":                        blobs.FetchTimeout,
	"blobs.BackoffBase":                         blobs.BackoffBase,
	"blobs.BackoffMax":                          blobs.BackoffMax,
	"limits.DefaultConfig().OverloadInFlight":   limits.DefaultConfig().OverloadInFlight,
	"core.ReputationAge":                        core.ReputationAge,
	"core.MaxChallengeEffort":                   core.MaxChallengeEffort,
	"challenge.MaxNonceDigits":                  challenge.MaxNonceDigits,
	"challenge.SeedLen":                         challenge.SeedLen,
	"challenge.SeedLifetime":                    challenge.SeedLifetime,
	"challenge.MaxUsedSeeds":                    challenge.MaxUsedSeeds,
	"core.DefaultChallengeBaseBits":             core.DefaultChallengeBaseBits,
	"challenge.EffortInterval":                  challenge.EffortInterval,
	"core.DefaultChallengeMaxBits":              core.DefaultChallengeMaxBits,
	"core.DefaultSolvedPerMin":                  core.DefaultSolvedPerMin,
}

// format writes v as the table does: a count with thousands separators,
// a duration in hours, in minutes from ten minutes, else in seconds.
func format(v any) string {
	switch v := v.(type) {
	case time.Duration:
		switch {
		case v >= time.Hour && v%time.Hour == 0:
			return fmt.Sprintf("%d h", v/time.Hour)
		case v >= 10*time.Minute && v%time.Minute == 0:
			return fmt.Sprintf("%d min", v/time.Minute)
		default:
			return fmt.Sprintf("%d s", v/time.Second)
		}
	case int:
		s := fmt.Sprint(v)
		for i := len(s) - 3; i > 0; i -= 3 {
			s = s[:i] + "," + s[i:]
		}
		return s
	}
	return fmt.Sprintf("%T %v", v, v)
}

// table returns the rows of docs/design.md §15: the name of each number
// and its value as written.
func table(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## 15. ADR 0014's numbers\n")
	if !ok {
		t.Fatal("docs/design.md has no section 15, ADR 0014's numbers")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	rows := map[string]string{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if !strings.HasPrefix(line, "|") || len(cells) != 3 || !strings.HasPrefix(cells[2], "`") {
			continue
		}
		name := strings.Trim(cells[2], "`")
		if _, dup := rows[name]; dup {
			t.Errorf("the table names %s twice", name)
		}
		rows[name] = cells[1]
	}
	return rows
}

// TestTableOfNumbers: every row of the table gives the value the code
// defines, and every number of ADR 0014 that the code defines has a row.
func TestTableOfNumbers(t *testing.T) {
	rows := table(t)
	for name, written := range rows {
		v, ok := numbers[name]
		if !ok {
			t.Errorf("the table names %s, which this test does not know: add it to numbers", name)
			continue
		}
		if got := format(v); got != written {
			t.Errorf("the table says %s is %s; the code defines %s", name, written, got)
		}
	}
	for name := range numbers {
		if _, ok := rows[name]; !ok {
			t.Errorf("%s, a number of ADR 0014, has no row in docs/design.md §15", name)
		}
	}
}

// TestFormat: the table's units, so that a row cannot pass by a format
// that writes every value alike.
func TestFormat(t *testing.T) {
	for v, want := range map[any]string{
		4096: "4,096", 1200: "1,200", 64: "64", 1_000_000: "1,000,000",
		time.Hour: "1 h", 10 * time.Minute: "10 min", time.Minute: "60 s",
		120 * time.Second: "120 s", 30 * time.Second: "30 s",
	} {
		if got := format(v); got != want {
			t.Errorf("format(%v) = %q, want %q", v, got, want)
		}
	}
}
