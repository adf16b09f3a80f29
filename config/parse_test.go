package config

import (
	"bytes"
	"errors"
	"fmt"
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
			[]string{`unknown key "colour"`, "the keys at the top level are network", "[p2p], [sync], [limits], [peercache], [blobs], [events], [bandwidth], [api], [log]"}},
		{"unknown nested key", "[p2p]\nlistn = []\n", ErrUnknownKey, "p2p.listn", 2, 1,
			[]string{`unknown key "p2p.listn"`, `did you mean "p2p.listen"?`}},
		{"unknown nested key, no near one", "[p2p]\n\n  hops = 3\n", ErrUnknownKey, "p2p.hops", 3, 3,
			[]string{`unknown key "p2p.hops"`, "the keys in [p2p] are listen, bootstrap, mdns, dht"}},
		{"unknown dotted key", "p2p.listn = []\n", ErrUnknownKey, "p2p.listn", 1, 1,
			[]string{`did you mean "p2p.listen"?`}},
		{"key in the wrong table", "[p2p]\ninterval = \"1m\"\n", ErrUnknownKey, "p2p.interval", 2, 1,
			[]string{`did you mean "sync.interval"?`}},
		{"unknown table", "[pp2p]\nlisten = []\n", ErrUnknownKey, "pp2p", 1, 2,
			[]string{`unknown table [pp2p]: did you mean [p2p]?`}},
		{"unknown table, no near one", "[relay]\nhops = 3\n", ErrUnknownKey, "relay", 1, 2,
			[]string{"unknown table [relay]: the tables are [p2p], [sync], [limits], [peercache], [blobs], [events], [bandwidth], [api], [log]"}},
		{"unknown sub-table", "[p2p.hops]\nx = 1\n", ErrUnknownKey, "p2p.hops", 1, 2,
			[]string{"unknown table [p2p.hops]: the tables are [p2p], [sync], [limits], [peercache], [blobs], [events], [bandwidth], [api], [log]"}},
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

// parseProblem is what a test expects of one problem of Parse.
type parseProblem struct {
	key       string
	kind      error
	line, col int
}

func (p parseProblem) String() string {
	return fmt.Sprintf("%s %v %d:%d", p.key, p.kind, p.line, p.col)
}

// checkProblems checks that err holds exactly want, in that order, each
// with the file name and its position in its message.
func checkProblems(t *testing.T, err error, file string, want []parseProblem) []*Error {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %v", want)
	}
	ps := problemsOf(t, err)
	var got []parseProblem
	for _, p := range ps {
		kind := p.Kind
		if !errors.Is(p, kind) || p.File != file {
			t.Errorf("problem %v: kind %v, file %q", p, kind, p.File)
		}
		if prefix := fmt.Sprintf("%s:%d:%d: ", file, p.Line, p.Column); !strings.HasPrefix(p.Error(), prefix) {
			t.Errorf("problem %q does not start with %q", p.Error(), prefix)
		}
		if p.Key != "" && !strings.Contains(p.Msg, p.Key) {
			t.Errorf("problem %q does not name its key %q", p.Error(), p.Key)
		}
		got = append(got, parseProblem{p.Key, kind, p.Line, p.Column})
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("problems\n%v\nwant\n%v\n(%v)", got, want, err)
	}
	return ps
}

// TestParseExactNames: names written exactly as documented are accepted
// and take effect, whatever the quoting.
func TestParseExactNames(t *testing.T) {
	doc := `"network" = "lab"
p2p.mdns = true
[log]
level = "debug"
[ 'sync' ]
gossip = false
[api]
`
	c, err := Parse([]byte(doc), "c.toml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Network != "lab" || !c.P2P.MDNS || c.Log.Level != "debug" || c.Sync.Gossip {
		t.Fatalf("Parse = %+v: a key did not take effect", c)
	}
}

