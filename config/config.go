package config

import (
	"fmt"
	"time"

	"github.com/wats-network/wats/blobs"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/peercache"
)

// DefaultPort is the TCP and UDP (QUIC) port of the default p2p.listen:
// 9287, WATS on a phone keypad. It is the node's own, so that a wats node
// and a kubo node (4001) run side by side on their defaults.
const DefaultPort = 9287

// Bounds of the configuration. Config files are written by the operator, not
// by peers, but a typo must not turn into an unbounded resource: each bound
// says why it exists.
const (
	// MaxNetworkLen is the longest network name, in bytes. The name travels
	// in every hello and in the gossip topic /wats/events/1/<network>; 64
	// bytes keep both short.
	MaxNetworkLen = 64

	// MaxListenAddrs is the most entries of p2p.listen. docs/design.md §4: hello
	// carries at most 16 listen multiaddrs, so a node never listens on more
	// addresses than it can advertise.
	MaxListenAddrs = 16

	// MaxBootstrapPeers is the most entries of p2p.bootstrap. The node dials
	// all of them at start; 64 is plenty to join a network and bounds that
	// burst.
	MaxBootstrapPeers = 64

	// MaxRelays is the most entries of p2p.relays: AutoRelay keeps a few
	// reservations at once (docs/adr/0040), so a handful of candidates is
	// plenty; 16 bounds what the node dials for them.
	MaxRelays = 16

	// MaxConnsHigh is the largest p2p.conns_high: the connection manager's
	// high water mark. A node of this design is not built to keep more than
	// 10,000 connections.
	MaxConnsHigh = 10_000

	// MaxMaxConns is the largest p2p.max_conns, the resource manager's
	// system-wide connection limit: ten times MaxConnsHigh, far beyond what
	// the file descriptors of a usual host allow.
	MaxMaxConns = 100_000

	// MinMaxStreams and MaxMaxStreams bound p2p.max_streams, the resource
	// manager's system-wide stream limit. Below 16 the node cannot hold the
	// streams of hello, sync, gossip and bitswap with a handful of peers;
	// above 1,000,000 the limit no longer limits anything.
	MinMaxStreams = 16
	MaxMaxStreams = 1_000_000

	// MinMemoryMiB and MaxMemoryMiB bound p2p.max_memory_mib, the resource
	// manager's memory limit in MiB: below 64 MiB a single 8 MiB sync
	// response (docs/design.md §4) leaves little room for anything else; 64 GiB is
	// more than any node of this design needs.
	MinMemoryMiB = 64
	MaxMemoryMiB = 65_536

	// MaxConnsGrace is the longest p2p.conns_grace. A grace period protects
	// new connections from trimming; one longer than an hour would let a
	// churn of new connections keep the node above its high water.
	MaxConnsGrace = time.Hour

	// MinSyncInterval and MaxSyncInterval bound sync.interval: more often
	// than once a second would spend the peer's sync budget (ADR 0014:
	// limits.sync_per_min) on empty pages; less often than once a day is no
	// longer "keeping up".
	MinSyncInterval = time.Second
	MaxSyncInterval = 24 * time.Hour

	// MaxLogEvents bounds events.max_events and
	// events.max_events_per_author: 2^40 events, far beyond any disk.
	MaxLogEvents = 1 << 40

	// MinLogBytes is the smallest non-zero events.max_bytes and
	// events.max_bytes_per_author: one event of the largest size
	// (eventlog.MaxEventBytes), so that a quota never refuses every event.
	MinLogBytes = 64 << 10

	// MaxPeerCache is the largest peercache.max_peers, the peer cache's
	// own bound (peercache.MaxMaxPeers): every record is held in memory.
	MaxPeerCache = peercache.MaxMaxPeers

	// MaxFileSize is the largest config.toml that Load reads, in bytes. A
	// config file is a few KiB; the cap keeps a wrong path (a device, a
	// database) from being read into memory.
	MaxFileSize = 1 << 20

	// MaxKeys is the most keys and table headers a config.toml may hold,
	// the keys of inline tables included. A config file has a few dozen;
	// go-toml's check for keys defined twice takes time quadratic in the
	// keys of a table (a MaxFileSize file of short keys takes it some 20
	// seconds), and a file of thousands of keys is not a config file.
	MaxKeys = 1000
)

