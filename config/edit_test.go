package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestKeysAndGet(t *testing.T) {
	keys := Keys()
	if len(keys) != len(fields) || keys[0] != "network" || !slices.Contains(keys, "limits.gossip_per_min") {
		t.Fatalf("Keys() = %d keys starting %q; want every key of the schema, network first", len(keys), keys[:1])
	}
	c := Default()
	for key, want := range map[string]string{
		"log.level":           `"info"`,
		"sync.interval":       `"30s"`,
		"p2p.mdns":            "false",
		"limits.sync_per_min": "600",
		"p2p.listen":          `["/ip4/0.0.0.0/tcp/9287", "/ip4/0.0.0.0/udp/9287/quic-v1"]`,
	} {
		if got, err := c.Get(key); err != nil || got != want {
			t.Errorf("Get(%s) = %s, %v; want %s", key, got, err, want)
		}
	}
	_, err := c.Get("log.levl")
	if !errors.Is(err, ErrNoKey) || !strings.Contains(err.Error(), "log.level") {
		t.Errorf("Get(log.levl): %v; want ErrNoKey naming log.level", err)
	}
	if _, err := c.Get("nosuch.key"); !errors.Is(err, ErrNoKey) || !strings.Contains(err.Error(), "config.toml lists every key") {
		t.Errorf("Get(nosuch.key): %v; want ErrNoKey saying where the keys are", err)
	}
}

func TestDiff(t *testing.T) {
	a, b := Default(), Default()
	if d := Diff(a, b); len(d) != 0 {
		t.Errorf("Diff of two defaults = %q", d)
	}
	b.Log.Level = "debug"
	b.Limits.SyncPerMin = 1
	b.P2P.Listen = []string{"/ip4/127.0.0.1/tcp/0"}
	if d := Diff(a, b); !slices.Equal(d, []string{"p2p.listen", "limits.sync_per_min", "log.level"}) {
		t.Errorf("Diff = %q", d)
	}
}

// TestSet: a key set in the file is replaced in place and one left out is
// added under its table's header (or a new table); every comment and other
// line stays; the result parses to the config with just that key changed.
func TestSet(t *testing.T) {
	file := Template(nil)
	for _, tc := range []struct {
		key, value string
		check      func(*Config) bool
	}{
		{"log.level", "debug", func(c *Config) bool { return c.Log.Level == "debug" }},
		{"log.level", `"warn"`, func(c *Config) bool { return c.Log.Level == "warn" }},
		{"sync.interval", "5m", func(c *Config) bool { return c.Sync.Interval.Minutes() == 5 }},
		{"limits.sync_per_min", "1200", func(c *Config) bool { return c.Limits.SyncPerMin == 1200 }},
		{"p2p.mdns", "true", func(c *Config) bool { return c.P2P.MDNS }},
		{"p2p.listen", "/ip4/127.0.0.1/tcp/0, /ip4/127.0.0.1/udp/0/quic-v1", func(c *Config) bool {
			return slices.Equal(c.P2P.Listen, []string{"/ip4/127.0.0.1/tcp/0", "/ip4/127.0.0.1/udp/0/quic-v1"})
		}},
		{"p2p.listen", `["/ip4/127.0.0.1/tcp/1"]`, func(c *Config) bool { return slices.Equal(c.P2P.Listen, []string{"/ip4/127.0.0.1/tcp/1"}) }},
		{"network", "lab", func(c *Config) bool { return c.Network == "lab" }},
	} {
		for name, data := range map[string][]byte{
			"template": file,
			"empty":    nil,
			"partial":  []byte("# mine\n[log]\nformat = \"json\" # kept\n[p2p]\nmdns = false"),
		} {
			out, err := Set(data, tc.key, tc.value)
			if err != nil {
				t.Errorf("%s: Set(%s, %s): %v", name, tc.key, tc.value, err)
				continue
			}
			c, err := Parse(out, "out.toml")
			if err != nil || !tc.check(c) {
				t.Errorf("%s: Set(%s, %s) gave a file that parses to %v (%v):\n%s", name, tc.key, tc.value, c, err, out)
				continue
			}
			before, _ := Parse(data, "in.toml")
			if d := Diff(before, c); len(d) != 1 || d[0] != tc.key {
				t.Errorf("%s: Set(%s) changed %q", name, tc.key, d)
			}
			// Nothing else changed: setting the old value back gives the
			// file back, byte for byte, where the key was in it; where it
			// was not, the old file's lines are all in the new one, in
			// order.
			d, _ := scan(data)
			if i := slices.IndexFunc(d.values, func(v value) bool { return v.f.key == tc.key }); i >= 0 {
				old := string(data[d.values[i].start:d.values[i].end])
				if back, err := Set(out, tc.key, old); err != nil || string(back) != string(data) {
					t.Errorf("%s: Set(%s) back to %s did not give the file back (%v):\n%s", name, tc.key, old, err, back)
				}
			} else if !isSubsequence(strings.Split(string(data), "\n"), strings.Split(string(out), "\n")) {
				t.Errorf("%s: Set(%s) lost lines of the file:\n%s", name, tc.key, out)
			}
		}
	}
}

