package api

import "github.com/go-json-experiment/json/jsontext"

// Paths of the control API (docs/design.md §12). Every path is served on the
// daemon's Unix socket only.
const (
	// PathID answers GET with an ID.
	PathID = "/v1/id"
	// PathStatus answers GET with a Status.
	PathStatus = "/v1/status"
	// PathPeers answers GET with a JSON array of Peer.
	PathPeers = "/v1/peers"
	// PathConnect takes a POSTed ConnectRequest, dials the address, waits
	// for hello to complete and answers with the Peer.
	PathConnect = "/v1/peers/connect"
	// PathEvents answers GET ?after=N&limit=N with an EventPage (and
	// &author_use=1, its AuthorUse), and takes a POSTed AddEventRequest,
	// answering with the stored signed event.
	PathEvents = "/v1/events"
	// PathEvent is the prefix of GET /v1/events/{id}: the event whose id
	// is {id} or starts with it. {id} is a full event id or a prefix of
	// one, MinEventIDPrefix to EventIDLen lowercase hex characters (see
	// IsEventIDPrefix). The answer is 404 with an ErrorBody if no event
	// matches (ErrNotFound), 409 if several do (ErrAmbiguous).
	PathEvent = "/v1/events/"
	// PathTail answers GET ?after=N with an application/x-ndjson stream:
	// every event stored after cursor N, one per line, in log order, then
	// each new one as it is stored, until the client goes away.
	PathTail = "/v1/tail"
	// PathSync takes a POSTed SyncRequest and answers with an
	// application/x-ndjson stream of SyncProgress lines, the last of which
	// has Done set or Error non-empty.
	PathSync = "/v1/sync"
	// PathMetrics answers GET with the Prometheus text exposition format.
	PathMetrics = "/metrics"
)

// Event ids and their prefixes (GET PathEvent).
const (
	// EventIDLen is the length of an event id: the lowercase hex of a
	// BLAKE3-256 digest, 64 characters (docs/design.md §5).
	EventIDLen = 64
	// MinEventIDPrefix is the shortest id prefix GET PathEvent accepts:
	// 8 hex characters (32 bits) tell apart the events of any log a
	// person lists by hand, and shorter ones would match several events
	// too often to be worth typing.
	MinEventIDPrefix = 8
)