// Config is the node's configuration, <repo>/config.toml (docs/design.md §11).
//
// The zero value is not a valid configuration; start from Default, or from
// Parse/Load, which start from Default so that keys omitted from the file
// keep their defaults. Each field documents its key, unit, range and
// default; Validate enforces the ranges.
type Config struct {
	// Network names the network (key `network`, default "wats-dev"):
	// 1..MaxNetworkLen bytes of [a-z0-9._-]. docs/design.md §3: hello carries it
	// and peers of another network are dropped; the gossip topic is
	// /wats/events/1/<network>.
	Network string `toml:"network"`

	P2P  P2PConfig  `toml:"p2p"`
	Sync SyncConfig `toml:"sync"`
	// Limits are ADR 0014's per-peer rate limits and the challenge's
	// settings (table [limits]); see package limits for each field.
	Limits    limits.Config   `toml:"limits"`
	PeerCache PeerCacheConfig `toml:"peercache"`
	Blobs     BlobsConfig     `toml:"blobs"`
	Events    EventsConfig    `toml:"events"`
	Bandwidth BandwidthConfig `toml:"bandwidth"`
	API       APIConfig       `toml:"api"`
	Log       LogConfig       `toml:"log"`
}

// P2PConfig is the table [p2p]: the libp2p host, its addresses and the hard
// bounds of libp2p's connection manager and resource manager. docs/design.md §3:
// the per-peer rate limits of ADR 0014 (the table [limits]) supplement
// these bounds; they do not replace them.
type P2PConfig struct {
	// Listen (key `p2p.listen`) lists the multiaddrs to listen on:
	// 1..MaxListenAddrs valid multiaddrs. Default
	// ["/ip4/0.0.0.0/tcp/9287", "/ip4/0.0.0.0/udp/9287/quic-v1"]: DefaultPort.
	Listen []string `toml:"listen"`

	// Bootstrap (key `p2p.bootstrap`) lists peers dialled at start, each a
	// multiaddr with an address and a final /p2p/<peer id>:
	// 0..MaxBootstrapPeers entries. Default: none.
	Bootstrap []string `toml:"bootstrap"`

	// MDNS (key `p2p.mdns`) turns on mDNS discovery on the local network.
	// Default false.
	MDNS bool `toml:"mdns"`

	// DHT (key `p2p.dht`) is the mode of the network's Kademlia DHT
	// (docs/adr/0040): DHTAuto (server when AutoNAT finds the node
	// publicly reachable, client otherwise), DHTServer, DHTClient or DHTOff
	// (no peer routing, discovery or content routing beyond gossip's
	// hints). Default DHTAuto.
	DHT string `toml:"dht"`

	// Relays (key `p2p.relays`) lists circuit relay v2 relays, each a full
	// multiaddr, that AutoRelay tries before the relays it finds through
	// the DHT, when the node is not publicly reachable: 0..MaxRelays
	// entries. Default: none.
	Relays []string `toml:"relays"`

	// RelayService (key `p2p.relay_service`) serves as a circuit relay v2
	// relay for other peers of the network, within the limits of
	// docs/adr/0040, from the start: the operator declares the node
	// publicly reachable. Default false.
	RelayService bool `toml:"relay_service"`

	// NATPortMap (key `p2p.nat_port_map`) asks the home router for a port
	// mapping with UPnP or NAT-PMP. Default false.
	NATPortMap bool `toml:"nat_port_map"`

	// ConnsLow (key `p2p.conns_low`) is the connection manager's low water
	// mark, in connections: trimming stops there. Default 32;
	// 1 <= ConnsLow < ConnsHigh.
	ConnsLow int `toml:"conns_low"`

	// ConnsHigh (key `p2p.conns_high`) is the connection manager's high
	// water mark, in connections: above it the node trims down to ConnsLow.
	// Default 96; ConnsLow < ConnsHigh <= MaxConnsHigh and
	// ConnsHigh <= MaxConns.
	ConnsHigh int `toml:"conns_high"`

	// ConnsGrace (key `p2p.conns_grace`) is how long a new connection is
	// safe from trimming. Default 30s; 0..MaxConnsGrace.
	ConnsGrace Duration `toml:"conns_grace"`

	// MaxConns (key `p2p.max_conns`) is the resource manager's system-wide
	// limit on connections, inbound and outbound together. Default 256;
	// ConnsHigh..MaxMaxConns.
	MaxConns int `toml:"max_conns"`

	// MaxStreams (key `p2p.max_streams`) is the resource manager's
	// system-wide limit on streams. Default 4096;
	// MinMaxStreams..MaxMaxStreams.
	MaxStreams int `toml:"max_streams"`

	// MaxMemoryMiB (key `p2p.max_memory_mib`) is the memory of peers'
	// connections and streams, in MiB: fifteen sixteenths the resource
	// manager's limit, a sixteenth the sync page pool (ADR 0030). A bound
	// on the worst case, not what the daemon uses. Default 2048;
	// MinMemoryMiB..MaxMemoryMiB.
	MaxMemoryMiB int `toml:"max_memory_mib"`
}