// TestSetRefuses: a bad value, a bound, an unknown key and a broken file
// are errors that name the key (a value of the wrong type with the type
// expected and an example; an unknown key once, with the nearest), and
// nothing is returned to write.
func TestSetRefuses(t *testing.T) {
	file := Template(nil)
	for _, tc := range []struct {
		data       []byte
		key, value string
		want       string
	}{
		{file, "log.level", "loud", "log.level"},
		{file, "limits.sync_per_min", "lots", "limits.sync_per_min = lots: not an integer; example (in [limits]): sync_per_min = "},
		{file, "p2p.mdns", "maybe", "p2p.mdns = maybe: not true or false; example (in [p2p]): mdns = "},
		{file, "limits.sync_per_min", "-5", "below the minimum 0"},                                                                    // a negative number is a value
		{file, "p2p.conns_low", "1000", "p2p.conns_low"},                                                                              // a rule between keys: low < high
		{file, "events.new_author_minutes", "1", `"events.new_author_minutes": no such key; did you mean limits.new_author_minutes?`}, // the key is limits'
		{file, "limits.new_author_minutes", "1441", "new_author_minutes"},                                                             // just past the bound
		{[]byte("[log\n"), "log.level", "info", "does not parse"},
	} {
		out, err := Set(tc.data, tc.key, tc.value)
		if err == nil || out != nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Set(%s, %s) = %d bytes, %v; want an error saying %q", tc.key, tc.value, len(out), err, tc.want)
		}
	}
	if _, err := Set(file, "limits.new_author_minutes", "1440"); err != nil {
		t.Errorf("limits.new_author_minutes at its bound 1440: %v", err)
	}
}

// isSubsequence reports whether every line of a is in b, in order.
func isSubsequence(a, b []string) bool {
	j := 0
	for _, l := range b {
		if j < len(a) && a[j] == l {
			j++
		}
	}
	return j == len(a)
}

