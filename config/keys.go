package config

import (
	"encoding"
	"fmt"
	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/limits"
	"reflect"
	"strings"
	"time"
)

// This file describes every key of config.toml: what it does, its unit and
// range, and an example (keyDocs), and every table (tableDocs). Template,
// the messages of Validate and the messages of Parse all read from here, so
// a rule is written once. Adding a table: add a struct with toml tags and a
// field of Config, its entries below, and a validate method called from
// Config.problems; TestTemplateCoversEveryKey fails until the docs are here.

// exampleBootstrap is a bootstrap multiaddr that parses, for examples: a
// documentation address (RFC 5737) and the peer id of a fixed test key.
const exampleBootstrap = "/ip4/203.0.113.7/tcp/9287/p2p/12D3KooWK99VoVxNE7XzyBwXEzW7xhK7Gpv85r9F3V3fyKSUKPH5"

// keyDoc documents one key.
type keyDoc struct {
	what    string // what the key does, in sentences
	allowed string // type, unit and range, as a phrase
	example string // one line of config.toml, as written under its table
}

// tableDocs documents each table, by its dotted name.
var tableDocs = map[string]string{
	"p2p": "The libp2p host: its addresses, the peers it dials at start, and the hard " +
		"bounds of libp2p's connection manager and resource manager. The per-peer rate " +
		"limits of [limits] add to these bounds; they do not replace them.",
	"limits": "Per-peer rate limits on /wats/1 requests (ADR 0014): one token bucket per peer " +
		"and request type, refilling per_min/60 tokens a second up to a burst of a quarter " +
		"of a minute's worth (at least one); 0 means unlimited. A request over its limit is " +
		"refused with \"rate limited (<type>): retry later\", or, if the peer can solve, " +
		"answered with the b3 proof-of-work challenge of ADR 0014, which the challenge keys set. " +
		"Each peer's rates follow its tier, from its value history (docs/adr/0030): a suspect gets " +
		"suspect_percent of them, a valued peer up to valued_percent, new and normal peers the rates " +
		"below; requests for what never existed here also take from miss_per_min.",
	"sync": "How the node keeps up with the event logs of its peers.",
	"peercache": "The persisted records of the peers that showed this node value (stayed connected, " +
		"gave events or blobs, solved a challenge; a hello is not enough): their addresses, sync " +
		"cursors and value history. A peer in the cache from an earlier run has an established " +
		"reputation (ADR 0014): it is served, not challenged, while the node is overloaded.",
	"blobs": "The blob store: content-addressed files and crash dumps (UnixFS, CIDv1, " +
		"BLAKE3, 1 MiB chunks), added with `wats blob add`.",
	"bandwidth": "Caps on the node's traffic: every libp2p stream (blobs, sync pages, gossip, the " +
		"DHT) together, in each direction; 0 means unlimited. Within a cap, peers with standing " +
		"(dialled by this node, reputed, valued, or established authors) are served before strangers " +
		"(docs/adr/0048). `wats status` shows the use against them.",
	"events": "Quotas of the event log, per author and in all (docs/adr/0031). Nothing stored is " +
		"ever dropped; `wats status` shows the use against them.",
	"api": "Local interfaces of the daemon. The control API is always served on the Unix " +
		"socket in the repo (api.sock) and never listens on the network.",
	"log": "The daemon's log output.",
}