// Modes of p2p.dht (docs/adr/0040).
const (
	// DHTAuto: a DHT server once AutoNAT finds the node publicly
	// reachable, a client before and otherwise.
	DHTAuto = "auto"
	// DHTServer: always a DHT server (bootstrap nodes, nodes on public
	// addresses, and nodes of a network on one machine or LAN, which
	// AutoNAT never finds public).
	DHTServer = "server"
	// DHTClient: queries the DHT, never answers: never in other nodes'
	// routing tables.
	DHTClient = "client"
	// DHTOff: no DHT at all.
	DHTOff = "off"
)

// DHTModes are the values of p2p.dht, in the order help lists them.
var DHTModes = []string{DHTAuto, DHTServer, DHTClient, DHTOff}

// SyncConfig is the table [sync]: how the node keeps up with the event logs
// of its peers (docs/design.md §4 `sync`, §6 gossip).
type SyncConfig struct {
	// Interval (key `sync.interval`) is how often the node syncs from each
	// connected peer. Default 30s; MinSyncInterval..MaxSyncInterval.
	Interval Duration `toml:"interval"`

	// Gossip (key `sync.gossip`) joins the gossipsub topic
	// /wats/events/1/<network>; false means sync only. Default true.
	Gossip bool `toml:"gossip"`
}

// PeerCacheConfig is the table [peercache]: the persisted records of the
// peers the node has met (docs/design.md §8).
type PeerCacheConfig struct {
	// MaxPeers (key `peercache.max_peers`) is the most peer records kept;
	// past it the least valuable are evicted (ADR 0030). 1..MaxPeerCache.
	// Default 10,000.
	MaxPeers int `toml:"max_peers"`
}

