package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wats-network/wats/blobs"
)

func addrs(n int, format string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(format, 4001+i)
	}
	return out
}

// TestValidateBounds checks each rule at its bound (valid) and just past it
// (invalid, reported on the right key with an actionable message).
func TestValidateBounds(t *testing.T) {
	const bootstrapFmt = "/ip4/203.0.113.7/tcp/%d/p2p/12D3KooWK99VoVxNE7XzyBwXEzW7xhK7Gpv85r9F3V3fyKSUKPH5"
	for _, tc := range []struct {
		name   string
		mutate func(c *Config)
		key    string // "" = valid
		value  string // the rendered bad value the message shows
	}{
		{"network 1 char", func(c *Config) { c.Network = "a" }, "", ""},
		{"network 64 chars", func(c *Config) { c.Network = strings.Repeat("a", 64) }, "", ""},
		{"network 65 chars", func(c *Config) { c.Network = strings.Repeat("a", 65) }, "network", "65 characters, more than 64"},
		{"network empty", func(c *Config) { c.Network = "" }, "network", `network = ""`},
		{"network all classes", func(c *Config) { c.Network = "a-z.0_9" }, "", ""},
		{"network upper case", func(c *Config) { c.Network = "Lab" }, "network", "use lower case"},
		{"network slash", func(c *Config) { c.Network = "a/b" }, "network", `'/' at byte 1`},
		{"network space", func(c *Config) { c.Network = "a b" }, "network", `' ' at byte 1`},

		{"listen 1", func(c *Config) { c.P2P.Listen = addrs(1, "/ip4/127.0.0.1/tcp/%d") }, "", ""},
		{"listen 16", func(c *Config) { c.P2P.Listen = addrs(16, "/ip4/127.0.0.1/tcp/%d") }, "", ""},
		{"listen 17", func(c *Config) { c.P2P.Listen = addrs(17, "/ip4/127.0.0.1/tcp/%d") }, "p2p.listen", "17 entries"},
		{"listen empty", func(c *Config) { c.P2P.Listen = nil }, "p2p.listen", "p2p.listen is empty"},
		{"listen not a multiaddr", func(c *Config) { c.P2P.Listen = []string{"/ip4/0.0.0.0/tcp/1", "0.0.0.0:4001"} },
			"p2p.listen[1]", `p2p.listen[1] = "0.0.0.0:4001": not a multiaddr`},
		{"listen bad port", func(c *Config) { c.P2P.Listen = []string{"/ip4/0.0.0.0/tcp/70000"} },
			"p2p.listen[0]", "not a multiaddr"},

		{"bootstrap 0", func(c *Config) { c.P2P.Bootstrap = nil }, "", ""},
		{"bootstrap 64", func(c *Config) { c.P2P.Bootstrap = addrs(64, bootstrapFmt) }, "", ""},
		{"bootstrap 65", func(c *Config) { c.P2P.Bootstrap = addrs(65, bootstrapFmt) }, "p2p.bootstrap", "65 entries"},
		{"bootstrap dns", func(c *Config) {
			c.P2P.Bootstrap = []string{"/dns4/boot.example/udp/4001/quic-v1/p2p/12D3KooWK99VoVxNE7XzyBwXEzW7xhK7Gpv85r9F3V3fyKSUKPH5"}
		}, "", ""},
		{"bootstrap without /p2p/", func(c *Config) { c.P2P.Bootstrap = []string{"/ip4/203.0.113.7/tcp/4001"} },
			"p2p.bootstrap[0]", "does not end in /p2p/<peer id>"},
		{"bootstrap /p2p/ not last", func(c *Config) {
			c.P2P.Bootstrap = []string{"/ip4/203.0.113.7/tcp/4001/p2p/12D3KooWK99VoVxNE7XzyBwXEzW7xhK7Gpv85r9F3V3fyKSUKPH5/p2p-circuit"}
		}, "p2p.bootstrap[0]", "does not end in /p2p/<peer id>"},
		{"bootstrap only a peer id", func(c *Config) {
			c.P2P.Bootstrap = []string{"/p2p/12D3KooWK99VoVxNE7XzyBwXEzW7xhK7Gpv85r9F3V3fyKSUKPH5"}
		}, "p2p.bootstrap[0]", "has no address before /p2p/"},
		{"bootstrap bad peer id", func(c *Config) { c.P2P.Bootstrap = []string{"/ip4/203.0.113.7/tcp/4001/p2p/nope"} },
			"p2p.bootstrap[0]", "not a multiaddr"},

		{"relays 16", func(c *Config) { c.P2P.Relays = addrs(16, bootstrapFmt) }, "", ""},
		{"relays 17", func(c *Config) { c.P2P.Relays = addrs(17, bootstrapFmt) }, "p2p.relays", "17 entries"},
		{"relay without /p2p/", func(c *Config) { c.P2P.Relays = []string{"/ip4/203.0.113.7/tcp/4001"} },
			"p2p.relays[0]", "does not end in /p2p/<peer id>"},
		{"dht server", func(c *Config) { c.P2P.DHT = DHTServer }, "", ""},
		{"dht off", func(c *Config) { c.P2P.DHT = DHTOff }, "", ""},
		{"dht unknown", func(c *Config) { c.P2P.DHT = "Server" }, "p2p.dht", "not one of auto, server, client, off"},

		{"conns_low 1", func(c *Config) { c.P2P.ConnsLow = 1 }, "", ""},
		{"conns_low 0", func(c *Config) { c.P2P.ConnsLow = 0 }, "p2p.conns_low", "p2p.conns_low = 0: below the minimum 1"},
		{"conns_low high-1", func(c *Config) { c.P2P.ConnsLow = 95 }, "", ""},
		{"conns_low == high", func(c *Config) { c.P2P.ConnsLow = 96 }, "p2p.conns_low", "p2p.conns_low = 96: must be below p2p.conns_high (96)"},
		{"conns_high 10000", func(c *Config) { c.P2P.ConnsHigh, c.P2P.MaxConns = 10_000, 10_000 }, "", ""},
		{"conns_high 10001", func(c *Config) { c.P2P.ConnsHigh, c.P2P.MaxConns = 10_001, 10_001 }, "p2p.conns_high", "p2p.conns_high = 10001: above the maximum 10000"},
		{"conns_grace 0", func(c *Config) { c.P2P.ConnsGrace.Duration = 0 }, "", ""},
		{"conns_grace negative", func(c *Config) { c.P2P.ConnsGrace.Duration = -time.Nanosecond }, "p2p.conns_grace", `shorter than the minimum "0s"`},
		{"conns_grace 1h", func(c *Config) { c.P2P.ConnsGrace.Duration = time.Hour }, "", ""},
		{"conns_grace 1h+1ns", func(c *Config) { c.P2P.ConnsGrace.Duration = time.Hour + time.Nanosecond }, "p2p.conns_grace", `longer than the maximum "1h"`},
		{"max_conns == conns_high", func(c *Config) { c.P2P.MaxConns = 96 }, "", ""},
		{"max_conns < conns_high", func(c *Config) { c.P2P.MaxConns = 95 }, "p2p.max_conns", "p2p.max_conns = 95: must be at least p2p.conns_high (96)"},
		{"conns_high > max_conns", func(c *Config) { c.P2P.ConnsHigh = 257 }, "p2p.max_conns", "p2p.max_conns = 256: must be at least p2p.conns_high (257)"},
		{"max_conns 100000", func(c *Config) { c.P2P.MaxConns = 100_000 }, "", ""},
		{"max_conns 100001", func(c *Config) { c.P2P.MaxConns = 100_001 }, "p2p.max_conns", "above the maximum 100000"},
		{"max_streams 16", func(c *Config) { c.P2P.MaxStreams = 16 }, "", ""},
		{"max_streams 15", func(c *Config) { c.P2P.MaxStreams = 15 }, "p2p.max_streams", "p2p.max_streams = 15: below the minimum 16"},
		{"max_streams 1000000", func(c *Config) { c.P2P.MaxStreams = 1_000_000 }, "", ""},
		{"max_streams 1000001", func(c *Config) { c.P2P.MaxStreams = 1_000_001 }, "p2p.max_streams", "above the maximum 1000000"},
		{"max_memory_mib 64", func(c *Config) { c.P2P.MaxMemoryMiB = 64 }, "", ""},
		{"max_memory_mib 63", func(c *Config) { c.P2P.MaxMemoryMiB = 63 }, "p2p.max_memory_mib", "below the minimum 64"},
		{"max_memory_mib 65536", func(c *Config) { c.P2P.MaxMemoryMiB = 65_536 }, "", ""},
		{"max_memory_mib 65537", func(c *Config) { c.P2P.MaxMemoryMiB = 65_537 }, "p2p.max_memory_mib", "above the maximum 65536"},

		{"interval 1s", func(c *Config) { c.Sync.Interval.Duration = time.Second }, "", ""},
		{"interval 999ms", func(c *Config) { c.Sync.Interval.Duration = 999 * time.Millisecond }, "sync.interval", `sync.interval = "999ms": shorter than the minimum "1s"`},
		{"interval 24h", func(c *Config) { c.Sync.Interval.Duration = 24 * time.Hour }, "", ""},
		{"interval 24h+1ns", func(c *Config) { c.Sync.Interval.Duration = 24*time.Hour + time.Nanosecond }, "sync.interval", `longer than the maximum "24h"`},

		{"metrics off", func(c *Config) { c.API.MetricsAddr = "" }, "", ""},
		{"metrics 127.0.0.1", func(c *Config) { c.API.MetricsAddr = "127.0.0.1:9464" }, "", ""},
		{"metrics 127.0.0.2", func(c *Config) { c.API.MetricsAddr = "127.0.0.2:9464" }, "", ""},
		{"metrics ::1", func(c *Config) { c.API.MetricsAddr = "[::1]:9464" }, "", ""},
		{"metrics localhost", func(c *Config) { c.API.MetricsAddr = "localhost:9464" }, "", ""},
		{"metrics port 1", func(c *Config) { c.API.MetricsAddr = "127.0.0.1:1" }, "", ""},
		{"metrics port 65535", func(c *Config) { c.API.MetricsAddr = "127.0.0.1:65535" }, "", ""},
		{"metrics port 0", func(c *Config) { c.API.MetricsAddr = "127.0.0.1:0" }, "api.metrics_addr", `port "0" is not a number from 1 to 65535`},
		{"metrics port 65536", func(c *Config) { c.API.MetricsAddr = "127.0.0.1:65536" }, "api.metrics_addr", "not a number from 1 to 65535"},
		{"metrics port name", func(c *Config) { c.API.MetricsAddr = "127.0.0.1:http" }, "api.metrics_addr", "not a number"},
		{"metrics any", func(c *Config) { c.API.MetricsAddr = "0.0.0.0:9464" }, "api.metrics_addr", `host "0.0.0.0" is not a loopback address`},
		{"metrics empty host", func(c *Config) { c.API.MetricsAddr = ":9464" }, "api.metrics_addr", `host "" is not a loopback address`},
		{"metrics lan", func(c *Config) { c.API.MetricsAddr = "192.168.1.10:9464" }, "api.metrics_addr", "not a loopback address"},
		{"metrics ipv6 any", func(c *Config) { c.API.MetricsAddr = "[::]:9464" }, "api.metrics_addr", "not a loopback address"},
		{"metrics name", func(c *Config) { c.API.MetricsAddr = "metrics.example:9464" }, "api.metrics_addr", "not a loopback address"},
		{"metrics no port", func(c *Config) { c.API.MetricsAddr = "127.0.0.1" }, "api.metrics_addr", "not a host:port"},
		{"dashboard off", func(c *Config) { c.API.DashboardAddr = "" }, "", ""},
		{"dashboard port 0", func(c *Config) { c.API.DashboardAddr = "127.0.0.1:0" }, "", ""},
		{"dashboard port 65535", func(c *Config) { c.API.DashboardAddr = "[::1]:65535" }, "", ""},
		{"dashboard port 65536", func(c *Config) { c.API.DashboardAddr = "127.0.0.1:65536" }, "api.dashboard_addr", `port "65536" is not a number from 0 to 65535`},
		{"dashboard port -1", func(c *Config) { c.API.DashboardAddr = "127.0.0.1:-1" }, "api.dashboard_addr", "not a number from 0"},
		{"dashboard any", func(c *Config) { c.API.DashboardAddr = "0.0.0.0:5180" }, "api.dashboard_addr", `host "0.0.0.0" is not a loopback address; the dashboard stays off`},
		{"dashboard lan", func(c *Config) { c.API.DashboardAddr = "192.168.1.10:5180" }, "api.dashboard_addr", "not a loopback address"},

		{"serve all", func(c *Config) { c.Blobs.Serve = "all" }, "", ""},
		{"serve none", func(c *Config) { c.Blobs.Serve = "none" }, "blobs.serve", `blobs.serve = "none": not one of the allowed values`},
		{"serve empty", func(c *Config) { c.Blobs.Serve = "" }, "blobs.serve", "not one of"},
		{"auto_fetch off", func(c *Config) { c.Blobs.AutoFetch = false }, "", ""},

		{"level debug", func(c *Config) { c.Log.Level = "debug" }, "", ""},
		{"level warn", func(c *Config) { c.Log.Level = "warn" }, "", ""},
		{"level error", func(c *Config) { c.Log.Level = "error" }, "", ""},
		{"level verbose", func(c *Config) { c.Log.Level = "verbose" }, "log.level", `log.level = "verbose": not one of the allowed values`},
		{"level upper", func(c *Config) { c.Log.Level = "INFO" }, "log.level", "not one of"},
		{"format json", func(c *Config) { c.Log.Format = "json" }, "", ""},
		{"format yaml", func(c *Config) { c.Log.Format = "yaml" }, "log.format", "not one of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.mutate(c)
			err := c.Validate()
			if tc.key == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Validate() = %v, want ErrInvalid", err)
			}
			ps := problemsOf(t, err)
			if len(ps) != 1 {
				t.Fatalf("got %d problems, want 1: %v", len(ps), err)
			}
			p := ps[0]
			if p.Key != tc.key {
				t.Errorf("problem on key %q, want %q: %v", p.Key, tc.key, err)
			}
			msg := err.Error()
			base, _, _ := strings.Cut(tc.key, "[")
			for _, want := range []string{"config: " + tc.key, tc.value, "; allowed: " + keyDocs[base].allowed, "; example"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not contain %q", msg, want)
				}
			}
		})
	}
}

