package config

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

func decodeForTest(data []byte, v any) error {
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// problemsOf returns the *Errors joined in err.
func problemsOf(t *testing.T, err error) []*Error {
	t.Helper()
	var out []*Error
	var walk func(error)
	walk = func(err error) {
		if e, ok := err.(*Error); ok {
			out = append(out, e)
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		t.Fatalf("error %T %v is neither an *Error nor a join of them", err, err)
	}
	walk(err)
	return out
}

func TestParseDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		doc       string
		kind      error
		key       string
		line, col int
		contains  []string
	}{
		{"unknown top-level key", "netwrk = \"x\"\n", ErrUnknownKey, "netwrk", 1, 1,
			[]string{`unknown key "netwrk"`, `did you mean "network"?`}},
		{"unknown top-level key, no near one", "# c\ncolour = \"x\"\n", ErrUnknownKey, "colour", 2, 1,
			[]string{`unknown key "colour"`, "the keys at the top level are network", "[p2p], [sync], [api], [log]"}},
		{"unknown nested key", "[p2p]\nlistn = []\n", ErrUnknownKey, "p2p.listn", 2, 1,
			[]string{`unknown key "p2p.listn"`, `did you mean "p2p.listen"?`}},
		{"unknown nested key, no near one", "[p2p]\n\n  relay = true\n", ErrUnknownKey, "p2p.relay", 3, 3,
			[]string{`unknown key "p2p.relay"`, "the keys in [p2p] are listen, bootstrap, mdns"}},
		{"unknown dotted key", "p2p.listn = []\n", ErrUnknownKey, "p2p.listn", 1, 1,
			[]string{`did you mean "p2p.listen"?`}},
		{"key in the wrong table", "[p2p]\ninterval = \"1m\"\n", ErrUnknownKey, "p2p.interval", 2, 1,
			[]string{`did you mean "sync.interval"?`}},
		{"unknown table", "[pp2p]\nlisten = []\n", ErrUnknownKey, "pp2p", 1, 2,
			[]string{`unknown table [pp2p]: did you mean [p2p]?`}},
		{"unknown table, no near one", "[limits]\nhello_per_min = 60\n", ErrUnknownKey, "limits", 1, 2,
			[]string{"unknown table [limits]: the tables are [p2p], [sync], [api], [log]"}},
		{"unknown sub-table", "[p2p.relay]\nx = 1\n", ErrUnknownKey, "p2p.relay", 1, 2,
			[]string{"unknown table [p2p.relay]: the tables are [p2p], [sync], [api], [log]"}},
		{"key under a value", "network.x = 1\n", ErrType, "network.x", 1, 9,
			[]string{"network.x: wrong type: network is a string, not a table"}},
		{"string for int", "[p2p]\nconns_low = \"32\"\n", ErrType, "p2p.conns_low", 2, 13,
			[]string{"p2p.conns_low: wrong type: expected an integer, got a string", "conns_low = 32"}},
		{"float for int", "[p2p]\nconns_low = 3.5\n", ErrType, "p2p.conns_low", 2, 13,
			[]string{"expected an integer, got a float"}},
		{"int for bool", "[sync]\ngossip = 1\n", ErrType, "sync.gossip", 2, 10,
			[]string{"sync.gossip: wrong type: expected true or false, got an integer"}},
		{"string for array", "[p2p]\nlisten = \"/ip4/0.0.0.0/tcp/1\"\n", ErrType, "p2p.listen", 2, 10,
			[]string{"expected an array of strings, got a string"}},
		{"array of int", "[p2p]\nlisten = [1]\n", ErrType, "p2p.listen", 2, 11,
			[]string{"expected an array of strings"}},
		{"array for string", "network = [\"x\"]\n", ErrType, "network", 1, 11,
			[]string{"network: wrong type: expected a string, got an array", `network = "wats-dev"`}},
		{"value for table", "p2p = 1\n", ErrType, "p2p", 1, 7,
			[]string{"p2p is a table"}},
		{"int for duration", "[sync]\ninterval = 30\n", ErrType, "sync.interval", 2, 1,
			[]string{`expected a duration string such as "30s" (a bare number has no unit), got an integer`}},
		{"bool for duration in inline table", "p2p = { conns_grace = true }\n", ErrType, "p2p.conns_grace", 1, 9,
			[]string{"got a bool"}},
		{"bad duration", "[sync]\ninterval = \"30\"\n", ErrInvalid, "sync.interval", 2, 12,
			[]string{`"30" is not a duration`, `"30s"`, "allowed: a duration from"}},
		{"integer too large", "[p2p]\nmax_conns = 99999999999999999999\n", ErrInvalid, "p2p.max_conns", 2, 13,
			[]string{"too large"}},
		{"duplicate key", "network = \"a\"\nnetwork = \"b\"\n", ErrSyntax, "network", 2, 1,
			[]string{"already defined"}},
		{"not toml", "network = \n", ErrSyntax, "", 1, 11, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.doc), "/etc/wats/config.toml")
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, want an error", tc.doc, c)
			}
			if !errors.Is(err, tc.kind) {
				t.Errorf("error %q is not %v", err, tc.kind)
			}
			ps := problemsOf(t, err)
			if len(ps) != 1 {
				t.Fatalf("got %d problems, want 1: %v", len(ps), err)
			}
			p := ps[0]
			if p.Key != tc.key || p.Line != tc.line || p.Column != tc.col || p.File != "/etc/wats/config.toml" {
				t.Errorf("problem at %s:%d:%d key %q, want line %d col %d key %q (%v)",
					p.File, p.Line, p.Column, p.Key, tc.line, tc.col, tc.key, err)
			}
			msg := err.Error()
			if want := "/etc/wats/config.toml:"; !strings.HasPrefix(msg, want) {
				t.Errorf("error %q does not start with %q", msg, want)
			}
			for _, s := range tc.contains {
				if !strings.Contains(msg, s) {
					t.Errorf("error %q does not contain %q", msg, s)
				}
			}
		})
	}
}