// TestLookupSaysWhatThereIs: a table's name is not a key, and the error
// lists its keys (not "did you mean" the table itself); the start of a key
// suggests the keys it starts; a type error reads as one sentence, without
// a trailing kind.
func TestLookupSaysWhatThereIs(t *testing.T) {
	c := Default()
	_, err := c.Get("p2p")
	if !errors.Is(err, ErrNoKey) || !strings.Contains(err.Error(), "[p2p] is a table; its keys are p2p.listen, ") ||
		strings.Contains(err.Error(), "did you mean p2p?") {
		t.Errorf("Get(p2p): %v; want the keys of [p2p]", err)
	}
	if keys := TableKeys("blobs"); !slices.Contains(keys, "blobs.max_blob_bytes") || slices.Contains(keys, "p2p.listen") {
		t.Errorf("TableKeys(blobs) = %q", keys)
	}
	if keys := TableKeys("blobs.max_blob_bytes"); keys != nil {
		t.Errorf("TableKeys of a key = %q, want none", keys)
	}
	for key, want := range map[string]string{
		"blobs.max_blob": "did you mean blobs.max_blob_bytes?",
		"blobs.max_part": "did you mean blobs.max_partial_bytes or blobs.max_partial_age?",
		"max_blob":       "did you mean blobs.max_blob_bytes?",
		"Blobs.Max_Blob": "did you mean blobs.max_blob_bytes?",
		"log.levl":       "did you mean log.level?",
		"limits.":        ", ...?",
	} {
		if _, err := c.Get(key); !errors.Is(err, ErrNoKey) || !strings.Contains(err.Error(), want) {
			t.Errorf("Get(%s): %v; want %q", key, err, want)
		}
	}
	_, err = Set(Template(nil), "limits.sync_per_min", "lots")
	if !errors.Is(err, ErrType) || strings.HasSuffix(err.Error(), "wrong type") || !strings.HasSuffix(err.Error(), "sync_per_min = 600") {
		t.Errorf("Set(limits.sync_per_min, lots): %v; want ErrType, ending with the example", err)
	}
}

// TestSetTakesSizes: a key of bytes takes a size with a binary unit,
// written as its integer; a size that is not a whole number of bytes, an
// unknown or decimal unit, and a size past 2^53 are refused, the message
// saying that a size would do; other integer keys take no unit.
func TestSetTakesSizes(t *testing.T) {
	file := Template(nil)
	for value, want := range map[string]string{
		"100MiB":   "max_blob_bytes = 104857600",
		"100 MiB":  "max_blob_bytes = 104857600",
		"1.5GiB":   "max_blob_bytes = 1610612736",
		"4096":     "max_blob_bytes = 4096",
		"0.5 KiB":  "max_blob_bytes = 512",
		"2097152B": "max_blob_bytes = 2097152",
		"100mib":   "max_blob_bytes = 104857600",
	} {
		out, err := Set(file, "blobs.max_blob_bytes", value)
		if err != nil || !strings.Contains(string(out), "\n"+want+"\n") {
			t.Errorf("Set(blobs.max_blob_bytes, %s): %v; want %q in the file", value, err, want)
		}
	}
	if out, err := Set(file, "bandwidth.up_bytes_per_s", "8MiB"); err != nil || !strings.Contains(string(out), "up_bytes_per_s = 8388608\n") {
		t.Errorf("Set(bandwidth.up_bytes_per_s, 8MiB): %v", err)
	}
	for _, value := range []string{"100MB", "1.3B", "0.1KiB", "8192.5TiB", "MiB", "1e3MiB", "-1MiB", "100mb", "100 kb"} {
		_, err := Set(file, "blobs.max_blob_bytes", value)
		if !errors.Is(err, ErrType) || !strings.Contains(err.Error(), "not an integer (or a size such as 64MiB)") {
			t.Errorf("Set(blobs.max_blob_bytes, %s): %v; want ErrType saying a size would do", value, err)
		}
	}
	// 2^53 bytes (8192 TiB), core.MaxSafeInt, is a size; a byte more
	// is not.
	if n, ok := parseSize("8192 TiB"); !ok || n != 1<<53 {
		t.Errorf("parseSize(8192 TiB) = %d, %v; want 2^53", n, ok)
	}
	if n, ok := parseSize("9007199254740993 B"); ok {
		t.Errorf("parseSize(2^53+1 B) = %d, want refused", n)
	}
	if _, err := Set(file, "limits.sync_per_min", "1KiB"); !errors.Is(err, ErrType) || strings.Contains(err.Error(), "64MiB") {
		t.Errorf("Set(limits.sync_per_min, 1KiB): %v; want a type error without sizes", err)
	}
}