func TestValidateReportsAllProblems(t *testing.T) {
	c := Default()
	c.Network = ""
	c.P2P.Listen = []string{"a", "b"}
	c.Sync.Interval.Duration = 0
	c.Log.Format = "xml"
	ps := problemsOf(t, c.Validate())
	var keys []string
	for _, p := range ps {
		keys = append(keys, p.Key)
	}
	if got, want := strings.Join(keys, " "), "network p2p.listen[0] p2p.listen[1] sync.interval log.format"; got != want {
		t.Fatalf("problems on %q, want %q", got, want)
	}
}

// TestLimitsTable: the [limits] table of ADR 0014 decodes into the limits
// package's Config, and each out-of-range value is an error naming its key,
// with the file, line and allowed range.
func TestLimitsTable(t *testing.T) {
	c, err := Parse([]byte("[limits]\nsync_per_min = 0\nhello_per_min = 60000\nblob_fetches_per_peer = 64\n"), "c.toml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Limits.SyncPerMin != 0 || c.Limits.HelloPerMin != 60000 || c.Limits.BlobFetchesPerPeer != 64 || c.Limits.ReportPerMin != 10 {
		t.Fatalf("limits %+v", c.Limits)
	}
	for _, tc := range []struct{ file, key, want string }{
		{"[limits]\nsync_per_min = 60001\n", "limits.sync_per_min", "c.toml:2:"},
		{"[limits]\nreport_per_min = -1\n", "limits.report_per_min", "c.toml:2:"},
		{"[limits]\nblob_fetches_per_peer = 0\n", "limits.blob_fetches_per_peer", "c.toml:2:"},
		{"[limits]\nblob_fetches_per_peer = 65\n", "limits.blob_fetches_per_peer", "c.toml:2:"},
		{"[limits]\nchallenge_base_bits = 25\n", "limits.challenge_base_bits", "c.toml:2:"},
		{"[limits]\nchallenge_base_bits = 20\nchallenge_max_bits = 10\n", "limits.challenge", "c.toml:"},
		{"[limits]\noverload_in_flight = 5\n", "overload_in_flight", "unknown key"},
	} {
		_, err := Parse([]byte(tc.file), "c.toml")
		if err == nil || !strings.Contains(err.Error(), tc.key) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v; want an error naming %s with %q", tc.file, err, tc.key, tc.want)
		}
	}
}