func TestParseReportsAllUnknownKeys(t *testing.T) {
	doc := "netwrk = \"x\"\n[p2p]\nlistn = []\nconns_lo = 1\n[sink]\n"
	_, err := Parse([]byte(doc), "c.toml")
	ps := problemsOf(t, err)
	var got []string
	for _, p := range ps {
		if !errors.Is(p, ErrUnknownKey) {
			t.Errorf("%v is not ErrUnknownKey", p)
		}
		got = append(got, p.Key)
	}
	if want := "netwrk p2p.listn p2p.conns_lo sink"; strings.Join(got, " ") != want {
		t.Fatalf("unknown keys %q, want %q", got, want)
	}
}

func TestParseLocatesValidationErrors(t *testing.T) {
	doc := `network = "Lab"
[p2p]
listen = [
  "/ip4/0.0.0.0/tcp/1",
  "nonsense",
]
conns_high = 10
[log]
level = "verbose"
`
	_, err := Parse([]byte(doc), "c.toml")
	ps := problemsOf(t, err)
	type loc struct {
		key  string
		line int
	}
	var got []loc
	for _, p := range ps {
		if !errors.Is(p, ErrInvalid) {
			t.Errorf("%v is not ErrInvalid", p)
		}
		got = append(got, loc{p.Key, p.Line})
	}
	want := []loc{
		{"network", 1},
		{"p2p.listen[1]", 5},
		{"p2p.conns_low", 7}, // conns_low is not in the file: located at conns_high
		{"log.level", 9},
	}
	if len(got) != len(want) {
		t.Fatalf("problems %v, want %v (%v)", got, want, err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("problem %d at %v, want %v", i, got[i], want[i])
		}
	}
	if !strings.HasPrefix(ps[2].Error(), "c.toml:7:1: p2p.conns_low = 32: must be below p2p.conns_high (10)") {
		t.Errorf("message %q", ps[2].Error())
	}
}
