package config

import (
	"bufio"
	"bytes"
	"github.com/wats-network/wats/limits"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// tomlKeys walks t by reflection, independently of the package's own walk,
// and returns the full dotted name of every key and of every table.
func tomlKeys(t reflect.Type, prefix string) (keys, tables []string) {
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, _, _ := strings.Cut(sf.Tag.Get("toml"), ",")
		if tag == "" || tag == "-" {
			continue
		}
		name := tag
		if prefix != "" {
			name = prefix + "." + tag
		}
		if sf.Type.Kind() == reflect.Struct && sf.Type != reflect.TypeFor[Duration]() {
			tables = append(tables, name)
			k, tb := tomlKeys(sf.Type, name)
			keys, tables = append(keys, k...), append(tables, tb...)
			continue
		}
		keys = append(keys, name)
	}
	return keys, tables
}

// templateKeys returns the full dotted names of the keys set (not
// commented) in a template, and the comment lines just above each.
func templateKeys(t *testing.T, tmpl []byte) map[string][]string {
	t.Helper()
	keys := map[string][]string{}
	table := ""
	var comments []string
	sc := bufio.NewScanner(bytes.NewReader(tmpl))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#"):
			comments = append(comments, line)
		case strings.HasPrefix(line, "["):
			table = strings.Trim(line, "[]")
			comments = nil
		case strings.Contains(line, " = "):
			name, _, _ := strings.Cut(line, " = ")
			if table != "" {
				name = table + "." + name
			}
			keys[name] = comments
			comments = nil
		case line == "":
			comments = nil
		}
	}
	return keys
}

// TestTemplateCoversEveryKey fails when a key of Config has no entry in
// keyDocs (so no comment in the template), when keyDocs or tableDocs has an
// entry for a key or table that does not exist, or when the template lacks
// a key or its comment.
func TestTemplateCoversEveryKey(t *testing.T) {
	keys, tables := tomlKeys(reflect.TypeFor[Config](), "")
	if len(keys) < 15 {
		t.Fatalf("walk found only %d keys: %v", len(keys), keys)
	}
	inTemplate := templateKeys(t, Template(Default()))
	for _, k := range keys {
		doc, ok := keyDocs[k]
		if !ok {
			t.Errorf("key %s has no entry in keyDocs", k)
			continue
		}
		if doc.what == "" || doc.allowed == "" || doc.example == "" {
			t.Errorf("keyDocs[%q] lacks what, allowed or example: %+v", k, doc)
		}
		comments, ok := inTemplate[k]
		if !ok {
			t.Errorf("key %s is not in the template", k)
			continue
		}
		text := strings.Join(comments, "\n")
		for _, want := range []string{"# Allowed: ", "# Default: "} {
			if !strings.Contains(text, want) {
				t.Errorf("comment of %s lacks %q:\n%s", k, want, text)
			}
		}
		if _, ok := fields[k]; !ok {
			t.Errorf("key %s is missing from the package's own walk", k)
		}
	}
	if len(inTemplate) != len(keys) {
		t.Errorf("template sets %d keys, Config has %d", len(inTemplate), len(keys))
	}
	if len(keyDocs) != len(keys) {
		for k := range keyDocs {
			if _, ok := inTemplate[k]; !ok {
				t.Errorf("keyDocs documents %q, which is not a key of Config", k)
			}
		}
	}
	for _, tb := range tables {
		if tableDocs[tb] == "" {
			t.Errorf("table [%s] has no entry in tableDocs", tb)
		}
	}
	if len(tableDocs) != len(tables) {
		t.Errorf("tableDocs has %d entries, Config has %d tables %v", len(tableDocs), len(tables), tables)
	}
}

// TestKeyDocExamplesAreValid parses each key's example in its table: the
// examples that error messages show must themselves be right.
func TestKeyDocExamplesAreValid(t *testing.T) {
	for k, doc := range keyDocs {
		f, ok := fields[k]
		if !ok {
			t.Errorf("keyDocs documents unknown key %q", k)
			continue
		}
		name, _, _ := strings.Cut(doc.example, " = ")
		if name != f.name {
			t.Errorf("example of %s sets %q", k, name)
		}
		data := doc.example + "\n"
		if f.table != "" {
			data = "[" + f.table + "]\n" + data
		}
		if _, err := Parse([]byte(data), "example"); err != nil {
			t.Errorf("example of %s does not parse: %v", k, err)
		}
	}
}