func TestPeerCacheMaxPeers(t *testing.T) {
	for v, ok := range map[string]bool{"1": true, "1000000": true, "0": false, "1000001": false, "-5": false} {
		_, err := Parse([]byte("[peercache]\nmax_peers = "+v+"\n"), "c.toml")
		if ok != (err == nil) {
			t.Errorf("max_peers = %s: %v", v, err)
		}
		if err != nil && !strings.Contains(err.Error(), "peercache.max_peers") {
			t.Errorf("max_peers = %s: error %q does not name the key", v, err)
		}
	}
}

func TestBlobsTable(t *testing.T) {
	for file, ok := range map[string]bool{
		"[blobs]\nmax_blob_bytes = 1\nquota_bytes = 1\n":                               true,
		"[blobs]\nmax_blob_bytes = 9007199254740992\nquota_bytes = 9007199254740992\n": true,
		"[blobs]\nmax_blob_bytes = 0\n":                                                false,
		"[blobs]\nmax_blob_bytes = 9007199254740993\n":                                 false,
		"[blobs]\nmax_blob_bytes = 100\nquota_bytes = 99\n":                            false,
		"[blobs]\nquota_bytes = 9007199254740993\n":                                    false,
		"[blobs]\nmax_partial_bytes = 0\n":                                             true,
		"[blobs]\nmax_partial_bytes = 9007199254740992\n":                              true,
		"[blobs]\nmax_partial_bytes = 9007199254740993\n":                              false,
		"[blobs]\nmax_partial_bytes = -1\n":                                            false,
		"[blobs]\nmax_partial_age = \"0s\"\n":                                          true,
		"[blobs]\nmax_partial_age = \"8760h\"\n":                                       true,
		"[blobs]\nmax_partial_age = \"8760h0m0.001s\"\n":                               false,
		"[blobs]\nmax_partial_age = \"-1s\"\n":                                         false,
	} {
		_, err := Parse([]byte(file), "c.toml")
		if ok != (err == nil) {
			t.Errorf("%q: %v", file, err)
		}
		if err != nil && !strings.Contains(err.Error(), "blobs.") {
			t.Errorf("%q: error %q does not name the key", file, err)
		}
	}
}