// keyDocs documents each key, by its full dotted name.
var keyDocs = map[string]keyDoc{
	"network": {
		what: "Name of the network this node belongs to. Every node of a network uses the same " +
			"name: hello carries it, peers of another network are told so and dropped, and the " +
			"gossip topic is /wats/events/1/<network>.",
		allowed: fmt.Sprintf("1..%d characters of a-z, 0-9, '.', '_' and '-'", MaxNetworkLen),
		example: `network = "wats-dev"`,
	},
	"p2p.listen": {
		what: "Multiaddrs to listen on, TCP and QUIC. Port 0 picks a free port. " +
			"Use /ip6/::/... to listen on IPv6 too. The default port, 9287 (WATS on a phone keypad), " +
			"is the node's own: kubo's 4001 is left to kubo.",
		allowed: fmt.Sprintf("1..%d multiaddrs (hello advertises at most %d)", MaxListenAddrs, MaxListenAddrs),
		example: `listen = ["/ip4/0.0.0.0/tcp/9287", "/ip4/0.0.0.0/udp/9287/quic-v1"]`,
	},
	"p2p.bootstrap": {
		what: "Peers to dial at start to join the network, each a full multiaddr: an address " +
			"followed by /p2p/<peer id>.",
		allowed: fmt.Sprintf("0..%d multiaddrs, each ending in /p2p/<peer id>", MaxBootstrapPeers),
		example: `bootstrap = ["` + exampleBootstrap + `"]`,
	},
	"p2p.mdns": {
		what:    "Discover peers on the local network with mDNS: handy on a LAN, pointless on a server.",
		allowed: "true or false",
		example: `mdns = true`,
	},
	"p2p.dht": {
		what: "Mode of the network's Kademlia DHT, which finds peers by peer ID, finds the nodes of the " +
			"network from one bootstrap address, and finds the providers of a blob by CID (docs/adr/0040). " +
			"It is the network's own (protocol /wats/<network>/kad/1.0.0), never the IPFS DHT. " +
			"auto: a DHT server once AutoNAT finds the node publicly reachable, a client until then; " +
			"server: always a server (bootstrap nodes, and networks on one machine or LAN, which AutoNAT " +
			"never finds public); client: queries only; off: none.",
		allowed: "one of " + strings.Join(DHTModes, ", "),
		example: `dht = "auto"`,
	},
	"p2p.relays": {
		what: "Circuit relay v2 relays AutoRelay reserves a slot on before the relays it finds through " +
			"the DHT, when the node is not publicly reachable: others then reach it through the relay and " +
			"hole-punch a direct connection. Blobs never go over a relay (docs/adr/0040).",
		allowed: fmt.Sprintf("0..%d multiaddrs, each ending in /p2p/<peer id>", MaxRelays),
		example: `relays = ["` + exampleBootstrap + `"]`,
	},
	"p2p.relay_service": {
		what: "Serve as a circuit relay v2 relay for peers behind NATs, within fixed limits: 128 " +
			"reservations, 16 circuits per peer, 2 minutes and 1 MiB each way per circuit " +
			"(docs/adr/0040). Turn it on only on a node with a public address: it serves from the start, " +
			"whatever AutoNAT finds.",
		allowed: "true or false",
		example: `relay_service = true`,
	},
	"p2p.nat_port_map": {
		what:    "Ask the home router for a port mapping with UPnP or NAT-PMP, so that peers can dial in.",
		allowed: "true or false",
		example: `nat_port_map = true`,
	},
	"p2p.conns_low": {
		what:    "Connection manager low water mark: when it trims connections, it stops at this many.",
		allowed: "connections, an integer with 1 <= conns_low < conns_high",
		example: `conns_low = 32`,
	},
	"p2p.conns_high": {
		what:    "Connection manager high water mark: above this many connections, it trims down to conns_low.",
		allowed: fmt.Sprintf("connections, an integer with conns_low < conns_high <= %d and conns_high <= max_conns", MaxConnsHigh),
		example: `conns_high = 96`,
	},
	"p2p.conns_grace": {
		what:    "Connection manager grace period: a new connection is not trimmed for this long.",
		allowed: fmt.Sprintf("a duration from \"0s\" to %q", durationText(MaxConnsGrace)),
		example: `conns_grace = "30s"`,
	},
	"p2p.max_conns": {
		what: "Resource manager: hard limit on connections, all peers, inbound and outbound " +
			"together. Connections beyond it are refused. A quarter of it are the slots of peers " +
			"that connect without having shown value; past them the worst of those is evicted " +
			"for a newcomer (docs/adr/0030).",
		allowed: fmt.Sprintf("connections, an integer from conns_high to %d", MaxMaxConns),
		example: `max_conns = 256`,
	},
	"p2p.max_streams": {
		what:    "Resource manager: hard limit on open streams, all peers together.",
		allowed: fmt.Sprintf("streams, an integer from %d to %d", MinMaxStreams, MaxMaxStreams),
		example: `max_streams = 4096`,
	},
	"p2p.max_memory_mib": {
		what: "Memory for peers' connections and streams: the resource manager's limit (each open " +
			"stream reserves its 256 KiB receive window), with a sixteenth kept for the sync pages " +
			"being served. A bound on the worst case, not what the daemon uses.",
		allowed: fmt.Sprintf("MiB, an integer from %d to %d", MinMemoryMiB, MaxMemoryMiB),
		example: `max_memory_mib = 2048`,
	},
	"sync.interval": {
		what:    "How often the node syncs from each connected peer: it asks for the events logged since the last sync.",
		allowed: fmt.Sprintf("a duration from %q to %q", durationText(MinSyncInterval), durationText(MaxSyncInterval)),
		example: `interval = "30s"`,
	},
	"sync.gossip": {
		what: "Join the gossipsub topic /wats/events/1/<network>, to receive and spread new " +
			"events at once. false: learn new events by sync only.",
		allowed: "true or false",
		example: `gossip = true`,
	},
	"api.metrics_addr": {
		what: "Also serve Prometheus metrics over TCP at this address (they are always on the " +
			"control socket). Empty: off.",
		allowed: `"" or a loopback host:port: host 127.0.0.1, [::1] or localhost, port 1..65535`,
		example: `metrics_addr = "127.0.0.1:9464"`,
	},
	"api.dashboard_addr": {
		what: "Serve the web dashboard at this address; `wats dashboard` prints its URL with the " +
			"access token the daemon makes at each start. Port 0: a free port chosen at each start. Empty: off.",
		allowed: `"" or a loopback host:port: host 127.0.0.1, [::1] or localhost, port 0..65535`,
		example: `dashboard_addr = "127.0.0.1:5180"`,
	},
	"log.level": {
		what:    "Least severe level of the messages written.",
		allowed: `"debug", "info", "warn" or "error"`,
		example: `level = "info"`,
	},
	"limits.hello_per_min": {
		what:    "hello requests a peer may make, per minute (a burst of a quarter of that, at least 1).",
		allowed: fmt.Sprintf("0..%d requests a minute; 0 means unlimited", limits.MaxPerMin),
		example: "hello_per_min = 60",
	},
	"limits.sync_per_min": {
		what: "sync requests (pages of up to 256 events) a peer may make, per minute. At the " +
			"default, a new node catches up on 1,000,000 events in about 7 minutes.",
		allowed: fmt.Sprintf("0..%d requests a minute; 0 means unlimited", limits.MaxPerMin),
		example: "sync_per_min = 600",
	},
	"limits.replicate_per_min": {
		what:    "replicate requests a peer may make, per minute.",
		allowed: fmt.Sprintf("0..%d requests a minute; 0 means unlimited", limits.MaxPerMin),
		example: "replicate_per_min = 120",
	},
	"limits.report_per_min": {
		what:    "crash_report requests a peer may make, per minute.",
		allowed: fmt.Sprintf("0..%d requests a minute; 0 means unlimited", limits.MaxPerMin),
		example: "report_per_min = 10",
	},
	"limits.blob_fetches_per_peer": {
		what: "Blobs one peer can make this node fetch at once (replicate requests); further " +
			"blobs of a request are skipped.",
		allowed: fmt.Sprintf("%d..%d blobs", limits.MinBlobFetchesPerPeer, limits.MaxBlobFetchesPerPeer),
		example: "blob_fetches_per_peer = 4",
	},
	"limits.challenge": {
		what: "Whether to answer with a proof-of-work challenge instead of a refusal when a " +
			"peer that can solve is over its limit or the node is overloaded (ADR 0014); false " +
			"means refusals only (the node still solves the challenges of others).",
		allowed: "true or false",
		example: "challenge = true",
	},
	"limits.challenge_base_bits": {
		what:    "Effort of a challenge without pressure, in leading zero bits (ADR 0014).",
		allowed: fmt.Sprintf("%d..challenge_max_bits", limits.MinChallengeBits),
		example: "challenge_base_bits = 8",
	},
	"limits.challenge_max_bits": {
		what: "Most effort the node asks for under sustained pressure, in leading zero bits; it " +
			"rises one bit for each 10 s under pressure and falls one for each quiet 10 s (ADR 0014).",
		allowed: fmt.Sprintf("challenge_base_bits..%d", core.MaxChallengeEffort),
		example: "challenge_max_bits = 24",
	},
	"limits.miss_per_min": {
		what: "Misses a peer may make, per minute, on top of their request type's rate: requests " +
			"for what never existed here (a sync cursor past the head, blobs no event names, a crash " +
			"report already held). Misses are also counted against the peer's tier (docs/adr/0030).",
		allowed: fmt.Sprintf("0..%d requests a minute; 0 means unlimited", limits.MaxPerMin),
		example: "miss_per_min = 30",
	},
	"limits.suspect_percent": {
		what: "Share of every rate above that a suspect peer gets, in percent: a peer whose value " +
			"history is mostly misses, invalid messages, failed solutions or held streams (docs/adr/0030).",
		allowed: fmt.Sprintf("%d..%d percent (at least one request a minute)", limits.MinSuspectPercent, limits.MaxSuspectPercent),
		example: "suspect_percent = 10",
	},
	"limits.valued_percent": {
		what: "Ceiling of a valued peer's rates, in percent of the rates above: a peer in the peer " +
			"cache that gave this node many events or blobs (docs/adr/0030).",
		allowed: fmt.Sprintf("%d..%d percent", limits.MinValuedPercent, limits.MaxValuedPercent),
		example: "valued_percent = 200",
	},
	"limits.stranger_report_per_min": {
		what: "crash_report requests all strangers together may make, per minute, on top of each " +
			"one's report_per_min: peers without a peer-cache record (docs/adr/0030). Each report is a " +
			"durable write; the bound keeps a flood of fresh ids from growing the log without limit.",
		allowed: fmt.Sprintf("0..%d requests a minute; 0 means unlimited", limits.MaxPerMin),
		example: "stranger_report_per_min = 600",
	},
	"limits.gossip_per_min": {
		what: "Gossip envelopes one peer may forward to this node a minute; suspects get suspect_percent " +
			"of it, valued peers valued_percent. Over it an envelope is ignored before any signature is " +
			"checked: not stored, not forwarded (docs/adr/0031).",
		allowed: fmt.Sprintf("0..%d envelopes a minute; 0 means unlimited", limits.MaxPerMin),
		example: "gossip_per_min = 6000",
	},
	"limits.stranger_gossip_per_min": {
		what: "Gossip envelopes of new authors all strangers together (peers without a peer-cache record) " +
			"may forward a minute, on top of each one's gossip_per_min (docs/adr/0031).",
		allowed: fmt.Sprintf("0..%d envelopes a minute; 0 means unlimited", limits.MaxPerMin),
		example: "stranger_gossip_per_min = 1200",
	},
	"limits.author_per_min": {
		what: "New events of one author stored from gossip a minute; a suspect author gets " +
			"suspect_percent of it, a valued one valued_percent (docs/adr/0031).",
		allowed: fmt.Sprintf("0..%d events a minute; 0 means unlimited", limits.MaxPerMin),
		example: "author_per_min = 600",
	},
	"limits.stranger_author_per_min": {
		what: "Gossiped events of new authors (first stored here less than new_author_minutes ago, and " +
			"no peer-cache record), all together, a minute: fresh keys cost nothing (docs/adr/0031). " +
			"An event over 4 KiB counts as one per 4 KiB started (docs/adr/0041).",
		allowed: fmt.Sprintf("0..%d events a minute; 0 means unlimited", limits.MaxPerMin),
		example: "stranger_author_per_min = 600",
	},
	"limits.new_author_minutes": {
		what: "How long an author stays new after its first event was stored here; a new author without a " +
			"peer-cache record shares stranger_author_per_min with the others (docs/adr/0031).",
		allowed: fmt.Sprintf("%d..%d minutes", limits.MinNewAuthorMinutes, limits.MaxNewAuthorMinutes),
		example: "new_author_minutes = 10",
	},
	"limits.stranger_sync_per_min": {
		what: "Events of new authors stored a minute from the sync pages of peers without standing (peers " +
			"this node did not dial, neither reputed nor valued nor established authors), all together: " +
			"ids that complete hello make the node store no more of their own events. An event over " +
			"4 KiB counts as one per 4 KiB started (docs/adr/0041).",
		allowed: fmt.Sprintf("0..%d events a minute; 0 means unlimited", limits.MaxPerMin),
		example: "stranger_sync_per_min = 6000",
	},
	"limits.stranger_dht_per_min": {
		what: "DHT requests a minute that all peers without a record send to each of this node's DHT " +
			"servers together, on top of each one's own budget: fresh ids buy no more than this; a " +
			"stranger that completed hello draws an allowance of its own first, and those that " +
			"solved challenges pay for come to no more requests than this a minute either " +
			"(docs/adr/0040, 0059).",
		allowed: fmt.Sprintf("0..%d requests a minute; 0 means unlimited", limits.MaxPerMin),
		example: "stranger_dht_per_min = 12000",
	},
	"peercache.max_peers": {
		what: "Most peer records kept. A peer gets one only after it showed value (stayed connected, " +
			"gave events or blobs, solved a challenge); past the bound the least valuable go first, " +
			"some protected for being known longest, most useful, recently useful, or alone in their " +
			"address group (docs/adr/0030).",
		allowed: fmt.Sprintf("1..%d peers", MaxPeerCache),
		example: "max_peers = 10000",
	},
	"blobs.max_blob_bytes": {
		what:    "Largest blob the node stores, in bytes; a larger one is refused before it is stored.",
		allowed: "1..2^53 bytes",
		example: "max_blob_bytes = 67108864",
	},
	"blobs.quota_bytes": {
		what:    "Most bytes of blobs the node stores, all blobs together; a blob past it is refused.",
		allowed: "max_blob_bytes..2^53 bytes",
		example: "quota_bytes = 4294967296",
	},
	"blobs.max_partial_bytes": {
		what: "Most bytes of partial blobs kept: what fetches that did not complete (a provider gone, a " +
			"restart, a crash) verified, never served, so that the next fetch goes on from it. Past it the " +
			"least recently progressed go first. Not counted by quota_bytes (docs/adr/0054).",
		allowed: "0..2^53 bytes; 0 keeps none",
		example: "max_partial_bytes = 1073741824",
	},
	"blobs.max_partial_age": {
		what:    "A partial blob to which no byte was added for longer is dropped (docs/adr/0054).",
		allowed: fmt.Sprintf("a duration up to %q; \"0s\" means no age bound", durationText(MaxPartialAge)),
		example: `max_partial_age = "168h"`,
	},
	"events.max_events": {
		what: "Most events the log holds, all authors together. Past 90% of it no event of an author " +
			"new to the log is stored; at it, only this node's own. Nothing stored is dropped (docs/adr/0031).",
		allowed: "0..2^40 events; 0 means unlimited",
		example: "max_events = 10000000",
	},
	"events.max_bytes": {
		what: "Most bytes of events (their JSON) the log holds, all authors together; the same rule as " +
			"max_events past 90% and at the quota (docs/adr/0031).",
		allowed: "0 (unlimited) or 65536..2^53 bytes",
		example: "max_bytes = 4294967296",
	},
	"events.max_events_per_author": {
		what: "Most events of one author the log stores; further events of that author are refused unless " +
			"it is a valued peer. This node's own events are not counted against it (docs/adr/0031).",
		allowed: "0..2^40 events, at most max_events; 0 means unlimited",
		example: "max_events_per_author = 100000",
	},
	"events.max_bytes_per_author": {
		what:    "Most bytes of one author's events the log stores; the same rule as max_events_per_author (docs/adr/0031).",
		allowed: "0 (unlimited) or 65536..2^53 bytes, at most max_bytes",
		example: "max_bytes_per_author = 268435456",
	},
	"bandwidth.up_bytes_per_s": {
		what:    "Most bytes a second the node sends on all its streams together; peers with standing are served first.",
		allowed: "0 (unlimited) or 16384..2^40 bytes a second",
		example: "up_bytes_per_s = 8388608",
	},
	"bandwidth.down_bytes_per_s": {
		what:    "Most bytes a second the node reads from all its streams together; a peer sending faster is slowed by flow control.",
		allowed: "0 (unlimited) or 16384..2^40 bytes a second",
		example: "down_bytes_per_s = 16777216",
	},
	"bandwidth.monthly_up_bytes": {
		what: "Once the bytes sent this calendar month (UTC) reach it, blobs are served only to peers with " +
			"standing until the month ends; every other protocol goes on. The count is kept in the repo " +
			"(bandwidth.json) across restarts.",
		allowed: "0 (none) or 1048576..2^53 bytes",
		example: "monthly_up_bytes = 1099511627776",
	},
	"blobs.serve": {
		what:    `To whom blocks of complete blobs are served over bitswap: "peers" (those that completed hello) or "all".`,
		allowed: `"peers" or "all"`,
		example: `serve = "peers"`,
	},
	"blobs.auto_fetch": {
		what:    "Fetch the blobs of events that arrive by gossip or sync, within max_blob_bytes and quota_bytes.",
		allowed: "true or false",
		example: "auto_fetch = true",
	},
	"log.format": {
		what:    `"text" for people, "json" for log collectors (one JSON object a line).`,
		allowed: `"text" or "json"`,
		example: `format = "json"`,
	},
}