// TestParseRefusesOtherCase: docs/design.md §4 and §11 match names exactly, case
// included; go-toml's decoder alone would take `Network` for `network`.
func TestParseRefusesOtherCase(t *testing.T) {
	for _, tc := range []struct {
		doc       string
		key       string
		line, col int
		suggest   string
	}{
		// A top-level key, in each way its case can differ.
		{"Network = \"lab\"\n", "Network", 1, 1, `unknown key "Network": did you mean "network"?`},
		{"NETWORK = \"lab\"\n", "NETWORK", 1, 1, `did you mean "network"?`},
		{"netWork = \"lab\"\n", "netWork", 1, 1, `did you mean "network"?`},
		{"# x\n  networK = \"lab\"\n", "networK", 2, 3, `did you mean "network"?`},
		// A table name.
		{"[Log]\nlevel = \"debug\"\n", "Log", 1, 2, `unknown table [Log]: did you mean [log]?`},
		{"[LOG]\nlevle = \"debug\"\n", "LOG", 1, 2, `unknown table [LOG]: did you mean [log]?`},
		{"[P2P]\n", "P2P", 1, 2, `unknown table [P2P]: did you mean [p2p]?`},
		{"P2P = { mdns = true }\n", "P2P", 1, 1, `unknown key "P2P": did you mean [p2p]?`},
		{"Log.level = \"debug\"\n", "Log.level", 1, 1, `did you mean "log.level"?`},
		// A nested key, in a table, dotted, or in an inline table.
		{"[log]\nLevel = \"debug\"\n", "log.Level", 2, 1, `unknown key "log.Level": did you mean "log.level"?`},
		{"[p2p]\nConns_Low = 1\n", "p2p.Conns_Low", 2, 1, `did you mean "p2p.conns_low"?`},
		{"log.LEVEL = \"debug\"\n", "log.LEVEL", 1, 1, `did you mean "log.level"?`},
		{"p2p = { MDNS = true }\n", "p2p.MDNS", 1, 9, `did you mean "p2p.mdns"?`},
		{"[sync]\ninterval = \"1m\"\nGossip = false\n", "sync.Gossip", 3, 1, `did you mean "sync.gossip"?`},
	} {
		t.Run(tc.doc, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc), "c.toml")
			ps := checkProblems(t, err, "c.toml", []parseProblem{{tc.key, ErrUnknownKey, tc.line, tc.col}})
			for _, want := range []string{tc.suggest, "(names are matched exactly, case included)"} {
				if !strings.Contains(ps[0].Msg, want) {
					t.Errorf("message %q does not contain %q", ps[0].Msg, want)
				}
			}
		})
	}
}

// TestParseSameKeyInTwoCases: of two keys the same but for case, the exact
// one is a key like any other and the other is unknown.
func TestParseSameKeyInTwoCases(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want []parseProblem
	}{
		{"network = \"aaa\"\nNetwork = \"bbb\"\n", []parseProblem{{"Network", ErrUnknownKey, 2, 1}}},
		{"Network = \"bbb\"\nnetwork = \"aaa\"\n", []parseProblem{{"Network", ErrUnknownKey, 1, 1}}},
		// The known key is judged by its own value, not the other's.
		{"network = \"A\"\nNetwork = \"b\"\n", []parseProblem{
			{"network", ErrInvalid, 1, 1}, {"Network", ErrUnknownKey, 2, 1}}},
		{"Network = \"A\"\nnetwork = \"b\"\n", []parseProblem{{"Network", ErrUnknownKey, 1, 1}}},
		{"[log]\nlevel = \"debug\"\n[Log]\nlevel = \"verbose\"\n", []parseProblem{{"Log", ErrUnknownKey, 3, 2}}},
		{"[log]\nlevel = \"debug\"\nLevel = 7\n", []parseProblem{{"log.Level", ErrUnknownKey, 3, 1}}},
	} {
		t.Run(tc.doc, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc), "c.toml")
			checkProblems(t, err, "c.toml", tc.want)
		})
	}
}