// TestBandwidthTable: the caps at and just past each bound; 0 is
// unlimited, a negative value an error that names the key.
// TestPartialBounds: blobs.max_partial_bytes and max_partial_age as the
// blob store takes them, a 0 of either meaning none kept and no age bound
// (-1 there, where 0 is the default); the defaults are blobs'.
func TestPartialBounds(t *testing.T) {
	d := Default()
	if b, a := d.Blobs.PartialBounds(); b != blobs.DefaultMaxPartialBytes || a != blobs.DefaultMaxPartialAge {
		t.Fatalf("default partial bounds %d, %v", b, a)
	}
	if b, a := (BlobsConfig{}).PartialBounds(); b != -1 || a != -1 {
		t.Fatalf("partial bounds of 0: %d, %v; want -1, -1", b, a)
	}
}

func TestBandwidthTable(t *testing.T) {
	for file, want := range map[string]string{
		"[bandwidth]\nup_bytes_per_s = 0\ndown_bytes_per_s = 0\nmonthly_up_bytes = 0\n":               "",
		"[bandwidth]\nup_bytes_per_s = 16384\ndown_bytes_per_s = 16384\nmonthly_up_bytes = 1048576\n": "",
		"[bandwidth]\nup_bytes_per_s = 1099511627776\ndown_bytes_per_s = 1099511627776\n":             "",
		"[bandwidth]\nmonthly_up_bytes = 9007199254740992\n":                                          "",
		"[bandwidth]\nup_bytes_per_s = 16383\n":                                                       "bandwidth.up_bytes_per_s",
		"[bandwidth]\nup_bytes_per_s = 1099511627777\n":                                               "bandwidth.up_bytes_per_s",
		"[bandwidth]\nup_bytes_per_s = -1\n":                                                          "bandwidth.up_bytes_per_s",
		"[bandwidth]\ndown_bytes_per_s = 16383\n":                                                     "bandwidth.down_bytes_per_s",
		"[bandwidth]\ndown_bytes_per_s = 1099511627777\n":                                             "bandwidth.down_bytes_per_s",
		"[bandwidth]\ndown_bytes_per_s = -8388608\n":                                                  "bandwidth.down_bytes_per_s",
		"[bandwidth]\nmonthly_up_bytes = 1048575\n":                                                   "bandwidth.monthly_up_bytes",
		"[bandwidth]\nmonthly_up_bytes = 9007199254740993\n":                                          "bandwidth.monthly_up_bytes",
		"[bandwidth]\nmonthly_up_bytes = -1\n":                                                        "bandwidth.monthly_up_bytes",
	} {
		_, err := Parse([]byte(file), "c.toml")
		if (want == "") != (err == nil) {
			t.Errorf("%q: %v", file, err)
		}
		if err != nil && (!strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "example")) {
			t.Errorf("%q: error %q does not name %s with an example", file, err, want)
		}
	}
	if d := Default().Bandwidth; d != (BandwidthConfig{}) {
		t.Errorf("the default caps are %+v, want none", d)
	}
}