// durationText formats d as Duration.MarshalText does.
func durationText(d time.Duration) string {
	b, _ := Duration{d}.MarshalText()
	return string(b)
}

// field is one key of config.toml, found by walking the Config type.
type field struct {
	key   string       // full dotted key, "p2p.listen"
	name  string       // last part of key, "listen"
	table string       // dotted name of the table holding it; "" at the top level
	index []int        // reflect field index path from Config
	typ   reflect.Type // Go type of the field
}

// table is one table of config.toml: its keys first, then its sub-tables,
// in struct order (the order Template writes them in).
type table struct {
	name   string // dotted name, "" for the top level
	keys   []field
	tables []*table
}

var textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()

// isLeaf reports whether a field of type t is a key (a value) rather than
// a table: anything but a struct, or a struct that reads itself from text
// (Duration).
func isLeaf(t reflect.Type) bool {
	return t.Kind() != reflect.Struct || reflect.PointerTo(t).Implements(textUnmarshalerType)
}

// schema is the tree of tables and keys of Config, and fields indexes its
// keys by full dotted name. Both are computed once from the Config type.
var (
	schema = walk(reflect.TypeFor[Config](), "", nil)
	fields = indexFields(schema, map[string]field{})
)

// walk returns the table of struct type t, named name, whose fields are at
// index path index from Config.
func walk(t reflect.Type, name string, index []int) *table {
	tb := &table{name: name}
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, _, _ := strings.Cut(sf.Tag.Get("toml"), ",")
		if !sf.IsExported() || tag == "-" || tag == "" {
			continue
		}
		key := tag
		if name != "" {
			key = name + "." + tag
		}
		idx := append(append([]int(nil), index...), i)
		if isLeaf(sf.Type) {
			tb.keys = append(tb.keys, field{key: key, name: tag, table: name, index: idx, typ: sf.Type})
		} else {
			tb.tables = append(tb.tables, walk(sf.Type, key, idx))
		}
	}
	return tb
}