// TestParseReportsAllKindsAtOnce: unknown keys, wrong types and values out
// of range come in one run, in the order of the file.
func TestParseReportsAllKindsAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  string
		want []parseProblem
	}{
		{"typo, type, value", "[p2p]\nmdsn = false\n[sync]\ninterval = 30\n[log]\nlevel = \"verbose\"\n",
			[]parseProblem{
				{"p2p.mdsn", ErrUnknownKey, 2, 1},
				{"sync.interval", ErrType, 4, 1},
				{"log.level", ErrInvalid, 6, 1},
			}},
		{"typo and value", "[p2p]\nmdsn = false\n[log]\nlevel = \"verbose\"\n",
			[]parseProblem{{"p2p.mdsn", ErrUnknownKey, 2, 1}, {"log.level", ErrInvalid, 4, 1}}},
		{"every type", "network = 1\n[p2p]\nmdns = \"yes\"\nconns_low = 1.5\nlisten = [\n  \"/ip4/0.0.0.0/tcp/1\",\n  7,\n]\n[sync]\ngossip = 1\n",
			[]parseProblem{
				{"network", ErrType, 1, 11},
				{"p2p.mdns", ErrType, 3, 8},
				{"p2p.conns_low", ErrType, 4, 13},
				{"p2p.listen", ErrType, 7, 3}, // at the entry
				{"sync.gossip", ErrType, 10, 10},
			}},
		{"types and values on one line", "p2p = { mdns = 3, conns_grace = \"1x\", max_streams = 1, Listen = [] }\n",
			[]parseProblem{
				{"p2p.mdns", ErrType, 1, 16},
				{"p2p.conns_grace", ErrInvalid, 1, 33},
				{"p2p.max_streams", ErrInvalid, 1, 39},
				{"p2p.Listen", ErrUnknownKey, 1, 56},
			}},
		{"misplaced tables and values", "network.x = 1\n[sync]\ninterval = 1\n[log.x]\n[api]\nmetrics_addr = \"0.0.0.0:1\"\n",
			[]parseProblem{
				{"network.x", ErrType, 1, 9},
				{"sync.interval", ErrType, 3, 1},
				{"log.x", ErrUnknownKey, 4, 2},
				{"api.metrics_addr", ErrInvalid, 6, 1},
			}},
		{"integer too large", "[p2p]\nmax_conns = 99999999999999999999\nmax_streams = 1\n",
			[]parseProblem{{"p2p.max_conns", ErrInvalid, 2, 13}, {"p2p.max_streams", ErrInvalid, 3, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc), "c.toml")
			checkProblems(t, err, "c.toml", tc.want)
		})
	}
}

// TestParseSkipsRulesOnFailedKeys: a rule that reads a key of the wrong
// type would judge that key's default, not the file: it is not reported.
func TestParseSkipsRulesOnFailedKeys(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  string
		want []parseProblem
	}{
		// The rule fires when conns_high decodes...
		{"max_conns below conns_high", "[p2p]\nconns_high = 100\nmax_conns = 50\n",
			[]parseProblem{{"p2p.max_conns", ErrInvalid, 3, 1}}},
		// ...and is skipped when it does not, rather than comparing 50 with
		// conns_high's default 96.
		{"conns_high of the wrong type", "[p2p]\nconns_high = \"many\"\nmax_conns = 50\n",
			[]parseProblem{{"p2p.conns_high", ErrType, 2, 14}}},
		{"conns_low of the wrong type", "[p2p]\nconns_low = \"few\"\nconns_high = 10\n",
			[]parseProblem{{"p2p.conns_low", ErrType, 2, 13}}},
		{"a value for the table", "p2p = 1\n[log]\nformat = \"xml\"\n",
			[]parseProblem{{"p2p", ErrType, 1, 7}, {"log.format", ErrInvalid, 3, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc), "c.toml")
			checkProblems(t, err, "c.toml", tc.want)
		})
	}
}

