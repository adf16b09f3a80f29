package limits

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/pelletier/go-toml/v2"

	"github.com/wats-network/wats/core"
)

func TestDefaultConfig(t *testing.T) {
	c := DefaultConfig()
	want := Config{60, 600, 120, 10, 4, true, 8, 24, 64, 1200, 30, 10, 200, 600, 6000, 1200, 600, 600, 10, 6000, 12000}
	if c != want {
		t.Fatalf("DefaultConfig() = %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for k, n := range map[core.Request]int{core.Hello: 60, core.Sync: 600, core.Replicate: 120, core.CrashReport: 10, core.Request(9): 0} {
		if c.PerMin(k) != n {
			t.Errorf("PerMin(%v) = %d", k, c.PerMin(k))
		}
	}
}

// TestValidateBounds: every field at and just past each of its bounds.
func TestValidateBounds(t *testing.T) {
	type field struct {
		key string
		set func(*Config, int)
		ok  []int
		bad []int
	}
	fields := []field{
		{"limits.hello_per_min", func(c *Config, v int) { c.HelloPerMin = v }, []int{0, 1, 60_000}, []int{-1, 60_001}},
		{"limits.sync_per_min", func(c *Config, v int) { c.SyncPerMin = v }, []int{0, 1, 60_000}, []int{-1, 60_001}},
		{"limits.replicate_per_min", func(c *Config, v int) { c.ReplicatePerMin = v }, []int{0, 1, 60_000}, []int{-1, 60_001}},
		{"limits.report_per_min", func(c *Config, v int) { c.ReportPerMin = v }, []int{0, 1, 60_000}, []int{-1, 60_001}},
		{"limits.blob_fetches_per_peer", func(c *Config, v int) { c.BlobFetchesPerPeer = v }, []int{1, 64}, []int{0, 65}},
		// base ≤ max (24 by default)
		{"limits.challenge_base_bits", func(c *Config, v int) { c.ChallengeBaseBits = v }, []int{1, 24}, []int{0, 25}},
		{"limits.challenge_max_bits", func(c *Config, v int) { c.ChallengeMaxBits = v; c.ChallengeBaseBits = 1 }, []int{1, 24}, []int{0, 25}},
		{"limits.overload_in_flight", func(c *Config, v int) { c.OverloadInFlight = v }, []int{1, 1_000_000}, []int{0, 1_000_001}},
		{"limits.solved_per_min", func(c *Config, v int) { c.SolvedPerMin = v }, []int{1, 60_000}, []int{0, 60_001}},
		{"limits.miss_per_min", func(c *Config, v int) { c.MissPerMin = v }, []int{0, 1, 60_000}, []int{-1, 60_001}},
		{"limits.suspect_percent", func(c *Config, v int) { c.SuspectPercent = v }, []int{1, 100}, []int{0, 101}},
		{"limits.valued_percent", func(c *Config, v int) { c.ValuedPercent = v }, []int{100, 1000}, []int{99, 1001}},
		{"limits.stranger_report_per_min", func(c *Config, v int) { c.StrangerReportPerMin = v }, []int{0, 1, 60_000}, []int{-1, 60_001}},
		{"limits.gossip_per_min", func(c *Config, v int) { c.GossipPerMin = v }, []int{0, 1, 60_000}, []int{-1, 60_001}},
		{"limits.stranger_gossip_per_min", func(c *Config, v int) { c.StrangerGossipPerMin = v }, []int{0, 1, 60_000}, []int{-1, 60_001}},
		{"limits.author_per_min", func(c *Config, v int) { c.AuthorPerMin = v }, []int{0, 1, 60_000}, []int{-1, 60_001}},
		{"limits.stranger_author_per_min", func(c *Config, v int) { c.StrangerAuthorPerMin = v }, []int{0, 1, 60_000}, []int{-1, 60_001}},
		{"limits.new_author_minutes", func(c *Config, v int) { c.NewAuthorMinutes = v }, []int{1, 1440}, []int{0, 1441}},
		{"limits.stranger_sync_per_min", func(c *Config, v int) { c.StrangerSyncPerMin = v }, []int{0, 1, 60_000}, []int{-1, 60_001}},
		{"limits.stranger_dht_per_min", func(c *Config, v int) { c.StrangerDHTPerMin = v }, []int{0, 1, 60_000}, []int{-1, 60_001}},
	}
	for _, f := range fields {
		for _, v := range f.ok {
			c := DefaultConfig()
			f.set(&c, v)
			if err := c.Validate(); err != nil {
				t.Errorf("%s = %d: %v", f.key, v, err)
			}
		}
		for _, v := range f.bad {
			c := DefaultConfig()
			f.set(&c, v)
			err := c.Validate()
			var ce *ConfigError
			if !errors.As(err, &ce) || !errors.Is(err, ErrInvalid) {
				t.Errorf("%s = %d: %v", f.key, v, err)
				continue
			}
			if ce.Key != f.key || ce.Value != v {
				t.Errorf("%s = %d: error about %s = %d", f.key, v, ce.Key, ce.Value)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "limits: "+f.key+" = "+strconv.Itoa(v)+": ") || !strings.Contains(msg, "allowed: ") {
				t.Errorf("%s = %d: message %q", f.key, v, msg)
			}
			// Each rate's message says its range, its unit and what 0 means.
			units := map[string]string{
				"limits.miss_per_min":            "misses a minute per peer",
				"limits.stranger_report_per_min": "crash reports a minute from all strangers together",
				"limits.gossip_per_min":          "gossip envelopes a minute per forwarding peer",
				"limits.stranger_gossip_per_min": "gossip envelopes a minute from all strangers together",
				"limits.author_per_min":          "new events a minute per author",
				"limits.stranger_author_per_min": "events a minute of all new authors together",
				"limits.stranger_sync_per_min":   "events a minute of new authors from the sync pages of all peers without standing",
				"limits.stranger_dht_per_min":    "DHT requests a minute from all strangers together",
			}
			unit, ok := units[f.key]
			if !ok {
				unit = "requests a minute per peer"
			}
			if strings.HasSuffix(f.key, "_per_min") && f.key != "limits.solved_per_min" &&
				!strings.Contains(msg, "0..60000 "+unit+", 0 means unlimited") {
				t.Errorf("%s: message %q does not say the range and what 0 means", f.key, msg)
			}
		}
	}
}

// TestValidateBaseAboveMax: base > max is an error naming both keys; each
// bits value in range.
func TestValidateBaseAboveMax(t *testing.T) {
	c := DefaultConfig()
	c.ChallengeBaseBits, c.ChallengeMaxBits = 20, 16
	err := c.Validate()
	const want = "limits: limits.challenge_base_bits = 20: above limits.challenge_max_bits (16); allowed: 1..24 leading zero bits, at most limits.challenge_max_bits"
	if err == nil || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
	c.ChallengeBaseBits, c.ChallengeMaxBits = 24, 24
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	// Out of range and above max: one error, not two.
	c.ChallengeBaseBits, c.ChallengeMaxBits = 30, 24
	if errs := unjoin(c.Validate()); len(errs) != 1 {
		t.Fatalf("%d errors: %v", len(errs), errs)
	}
}

// TestValidateJoinsAll: every bad value is reported, in field order.
func TestValidateJoinsAll(t *testing.T) {
	c := Config{HelloPerMin: -5, SyncPerMin: 70_000}
	errs := unjoin(c.Validate())
	var keys []string
	for _, e := range errs {
		keys = append(keys, e.(*ConfigError).Key)
	}
	want := "limits.hello_per_min limits.sync_per_min limits.blob_fetches_per_peer limits.challenge_base_bits " +
		"limits.challenge_max_bits limits.overload_in_flight limits.solved_per_min limits.suspect_percent limits.valued_percent limits.new_author_minutes"
	if strings.Join(keys, " ") != want {
		t.Fatalf("keys %v", keys)
	}
	const first = "limits: limits.hello_per_min = -5: below the minimum 0; allowed: 0..60000 requests a minute per peer, 0 means unlimited"
	if errs[0].Error() != first {
		t.Fatalf("got  %s\nwant %s", errs[0], first)
	}
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

// TestConfigTOML: the toml tags are ADR 0014's keys; the fields without a
// key cannot be set from the file (strict decoding calls them unknown).
func TestConfigTOML(t *testing.T) {
	const doc = `
hello_per_min = 1
sync_per_min = 2
replicate_per_min = 3
report_per_min = 4
blob_fetches_per_peer = 5
challenge = false
challenge_base_bits = 6
challenge_max_bits = 7
`
	c := DefaultConfig()
	if err := toml.NewDecoder(strings.NewReader(doc)).DisallowUnknownFields().Decode(&c); err != nil {
		t.Fatal(err)
	}
	want := Config{1, 2, 3, 4, 5, false, 6, 7, 64, 1200, 30, 10, 200, 600, 6000, 1200, 600, 600, 10, 6000, 12000}
	if c != want {
		t.Fatalf("decoded %+v", c)
	}
	for _, key := range []string{"overload_in_flight", "solved_per_min", "OverloadInFlight", "HelloPerMin"} {
		c := DefaultConfig()
		err := toml.NewDecoder(strings.NewReader(key + " = 1\n")).DisallowUnknownFields().Decode(&c)
		if err == nil || c != DefaultConfig() {
			t.Errorf("%s was accepted: %+v", key, c)
		}
	}
	out, err := toml.Marshal(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "overload") || !strings.Contains(string(out), "report_per_min = 10") {
		t.Fatalf("TOML:\n%s", out)
	}
}

// TestConfigJSON: `wats limits --json` shows every field under its key's
// name, the keyless ones included.
func TestConfigJSON(t *testing.T) {
	js, err := json.Marshal(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"hello_per_min":60,"sync_per_min":600,"replicate_per_min":120,"report_per_min":10,` +
		`"blob_fetches_per_peer":4,"challenge":true,"challenge_base_bits":8,"challenge_max_bits":24,` +
		`"overload_in_flight":64,"solved_per_min":1200,"miss_per_min":30,"suspect_percent":10,"valued_percent":200,` +
		`"stranger_report_per_min":600,"gossip_per_min":6000,"stranger_gossip_per_min":1200,` +
		`"author_per_min":600,"stranger_author_per_min":600,"new_author_minutes":10,"stranger_sync_per_min":6000,"stranger_dht_per_min":12000}`
	if string(js) != want {
		t.Fatalf("got  %s\nwant %s", js, want)
	}
}

// TestConfigRate: Rate names the key of a bad value.
func TestConfigRate(t *testing.T) {
	c := DefaultConfig()
	c.SyncPerMin = 60_001
	if _, err := c.Rate(core.Sync); err == nil || !errors.Is(err, ErrBadRate) || !strings.HasPrefix(err.Error(), "limits.sync_per_min: ") {
		t.Fatalf("Rate: %v", err)
	}
	if r, err := c.Rate(core.Hello); err != nil || r.Burst() != 15 {
		t.Fatalf("Rate(hello) = %v, %v", r, err)
	}
}