func indexFields(tb *table, m map[string]field) map[string]field {
	for _, f := range tb.keys {
		m[f.key] = f
	}
	for _, sub := range tb.tables {
		indexFields(sub, m)
	}
	return m
}

// sub returns the sub-table of tb whose name (its last part) is name,
// matched exactly, case included; nil if there is none.
func (tb *table) sub(name string) *table {
	for _, sub := range tb.tables {
		if sub.name == dotted(tb.name, name) {
			return sub
		}
	}
	return nil
}

// key returns the key of tb whose name (its last part) is name, matched
// exactly, case included.
func (tb *table) key(name string) (field, bool) {
	for _, f := range tb.keys {
		if f.name == name {
			return f, true
		}
	}
	return field{}, false
}

// dotted returns the full dotted name of name in the table named table.
func dotted(table, name string) string {
	if table == "" {
		return name
	}
	return table + "." + name
}

// tableByName returns the table of that dotted name, or nil.
func tableByName(name string) *table {
	var find func(*table) *table
	find = func(tb *table) *table {
		if tb.name == name {
			return tb
		}
		for _, sub := range tb.tables {
			if t := find(sub); t != nil {
				return t
			}
		}
		return nil
	}
	return find(schema)
}

// typeName describes what a value of Go type t is written as in TOML, for
// ErrType messages.
func typeName(t reflect.Type) string {
	switch {
	case t == reflect.TypeFor[Duration]():
		return `a duration string such as "30s"`
	case t.Kind() == reflect.String:
		return "a string"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return "an integer"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "a number"
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		return "an array of strings"
	case t.Kind() == reflect.Slice:
		return "an array"
	}
	return "a " + t.String()
}