// TestParseSyntaxErrorAlone: past a syntax error, or with a key defined
// twice, what the file means is a guess; the error is reported alone.
func TestParseSyntaxErrorAlone(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  string
		want parseProblem
	}{
		{"not toml", "netwrk = \"x\"\n[log]\nlevel = \"verbose\"\n[p2p]\nmdns = \n", parseProblem{"", ErrSyntax, 5, 8}},
		{"key twice", "netwrk = \"x\"\n[log]\nlevel = \"verbose\"\nlevel = \"debug\"\n", parseProblem{"log.level", ErrSyntax, 4, 1}},
		{"table twice", "[log]\nlevel = 1\n[log]\n", parseProblem{"log", ErrSyntax, 3, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc), "c.toml")
			checkProblems(t, err, "c.toml", []parseProblem{tc.want})
		})
	}
}

// TestParseMaxKeys checks MaxKeys at the bound (the keys are looked at and
// reported) and just past it (the file is refused at the key past it), the
// keys of inline tables included.
func TestParseMaxKeys(t *testing.T) {
	keys := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "k%d = %d\n", i, i)
		}
		return b.String()
	}
	_, err := Parse([]byte(keys(MaxKeys)), "c.toml")
	ps := problemsOf(t, err)
	if len(ps) != MaxKeys || !errors.Is(ps[MaxKeys-1], ErrUnknownKey) {
		t.Fatalf("%d keys: %d problems, the last %v; want %d unknown keys", MaxKeys, len(ps), ps[len(ps)-1], MaxKeys)
	}

	_, err = Parse([]byte(keys(MaxKeys+1)), "c.toml")
	ps = checkProblems(t, err, "c.toml", []parseProblem{{"", ErrInvalid, MaxKeys + 1, 1}})
	if want := fmt.Sprintf("more than %d keys", MaxKeys); !strings.Contains(ps[0].Msg, want) {
		t.Errorf("message %q does not say %q", ps[0].Msg, want)
	}

	inline := func(n int) string { // one key, n-1 below it
		return "p2p = {" + strings.TrimSuffix(strings.ReplaceAll(keys(n-1), "\n", ", "), ", ") + "}\n"
	}
	_, err = Parse([]byte(inline(MaxKeys)), "c.toml")
	if ps := problemsOf(t, err); len(ps) != MaxKeys-1 || !errors.Is(ps[0], ErrUnknownKey) {
		t.Fatalf("inline table of %d keys: %d problems, want %d unknown keys", MaxKeys, len(ps), MaxKeys-1)
	}
	_, err = Parse([]byte(inline(MaxKeys+1)), "c.toml")
	checkProblems(t, err, "c.toml", []parseProblem{{"", ErrInvalid, 1, 1}})
}

// BenchmarkParseMaxKeys parses the slowest file Parse looks at: MaxKeys
// unknown keys in one table, each with its suggestion.
func BenchmarkParseMaxKeys(b *testing.B) {
	var sb strings.Builder
	for i := range MaxKeys {
		fmt.Fprintf(&sb, "network%d = %d\n", i, i)
	}
	data := []byte(sb.String())
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse(data, "config.toml"); err == nil {
			b.Fatal("no error")
		}
	}
}

// BenchmarkParseTooManyKeys parses a MaxFileSize file of keys, refused at
// the key past MaxKeys.
func BenchmarkParseTooManyKeys(b *testing.B) {
	var sb strings.Builder
	for i := 0; sb.Len() < MaxFileSize-32; i++ {
		fmt.Fprintf(&sb, "k%d = %d\n", i, i)
	}
	data := []byte(sb.String())
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse(data, "config.toml"); !errors.Is(err, ErrInvalid) {
			b.Fatal(err)
		}
	}
}