// BlobsConfig is the table [blobs]: the node's blob store (docs/design.md §9).
type BlobsConfig struct {
	// MaxBlobBytes (key `blobs.max_blob_bytes`) is the largest blob the node
	// stores, in bytes: 1..core.MaxSafeInt. Default 64 MiB.
	MaxBlobBytes int64 `toml:"max_blob_bytes"`
	// QuotaBytes (key `blobs.quota_bytes`) bounds the bytes of all stored
	// blobs together: MaxBlobBytes..core.MaxSafeInt. Default 4 GiB.
	QuotaBytes int64 `toml:"quota_bytes"`
	// Serve (key `blobs.serve`) says to whom the node serves the blocks
	// of its complete blobs over bitswap: "peers", the peers that
	// completed hello, or "all", any peer that asks (ADR 0029).
	// Default "peers".
	Serve string `toml:"serve"`
	// AutoFetch (key `blobs.auto_fetch`) fetches the blobs of events that
	// arrive by gossip or sync, within max_blob_bytes and quota_bytes.
	// Default true.
	AutoFetch bool `toml:"auto_fetch"`
	// MaxPartialBytes (key `blobs.max_partial_bytes`) bounds the bytes of
	// the partial blobs kept while no fetch runs for them, what fetches
	// that did not complete verified, for the next fetch to go on from
	// (ADR 0054); past it the least recently progressed are dropped.
	// 0..core.MaxSafeInt, 0 keeping none. Not counted by quota_bytes.
	// Default 1 GiB.
	MaxPartialBytes int64 `toml:"max_partial_bytes"`
	// MaxPartialAge (key `blobs.max_partial_age`): a partial blob to which
	// no leaf was added for longer is dropped (ADR 0054). 0 (no age
	// bound)..MaxPartialAge. Default 168h (7 days).
	MaxPartialAge Duration `toml:"max_partial_age"`
}

// MaxPartialAge bounds blobs.max_partial_age: a year.
const MaxPartialAge = 365 * 24 * time.Hour

// PartialBounds returns blobs.max_partial_bytes and blobs.max_partial_age
// as blobs.StoreOptions takes them: a 0 of either (none kept, no age
// bound) as -1, since 0 there means the default.
func (b BlobsConfig) PartialBounds() (maxBytes int64, maxAge time.Duration) {
	maxBytes, maxAge = b.MaxPartialBytes, b.MaxPartialAge.Duration
	if maxBytes == 0 {
		maxBytes = -1
	}
	if maxAge == 0 {
		maxAge = -1
	}
	return maxBytes, maxAge
}

// EventsConfig is the table [events]: the quotas of the event log (ADR
// 0031). Every key counts what the log holds, as its events' JSON; 0 means
// unlimited. What happens when one is reached (events.* in ADR 0031):
// nothing stored is ever dropped; an author at its quota gets no more of
// its events stored, unless it is a valued peer; past 90% of a total, no
// event of an author new to the log is stored; at a total, none but this
// node's own. This node's own events (events add, crash reports it
// makes) are held to none of them.
type EventsConfig struct {
	// MaxEvents (key `events.max_events`) bounds the events of the log:
	// 0..MaxLogEvents, 0 unlimited. Default 10,000,000.
	MaxEvents int64 `toml:"max_events"`
	// MaxBytes (key `events.max_bytes`) bounds the bytes of the log's
	// events: 0 or MinLogBytes..core.MaxSafeInt. Default 4 GiB.
	MaxBytes int64 `toml:"max_bytes"`
	// MaxEventsPerAuthor (key `events.max_events_per_author`) bounds one
	// author's events: 0..MaxLogEvents, at most max_events. Default
	// 100,000.
	MaxEventsPerAuthor int64 `toml:"max_events_per_author"`
	// MaxBytesPerAuthor (key `events.max_bytes_per_author`) bounds one
	// author's bytes: 0 or MinLogBytes..core.MaxSafeInt, at most max_bytes.
	// Default 256 MiB.
	MaxBytesPerAuthor int64 `toml:"max_bytes_per_author"`
}

// BandwidthConfig is the table [bandwidth]: caps on the traffic of all
// the node's libp2p streams (blobs, sync, gossip, the DHT), peers with
// standing served first within them (docs/adr/0048). 0 means unlimited,
// as ADR 0014 writes it.
type BandwidthConfig struct {
	// UpBytesPerS (key `bandwidth.up_bytes_per_s`) caps the bytes a second
	// sent: 0 (unlimited) or bandwidth.MinBytesPerS..bandwidth.MaxBytesPerS.
	// Default 0.
	UpBytesPerS int64 `toml:"up_bytes_per_s"`
	// DownBytesPerS (key `bandwidth.down_bytes_per_s`) caps the bytes a
	// second received, likewise. Default 0.
	DownBytesPerS int64 `toml:"down_bytes_per_s"`
	// MonthlyUpBytes (key `bandwidth.monthly_up_bytes`): once the bytes
	// sent this calendar month (UTC) reach it, blobs are served only to
	// peers with standing until the month ends: 0 (none) or
	// MinMonthlyUpBytes..core.MaxSafeInt. Default 0.
	MonthlyUpBytes int64 `toml:"monthly_up_bytes"`
}

