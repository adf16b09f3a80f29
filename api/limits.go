package api

// Paths of the admission views (ADR 0024).
const (
	// PathLimits answers GET with Limits: the effective rate limits.
	PathLimits = "/v1/limits"
	// PathDiag answers GET with Diag: the admission counters.
	PathDiag = "/v1/diag"
)

// RequestLimit is the effective limit of one request type (ADR 0014).
type RequestLimit struct {
	// Type is the wire type: hello, sync, replicate or crash_report.
	Type string `json:"type"`
	// Key is the config key that sets it, e.g. "limits.sync_per_min".
	Key string `json:"key"`
	// PerMin is the rate in requests a minute per peer; 0 means unlimited.
	PerMin int `json:"per_min"`
	// Burst is how many requests a peer with a full bucket may make at
	// once: max(1, per_min/4); 0 when unlimited.
	Burst int `json:"burst"`
	// IntervalNs is the time one token takes to refill, in nanoseconds; 0
	// when unlimited.
	IntervalNs int64 `json:"interval_ns"`
}

// Limits is the answer of GET PathLimits.
type Limits struct {
	Requests []RequestLimit `json:"requests"`
	// BlobFetchesPerPeer is limits.blob_fetches_per_peer.
	BlobFetchesPerPeer int `json:"blob_fetches_per_peer"`
	// Challenge, ChallengeBaseBits and ChallengeMaxBits are the load
	// challenge's keys (ADR 0014 addendum).
	Challenge         bool `json:"challenge"`
	ChallengeBaseBits int  `json:"challenge_base_bits"`
	ChallengeMaxBits  int  `json:"challenge_max_bits"`
	// OverloadInFlight and SolvedPerMin are ADR 0014's fields without a key.
	OverloadInFlight int `json:"overload_in_flight"`
	SolvedPerMin     int `json:"solved_per_min"`
	// MaxTrackedPeers is the most peers whose bucket state is kept at once.
	MaxTrackedPeers int `json:"max_tracked_peers"`
	// MissPerMin, SuspectPercent and ValuedPercent are the keys of the
	// miss budget and the tiers, StrangerReportPerMin the strangers'
	// shared crash-report budget (docs/adr/0030).
	MissPerMin           int `json:"miss_per_min"`
	SuspectPercent       int `json:"suspect_percent"`
	ValuedPercent        int `json:"valued_percent"`
	StrangerReportPerMin int `json:"stranger_report_per_min"`
	// Gossip is the budgets of what peers send by gossip (docs/adr/0031).
	Gossip GossipLimits `json:"gossip"`
	// Tiers are the effective rates of each tier.
	Tiers []TierLimits `json:"tiers"`
}

// GossipLimits are the gossip budgets (the [limits] keys of docs/adr/0031),
// in envelopes or events a minute; 0 means unlimited.
type GossipLimits struct {
	// PerPeer is limits.gossip_per_min, Strangers
	// limits.stranger_gossip_per_min.
	PerPeer   int `json:"gossip_per_min"`
	Strangers int `json:"stranger_gossip_per_min"`
	// PerAuthor is limits.author_per_min, NewAuthors
	// limits.stranger_author_per_min, and NewAuthorMinutes how long an
	// author is new (limits.new_author_minutes).
	PerAuthor        int `json:"author_per_min"`
	NewAuthors       int `json:"stranger_author_per_min"`
	NewAuthorMinutes int `json:"new_author_minutes"`
	// NewAuthorsBySync is limits.stranger_sync_per_min: events of new
	// authors from the sync pages of peers without standing, all together
	// (docs/adr/0041).
	NewAuthorsBySync int `json:"stranger_sync_per_min"`
}

// TierLimits are the rates a peer of one tier gets.
type TierLimits struct {
	// Tier is "suspect", "new", "normal" or "valued".
	Tier string `json:"tier"`
	// PerMin maps each request type, and "miss", to its rate in requests
	// a minute per peer; 0 means unlimited.
	PerMin map[string]int `json:"per_min"`
}

// RequestCounts are the admission decisions for one request type since the
// daemon started.
type RequestCounts struct {
	Type     string `json:"type"`
	Accepted uint64 `json:"accepted"`
	Refused  uint64 `json:"refused"`
}

// Diag is the answer of GET PathDiag: counters without peer identities.
type Diag struct {
	Requests []RequestCounts `json:"requests"`
	// SharedAtCap counts requests of untracked peers decided on the shared
	// newcomer budget because the table of tracked peers was full (part of
	// the counts above).
	SharedAtCap uint64 `json:"shared_at_cap"`
	// TrackedPeers is the number of peers whose bucket state is kept.
	TrackedPeers int `json:"tracked_peers"`
	// PeerLinesLogged counts the peer-caused log lines written ("peer
	// throttled" among them), within their caps.
	PeerLinesLogged uint64 `json:"peer_lines_logged"`
}