// TestEventsTable: the log's quotas at and just past each bound; 0 is
// unlimited, and an author's quota is at most the log's.
func TestEventsTable(t *testing.T) {
	for file, want := range map[string]string{
		"[events]\nmax_events = 0\nmax_events_per_author = 0\nmax_bytes = 0\nmax_bytes_per_author = 0\n": "",
		"[events]\nmax_events = 1099511627776\nmax_events_per_author = 1099511627776\n":                  "",
		"[events]\nmax_events = 1099511627777\n":                                                         "events.max_events",
		"[events]\nmax_events = -1\n":                                                                    "events.max_events",
		"[events]\nmax_events = 10\nmax_events_per_author = 10\n":                                        "",
		"[events]\nmax_events = 10\nmax_events_per_author = 11\n":                                        "events.max_events_per_author",
		"[events]\nmax_events = 10\nmax_events_per_author = 0\n":                                         "events.max_events_per_author",
		"[events]\nmax_bytes = 65536\nmax_bytes_per_author = 65536\n":                                    "",
		"[events]\nmax_bytes = 65535\n":                                                                  "events.max_bytes",
		"[events]\nmax_bytes = 9007199254740993\nmax_bytes_per_author = 0\n":                             "events.max_bytes",
		"[events]\nmax_bytes = 65536\nmax_bytes_per_author = 65537\n":                                    "events.max_bytes_per_author",
		"[events]\nmax_bytes_per_author = 65535\n":                                                       "events.max_bytes_per_author",
	} {
		_, err := Parse([]byte(file), "c.toml")
		if (want == "") != (err == nil) {
			t.Errorf("%q: %v", file, err)
		}
		if err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %q does not name %s", file, err, want)
		}
	}
}