// MinMonthlyUpBytes is the smallest non-zero bandwidth.monthly_up_bytes
// (1 MiB): less is spent by hellos and gossip alone.
const MinMonthlyUpBytes = 1 << 20

// Values of blobs.serve.
const (
	ServePeers = "peers"
	ServeAll   = "all"
)

// DefaultDashboardAddr is api.dashboard_addr's default: loopback, a free
// port chosen at each start.
const DefaultDashboardAddr = "127.0.0.1:0"

// APIConfig is the table [api]: the daemon's local interfaces (docs/design.md §12).
// The control API itself is always on the repo's Unix socket and has no key.
type APIConfig struct {
	// MetricsAddr (key `api.metrics_addr`) is a loopback host:port on which
	// Prometheus metrics are also served over TCP; host is 127.0.0.1 (or
	// another 127.0.0.0/8 address), ::1 or localhost, port 1..65535.
	// Default "": off.
	MetricsAddr string `toml:"metrics_addr"`
	// DashboardAddr (key `api.dashboard_addr`) is the loopback host:port
	// of the web dashboard (docs/adr/0049): host as for MetricsAddr, port
	// 0..65535, 0 for a free port chosen at each start (`wats dashboard`
	// prints the URL in use). Every page asks for the token the daemon
	// makes at its start. Default "127.0.0.1:0"; "": off.
	DashboardAddr string `toml:"dashboard_addr"`
}

// LogConfig is the table [log]: the daemon's log output.
type LogConfig struct {
	// Level (key `log.level`) is the least severe level written: debug,
	// info, warn or error. Default "info".
	Level string `toml:"level"`

	// Format (key `log.format`) is text (for people) or json (one object a
	// line, for collectors). Default "text".
	Format string `toml:"format"`
}

// Default returns a new Config holding the default of every key. Each call
// returns fresh slices, so callers may modify the result.
func Default() *Config {
	return &Config{
		Network: "wats-dev",
		P2P: P2PConfig{
			Listen:       []string{fmt.Sprintf("/ip4/0.0.0.0/tcp/%d", DefaultPort), fmt.Sprintf("/ip4/0.0.0.0/udp/%d/quic-v1", DefaultPort)},
			Bootstrap:    []string{},
			MDNS:         false,
			DHT:          DHTAuto,
			Relays:       []string{},
			ConnsLow:     32,
			ConnsHigh:    96,
			ConnsGrace:   Duration{30 * time.Second},
			MaxConns:     256,
			MaxStreams:   4096,
			MaxMemoryMiB: 2048,
		},
		Sync: SyncConfig{
			Interval: Duration{30 * time.Second},
			Gossip:   true,
		},
		Limits:    limits.DefaultConfig(),
		PeerCache: PeerCacheConfig{MaxPeers: peercache.DefaultMaxPeers},
		Blobs: BlobsConfig{MaxBlobBytes: blobs.DefaultMaxBlobBytes, QuotaBytes: blobs.DefaultQuotaBytes, Serve: ServePeers, AutoFetch: true,
			MaxPartialBytes: blobs.DefaultMaxPartialBytes, MaxPartialAge: Duration{blobs.DefaultMaxPartialAge}},
		Events: EventsConfig{MaxEvents: 10_000_000, MaxBytes: 4 << 30, MaxEventsPerAuthor: 100_000, MaxBytesPerAuthor: 256 << 20},
		API: APIConfig{
			MetricsAddr:   "",
			DashboardAddr: DefaultDashboardAddr,
		},
		Log: LogConfig{
			Level:  "info",
			Format: "text",
		},
	}
}