// IsEventIDPrefix reports whether s is a full event id or a prefix of one
// that GET PathEvent accepts: MinEventIDPrefix to EventIDLen characters of
// [0-9a-f].
func IsEventIDPrefix(s string) bool {
	if len(s) < MinEventIDPrefix || len(s) > EventIDLen {
		return false
	}
	for i := range len(s) {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// DefaultPageLimit is the number of events GET PathEvents returns when the
// request gives no limit; a limit above core.MaxPageEvents is answered
// with a page of at most core.MaxPageEvents events, and the CLI refuses one.
const DefaultPageLimit = 100

// ContentTypeJSON is the media type of every non-streaming body.
const ContentTypeJSON = "application/json"

// ContentTypeNDJSON is the media type of the PathTail and PathSync streams:
// one JSON value per line, each line ending in "\n".
const ContentTypeNDJSON = "application/x-ndjson"

// ID is the identity of the daemon (GET PathID).
type ID struct {
	// PeerID is the node's libp2p peer ID (docs/design.md §3: an Ed25519 key).
	PeerID string `json:"peer_id"`
	// Addrs are the node's full multiaddrs, each ending in /p2p/<PeerID>,
	// usable as they are by `wats peers connect` or as bootstrap addresses.
	Addrs []string `json:"addrs"`
	// Network is the network name of the node's config (docs/design.md §3).
	Network string `json:"network"`
	// Agent is the agent string the node sends in hello, e.g. "wats/0.1.0".
	Agent string `json:"agent"`
}

// Status is a summary of the daemon's state (GET PathStatus).
type Status struct {
	PeerID  string `json:"peer_id"`
	Network string `json:"network"`
	Agent   string `json:"agent"`
	// Peers counts the connected peers that completed hello.
	Peers int `json:"peers"`
	// Events counts the events in the local log.
	Events uint64 `json:"events"`
	// Head is the local log position (cursor) of the newest event; 0 when
	// the log is empty (docs/design.md §5).
	Head uint64 `json:"head"`
	// Gossip reports whether the node is subscribed to its gossip topic.
	Gossip bool `json:"gossip"`
	// UptimeSeconds is the time since the node started, in whole seconds.
	UptimeSeconds int64 `json:"uptime_seconds"`
	// Dropped counts the invalid events dropped, from all sources (gossip,
	// sync, crash reports).
	Dropped uint64 `json:"dropped"`
	// InFlight is the number of /wats requests being handled; above
	// limits' overload_in_flight (64) the node is overloaded (ADR 0014).
	InFlight int64 `json:"in_flight"`
	// ChallengeEffort is the current effort of the b3 challenge, in
	// leading zero bits (ADR 0014: base 8, up to 24 under pressure).
	ChallengeEffort int `json:"challenge_effort"`
	// ChallengesIssued, ChallengesSolved and ChallengesFailed count the
	// challenges sent, the requests let through by a valid solution, and
	// the solutions refused.
	ChallengesIssued uint64 `json:"challenges_issued"`
	ChallengesSolved uint64 `json:"challenges_solved"`
	ChallengesFailed uint64 `json:"challenges_failed"`
	// Blobs counts the complete blobs held; BlobBytes is their size, in
	// bytes, as blobs.quota_bytes (BlobQuotaBytes) counts it.
	Blobs          int    `json:"blobs"`
	BlobBytes      uint64 `json:"blob_bytes"`
	BlobQuotaBytes uint64 `json:"blob_quota_bytes"`
	// PartialBlobs counts the partial blobs kept (docs/adr/0054: what
	// fetches that did not complete verified, for the next fetch to go on
	// from); PartialBytes is the bytes of their data files, bounded by
	// blobs.max_partial_bytes, not counted by the quota.
	PartialBlobs int    `json:"partial_blobs"`
	PartialBytes uint64 `json:"partial_bytes"`
	// PeerTiers counts the connected peers by tier (docs/adr/0030).
	PeerTiers map[string]int `json:"peer_tiers"`
	// StrangerSlots and StrangerSlotsUsed are the inbound connection
	// slots of peers without a peer-cache record, and how many are held.
	StrangerSlots     int `json:"stranger_slots"`
	StrangerSlotsUsed int `json:"stranger_slots_used"`
	// Log is what the event log holds against its quotas ([events], docs/adr/0031).
	Log LogUsage `json:"log"`
	// Reachability is what AutoNAT last found: "public" (peers can dial
	// this node), "private" (behind a NAT or firewall: reached through
	// RelayAddrs) or "unknown" (not yet found out, or no peer to ask).
	Reachability string `json:"reachability"`
	// RelayAddrs are the node's relayed addresses (/p2p-circuit), one per
	// relay it holds a reservation on; none when public.
	RelayAddrs []string `json:"relay_addrs"`
	// HolePunches counts the hole punches (DCUtR) that ended, by outcome.
	HolePunches HolePunches `json:"hole_punches"`
	// DHT is the state of the network's DHT (docs/adr/0040).
	DHT DHTStatus `json:"dht"`
	// Disk is the free space of the repo's disk against the reserve the
	// node keeps (docs/adr/0044); nil for an in-memory node, or where the
	// free space cannot be read.
	Disk *DiskStatus `json:"disk,omitempty"`
	// Bandwidth is the node's traffic on its streams against the caps of
	// [bandwidth] (docs/adr/0048).
	Bandwidth BandwidthStatus `json:"bandwidth"`
}

// BandwidthStatus is the traffic of the node's libp2p streams (blobs,
// sync, gossip, the DHT: every stream) against the caps of [bandwidth]
// (docs/adr/0048). Counts are in bytes, rates in bytes a second.
type BandwidthStatus struct {
	// UpBytes and DownBytes are the bytes sent and received on the node's
	// streams since it started.
	UpBytes   uint64 `json:"up_bytes"`
	DownBytes uint64 `json:"down_bytes"`
	// UpBytesPerS and DownBytesPerS are the caps of each direction
	// (bandwidth.up_bytes_per_s, bandwidth.down_bytes_per_s); 0 is
	// unlimited.
	UpBytesPerS   uint64 `json:"up_bytes_per_s"`
	DownBytesPerS uint64 `json:"down_bytes_per_s"`
	// MonthlyUpBytes is the monthly cap of bytes sent
	// (bandwidth.monthly_up_bytes); 0 is none.
	MonthlyUpBytes uint64 `json:"monthly_up_bytes"`
	// MonthUpBytes is the bytes sent in Month, kept across restarts.
	MonthUpBytes uint64 `json:"month_up_bytes"`
	// Month is the calendar month (UTC) MonthUpBytes counts, "2006-01".
	Month string `json:"month"`
	// StrangerBlobsStopped is whether MonthUpBytes reached MonthlyUpBytes:
	// blobs are then served only to peers with standing, until the month
	// ends.
	StrangerBlobsStopped bool `json:"stranger_blobs_stopped"`
}

// DiskStatus is the repo's disk as the node's guard saw it last.
type DiskStatus struct {
	// FreeBytes is the free space, in bytes.
	FreeBytes uint64 `json:"free_bytes"`
	// ReserveBytes is what the node keeps free: writes that would leave
	// less are refused. It is a reserve (a sixteenth of the filesystem,
	// 4 to 64 MiB) and the capacity of the database's memtables, which
	// it writes out on its own when it flushes them. BallastBytes is the size of the ballast file it
	// keeps for its database, and Ballast whether it is there.
	ReserveBytes uint64 `json:"reserve_bytes"`
	BallastBytes uint64 `json:"ballast_bytes"`
	Ballast      bool   `json:"ballast"`
	// Full is whether writes (events, blobs, records) are refused for want
	// of room; reads and peers are served meanwhile.
	Full bool `json:"full"`
}

// HolePunches counts the hole punches that ended since the node started.
type HolePunches struct {
	Succeeded uint64 `json:"succeeded"`
	Failed    uint64 `json:"failed"`
}

// DHTStatus is the state of the node's DHT (p2p.dht, docs/adr/0040).
type DHTStatus struct {
	// Mode is p2p.dht ("auto", "server", "client" or "off"); Server
	// whether the node answers DHT queries now (auto: once public).
	Mode   string `json:"mode"`
	Server bool   `json:"server"`
	// RoutingTable counts the peers of the network DHT's routing table;
	// LANRoutingTable those of the LAN DHT's, the peers reached at
	// private and loopback addresses, among which the node is always a
	// server but with p2p.dht = "client" (docs/adr/0047).
	RoutingTable    int `json:"routing_table"`
	LANRoutingTable int `json:"lan_routing_table"`
	// ProviderRecords counts the provider records other peers put here,
	// and MaxProviderRecords is their bound.
	ProviderRecords    int `json:"provider_records"`
	MaxProviderRecords int `json:"max_provider_records"`
	// ProviderRecordsRefused counts the new records refused, the store
	// full, since the node started.
	ProviderRecordsRefused uint64 `json:"provider_records_refused"`
	// Discovered counts the other nodes the last look under the network's
	// rendezvous key found (at most 64); the node looks while it has
	// fewer peers than p2p.conns_low.
	Discovered int `json:"discovered"`
	// RequestsGreeted counts the DHT requests of strangers served from
	// the allowance a hello gave them (both DHTs), and
	// RequestsRefusedStrangers and LANRequestsRefusedStrangers those the
	// network's DHT and the LAN DHT refused because the strangers' shared
	// budget was spent, since the node started (docs/adr/0059).
	RequestsGreeted             uint64 `json:"requests_greeted"`
	RequestsRefusedStrangers    uint64 `json:"requests_refused_strangers"`
	LANRequestsRefusedStrangers uint64 `json:"lan_requests_refused_strangers"`
	// AllowancesBudget and AllowancesSolved count the greeted allowances
	// strangers' hellos were given since the node started, paid for by
	// the strangers' shared budget and by a solved challenge;
	// AllowancesOverSolved the solved hellos served with none, past the
	// bound on the allowances solutions pay for (docs/adr/0059).
	AllowancesBudget     uint64 `json:"allowances_budget"`
	AllowancesSolved     uint64 `json:"allowances_solved"`
	AllowancesOverSolved uint64 `json:"allowances_over_solved"`
}

// LogUsage is the event log's use and its quotas (the [events] keys; 0 is
// unlimited), in events and bytes of event JSON.
type LogUsage struct {
	Events  uint64 `json:"events"`
	Bytes   uint64 `json:"bytes"`
	Authors uint64 `json:"authors"`
	// MaxEvents, MaxBytes, MaxEventsPerAuthor and MaxBytesPerAuthor are
	// the quotas: events.max_events and so on.
	MaxEvents          uint64 `json:"max_events"`
	MaxBytes           uint64 `json:"max_bytes"`
	MaxEventsPerAuthor uint64 `json:"max_events_per_author"`
	MaxBytesPerAuthor  uint64 `json:"max_bytes_per_author"`
	// Commits counts the synced batches written; Events over it is the
	// group-commit factor.
	Commits uint64 `json:"commits"`
}

// Peer is one connected peer (GET PathPeers, POST PathConnect).
type Peer struct {
	PeerID string `json:"peer_id"`
	// Addrs are the peer's known multiaddrs.
	Addrs []string `json:"addrs"`
	// Agent is the agent the peer sent in hello; empty before hello.
	Agent string `json:"agent"`
	// Hello reports whether hello completed with this peer.
	Hello bool `json:"hello"`
	// NotWats is set for a peer an explicit connect found not to speak
	// /wats/1 (an IPFS node, say): it takes part in nothing but bitswap,
	// where it can be a blob provider (docs/adr/0032).
	NotWats bool `json:"not_wats"`
	// Head is the peer's log head as far as this node knows: as of its
	// hello, or Cursor when this node has synced past that since.
	Head uint64 `json:"head"`
	// Cursor is how far this node has synced the peer's log (a position in
	// the peer's log, docs/design.md §5).
	Cursor uint64 `json:"cursor"`
	// Direction is "inbound" or "outbound": who opened the connection.
	Direction string `json:"direction"`
	// Tier is the peer's tier, from its value history (docs/adr/0030):
	// "suspect", "new", "normal" or "valued"; TierReason says why.
	Tier       string `json:"tier"`
	TierReason string `json:"tier_reason"`
	// Reputed reports ADR 0014's established reputation: met in an
	// earlier run, or first hello at least 10 minutes ago.
	Reputed bool `json:"reputed"`
	// Score is the peer's gossipsub score as last computed (at most a
	// second old) and HasScore whether there is one: below -100 no gossip
	// is exchanged with it, below -1000 it is ignored (docs/adr/0031).
	Score    float64 `json:"score"`
	HasScore bool    `json:"has_score"`
	// Conn is how the peer is connected: "direct", "hole-punched" (a
	// direct connection a hole punch opened) or "relayed" (only through
	// a circuit relay: hello and sync, never blobs; docs/adr/0040).
	Conn string `json:"conn"`
	// Served, Challenged and Refused count the peer's /wats/1 requests
	// served, answered with a challenge, and refused over a limit
	// (docs/design.md §7) since it connected.
	Served     uint64 `json:"served"`
	Challenged uint64 `json:"challenged"`
	Refused    uint64 `json:"refused"`
	// BytesUp and BytesDown are the bytes this node sent to and received
	// from the peer on its streams while it is connected (docs/adr/0048).
	BytesUp   uint64 `json:"bytes_up"`
	BytesDown uint64 `json:"bytes_down"`
}

// Connection kinds of a Peer.
const (
	ConnDirect      = "direct"
	ConnHolePunched = "hole-punched"
	ConnRelayed     = "relayed"
)

// Directions of a Peer.
const (
	DirectionInbound  = "inbound"
	DirectionOutbound = "outbound"
)

// ConnectRequest is the body of POST PathConnect.
type ConnectRequest struct {
	// Addr is a full multiaddr ending in /p2p/<peer id>, or a bare peer
	// ID, whose addresses the node finds itself (its peerstore, then the
	// DHT: docs/adr/0040).
	Addr string `json:"addr"`
}

// AddEventRequest is the body of POST PathEvents: the daemon signs an event
// of this kind and body with its own key, stores it and gossips it.
type AddEventRequest struct {
	// Kind is 1–32 of [a-z0-9._-] (docs/design.md §5); the daemon validates it.
	Kind string `json:"kind"`
	// Body is a JSON object of at most 16 KiB (docs/design.md §5).
	Body jsontext.Value `json:"body"`
	// Blobs are the blobs the event names, at most 16 (docs/design.md §5),
	// optional; this node is named as their provider in gossip.
	Blobs []BlobRef `json:"blobs,omitempty"`
}

// BlobRef names a blob in an event: its CID, declared size in bytes and
// an optional file name.
type BlobRef struct {
	CID  string `json:"cid"`
	Size uint64 `json:"size"`
	Name string `json:"name,omitempty"`
}

// EventPage is one page of the local log (GET PathEvents).
type EventPage struct {
	// Events are the signed events after the requested cursor, in log order.
	Events []jsontext.Value `json:"events"`
	// Next is the cursor after the last event returned; pass it as after to
	// get the following page.
	Next uint64 `json:"next"`
	// More reports whether events after Next exist.
	More bool `json:"more"`
	// Head is the cursor of the newest event in the log.
	Head uint64 `json:"head"`
	// AuthorUse is, asked for with author_use=1, what each author of the
	// page's events holds in the log now, by peer ID: its part of the
	// per-author quotas (events.max_events_per_author, …, ADR 0031).
	AuthorUse map[string]AuthorUse `json:"author_use,omitempty"`
}

// AuthorUse is what one author holds in the log: events and the bytes of
// their JSON.
type AuthorUse struct {
	Events uint64 `json:"events"`
	Bytes  uint64 `json:"bytes"`
}

// SyncRequest is the body of POST PathSync.
type SyncRequest struct {
	// Peer is a peer ID of a connected peer, or a full multiaddr to dial
	// first; "" with All.
	Peer string `json:"peer"`
	// All, set without a Peer, syncs from every connected peer that
	// completed hello at once: those that serve sync by id range in one
	// catch-up spread across them (ADR 0052), the others by position. The
	// lines then carry each peer's share (SyncProgress.Shares).
	All bool `json:"all,omitzero"`
}

// SyncShare is one peer's part of a sync from several (SyncRequest.All):
// the fields of SyncProgress, for that peer.
type SyncShare struct {
	Peer     string `json:"peer"`
	Received uint64 `json:"received"`
	Stored   uint64 `json:"stored"`
	Dropped  uint64 `json:"dropped"`
	Cursor   uint64 `json:"cursor"`
	PeerHead uint64 `json:"peer_head"`
	Done     bool   `json:"done"`
}

// SyncProgress is one line of the PathSync stream. Counts are cumulative
// since the start of this sync.
type SyncProgress struct {
	// Peer is the peer ID being synced.
	Peer string `json:"peer"`
	// Received counts the events received from the peer.
	Received uint64 `json:"received"`
	// Stored counts the received events that were new and valid.
	Stored uint64 `json:"stored"`
	// Dropped counts the received events that were invalid.
	Dropped uint64 `json:"dropped"`
	// Cursor is how far the peer's log has been synced.
	Cursor uint64 `json:"cursor"`
	// PeerHead is the peer's head as last known; Cursor reaches it when the
	// sync is done (the peer may have grown since).
	PeerHead uint64 `json:"peer_head"`
	// Done is set on the last line of a successful sync.
	Done bool `json:"done"`
	// Error is set on the last line of a failed sync.
	Error string `json:"error,omitempty"`
	// Shares are each peer's part of a sync from several (SyncRequest.All),
	// whose line has Peer "", the counts summed over the peers, Cursor 0
	// and PeerHead the highest of the peers' heads.
	Shares []SyncShare `json:"shares,omitempty"`
}

// ErrorBody is the body of every non-2xx response.
type ErrorBody struct {
	Error string `json:"error"`
}

// PathDashboard answers GET with a Dashboard; 404 when the dashboard is
// off (api.dashboard_addr = "").
const PathDashboard = "/v1/dashboard"

// Dashboard is where the daemon serves its web dashboard (GET
// PathDashboard).
type Dashboard struct {
	// URL is the dashboard's address with its access token, which the
	// daemon makes anew at each start, as the path's first segment:
	// http://HOST:PORT/TOKEN/
	URL string `json:"url"`
}