// nonDefault returns a valid Config in which every key differs from its
// default.
func nonDefault() *Config {
	c := &Config{Network: "lab.net_2-x"}
	c.P2P = P2PConfig{
		Listen:       []string{"/ip4/127.0.0.1/tcp/0", "/ip6/::1/udp/0/quic-v1", "/ip4/10.0.0.1/tcp/4001"},
		Bootstrap:    []string{exampleBootstrap},
		MDNS:         true,
		DHT:          DHTClient,
		Relays:       []string{exampleBootstrap},
		RelayService: true,
		NATPortMap:   true,
		ConnsLow:     10,
		ConnsHigh:    20,
		ConnsGrace:   Duration{90 * time.Second},
		MaxConns:     30,
		MaxStreams:   100,
		MaxMemoryMiB: 64,
	}
	c.Sync = SyncConfig{Interval: Duration{time.Hour + 30*time.Minute + 1500*time.Millisecond}, Gossip: false}
	c.Limits = limits.Config{
		HelloPerMin: 1, SyncPerMin: 0, ReplicatePerMin: limits.MaxPerMin, ReportPerMin: 3,
		BlobFetchesPerPeer: limits.MaxBlobFetchesPerPeer, Challenge: false,
		ChallengeBaseBits: 12, ChallengeMaxBits: 20,
		MissPerMin: 0, SuspectPercent: limits.MaxSuspectPercent, ValuedPercent: limits.MaxValuedPercent,
		GossipPerMin: 1, StrangerGossipPerMin: 2, AuthorPerMin: 3, StrangerAuthorPerMin: 4, NewAuthorMinutes: limits.MaxNewAuthorMinutes,
		StrangerSyncPerMin: 5, StrangerDHTPerMin: 6,
		// Not keys: Parse keeps their defaults.
		OverloadInFlight: limits.DefaultConfig().OverloadInFlight,
		SolvedPerMin:     limits.DefaultConfig().SolvedPerMin,
	}
	c.PeerCache = PeerCacheConfig{MaxPeers: 3}
	c.Events = EventsConfig{MaxEvents: 100, MaxBytes: 1 << 20, MaxEventsPerAuthor: 10, MaxBytesPerAuthor: 1 << 16}
	c.Bandwidth = BandwidthConfig{UpBytesPerS: 8 << 20, DownBytesPerS: 16 << 20, MonthlyUpBytes: 1 << 40}
	c.Blobs = BlobsConfig{MaxBlobBytes: 1 << 20, QuotaBytes: 1 << 30, Serve: ServeAll, AutoFetch: false}
	c.API = APIConfig{MetricsAddr: "[::1]:9464"}
	c.Log = LogConfig{Level: "debug", Format: "json"}
	return c
}

func TestNonDefaultDiffersEverywhere(t *testing.T) {
	c, d := reflect.ValueOf(nonDefault()).Elem(), reflect.ValueOf(Default()).Elem()
	if err := nonDefault().Validate(); err != nil {
		t.Fatal(err)
	}
	for k, f := range fields {
		if reflect.DeepEqual(c.FieldByIndex(f.index).Interface(), d.FieldByIndex(f.index).Interface()) {
			t.Errorf("nonDefault() keeps the default of %s: give it another value so the round trips test it", k)
		}
	}
}

func TestTemplateRoundTrip(t *testing.T) {
	for name, c := range map[string]*Config{"default": Default(), "non-default": nonDefault()} {
		got, err := Parse(Template(c), "template")
		if err != nil {
			t.Fatalf("%s: Parse(Template(c)): %v\n%s", name, err, Template(c))
		}
		if !reflect.DeepEqual(got, c) {
			t.Errorf("%s: Parse(Template(c)) = %+v, want %+v", name, got, c)
		}
	}
	if !bytes.Equal(Template(nil), Template(Default())) {
		t.Error("Template(nil) differs from Template(Default())")
	}
}

func TestTemplateDefaultComments(t *testing.T) {
	// The "Default:" comment shows the default even when the value differs.
	tmpl := templateKeys(t, Template(nonDefault()))
	comments := strings.Join(tmpl["p2p.conns_low"], "\n")
	if !strings.Contains(comments, "# Default: 32.") {
		t.Fatalf("comment of p2p.conns_low:\n%s", comments)
	}
	if !bytes.Contains(Template(nonDefault()), []byte("\nconns_low = 10\n")) {
		t.Fatalf("template lacks conns_low = 10:\n%s", Template(nonDefault()))
	}
}

func TestTOMLRoundTrip(t *testing.T) {
	for name, c := range map[string]*Config{"default": Default(), "non-default": nonDefault()} {
		b, err := c.TOML()
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("#")) {
			t.Errorf("%s: TOML() has comments:\n%s", name, b)
		}
		got, err := Parse(b, "toml")
		if err != nil {
			t.Fatalf("%s: Parse(TOML()): %v\n%s", name, err, b)
		}
		if !reflect.DeepEqual(got, c) {
			t.Errorf("%s: Parse(TOML()) = %+v, want %+v", name, got, c)
		}
	}
}

// TestTemplateDescribesOnlyWhatExists: the template describes this
// version. A sentence of its comments that mentions a table Config does not
// have, or the rate limits of ADR 0014 while Config has no table [limits],
// must say that it is planned; once [limits] exists, no sentence about the
// rate limits may.
func TestTemplateDescribesOnlyWhatExists(t *testing.T) {
	limitsExist := tableByName("limits") != nil
	var text []string
	for line := range strings.Lines(string(Template(nil))) {
		if c, ok := strings.CutPrefix(strings.TrimSpace(line), "#"); ok {
			text = append(text, strings.TrimSpace(c))
		}
	}
	tableRef := regexp.MustCompile(`\[([a-z0-9_.]+)\]`)
	mentions := 0
	for _, sentence := range strings.Split(strings.Join(text, " "), ". ") {
		var future []string
		if strings.Contains(strings.ToLower(sentence), "rate limit") {
			if limitsExist && strings.Contains(sentence, "planned") {
				t.Errorf("the template calls the rate limits planned, but [limits] exists: %q", sentence)
			}
			if !limitsExist {
				future = append(future, "rate limits")
			}
		}
		for _, m := range tableRef.FindAllStringSubmatch(sentence, -1) {
			if tableByName(m[1]) == nil {
				future = append(future, m[0])
			}
		}
		mentions += len(future)
		if len(future) > 0 && !strings.Contains(sentence, "planned") {
			t.Errorf("the template mentions %v as if it existed: %q", future, sentence)
		}
	}
	if mentions == 0 && !limitsExist {
		t.Error("the template no longer mentions the planned rate limits: drop or update this test")
	}
}
