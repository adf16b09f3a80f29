package limits

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/wats-network/wats/core"
)

// Bounds of the [limits] table. The values come from the operator's config
// file, not from peers, but a typo must not turn into an unbounded resource
// or an arithmetic surprise: each bound says why it exists.
const (
	// MaxPerMin is the largest per-minute rate (the keys *_per_min, and
	// solved_per_min): core.MaxPerMin.
	MaxPerMin = core.MaxPerMin

	// MinBlobFetchesPerPeer and MaxBlobFetchesPerPeer bound
	// limits.blob_fetches_per_peer (ADR 0014: 4 by default). At least one
	// slot, or replication from that peer could never fetch anything; at
	// most 64, the most blobs one replicate request names (docs/design.md §4), so a
	// larger value could never be used by one request.
	MinBlobFetchesPerPeer = 1
	MaxBlobFetchesPerPeer = core.MaxReplicateBlobs

	// MinChallengeBits and core.MaxChallengeEffort bound
	// limits.challenge_base_bits and limits.challenge_max_bits: a requester
	// gives up above core.MaxChallengeEffort, so a node never asks for more;
	// 0 bits would be no work at all.
	MinChallengeBits = 1

	// MinOverloadInFlight and MaxOverloadInFlight bound OverloadInFlight (no
	// key; ADR 0014: 64). Below 1 the node would always be overloaded; above
	// 1,000,000, the most streams the resource manager can allow
	// (p2p.max_streams), it would never be.
	MinOverloadInFlight = 1
	MaxOverloadInFlight = 1_000_000

	// MinSolvedPerMin and MaxPerMin bound SolvedPerMin (no key;
	// ADR 0014: 1,200): the global ceiling of solved requests a minute.
	// Below 1 a solution would buy nothing (limits.challenge = false is the
	// way to turn challenges off).
	MinSolvedPerMin = 1

	// MinSuspectPercent and MaxSuspectPercent bound limits.suspect_percent:
	// a suspect gets at least 1% of ADR 0014's rates (0% would lock a peer
	// out for good on the evidence of counts), at most all of them.
	MinSuspectPercent = 1
	MaxSuspectPercent = 100

	// MinValuedPercent and MaxValuedPercent bound limits.valued_percent,
	// the ceiling of a valued peer's rates: never below ADR 0014's, at
	// most ten times them, so that no history buys an unbounded budget.
	MinValuedPercent = 100
	MaxValuedPercent = 1000

	// MinNewAuthorMinutes and MaxNewAuthorMinutes bound
	// limits.new_author_minutes: at least a minute (less, and a flood of
	// fresh keys is established before its first budget has refilled), at
	// most a day.
	MinNewAuthorMinutes = 1
	MaxNewAuthorMinutes = 1440
)

// Config is the [limits] table of config.toml (ADR 0014, docs/design.md §11): the
// per-peer rates of the four request types, the blob fetch slots, and the
// settings of the load challenge. The config package embeds it; its toml
// tags are ADR 0014's keys, and its json tags the same names, for
// `wats limits --json`.
//
// The zero value is not valid; start from DefaultConfig. Each field gives
// its key, unit, range and default; Validate enforces the ranges.
type Config struct {
	// HelloPerMin (key limits.hello_per_min) is the rate of hello requests
	// from one peer, in requests a minute: 0..MaxPerMin, 0 means unlimited.
	// Default 60 (a burst of 15, then one a second).
	HelloPerMin int `toml:"hello_per_min" json:"hello_per_min"`

	// SyncPerMin (key limits.sync_per_min) is the rate of sync requests
	// (pages of up to 256 events) from one peer, in requests a minute:
	// 0..MaxPerMin, 0 means unlimited. Default 600 (150, then 10 a second).
	SyncPerMin int `toml:"sync_per_min" json:"sync_per_min"`

	// ReplicatePerMin (key limits.replicate_per_min) is the rate of
	// replicate requests from one peer, in requests a minute: 0..MaxPerMin,
	// 0 means unlimited. Default 120 (30, then 2 a second).
	ReplicatePerMin int `toml:"replicate_per_min" json:"replicate_per_min"`

	// ReportPerMin (key limits.report_per_min) is the rate of crash_report
	// requests from one peer, in requests a minute: 0..MaxPerMin, 0 means
	// unlimited. Default 10 (2, then one every 6 s).
	ReportPerMin int `toml:"report_per_min" json:"report_per_min"`

	// BlobFetchesPerPeer (key limits.blob_fetches_per_peer) is how many
	// blobs one peer can make this node fetch at once (replicate requests):
	// MinBlobFetchesPerPeer..MaxBlobFetchesPerPeer. Default 4. Further
	// blobs of a request are skipped (ADR 0014); see Slots.
	BlobFetchesPerPeer int `toml:"blob_fetches_per_peer" json:"blob_fetches_per_peer"`

	// Challenge (key limits.challenge) turns on the load challenge (ADR
	// 0014 addendum); false means refusals only, and the node still solves
	// the challenges of others. Default true.
	Challenge bool `toml:"challenge" json:"challenge"`

	// ChallengeBaseBits (key limits.challenge_base_bits) is the effort of a
	// challenge without pressure, in leading zero bits:
	// MinChallengeBits..ChallengeMaxBits. Default 8.
	ChallengeBaseBits int `toml:"challenge_base_bits" json:"challenge_base_bits"`

	// ChallengeMaxBits (key limits.challenge_max_bits) is the most effort
	// the adaptive controller asks for, in leading zero bits:
	// ChallengeBaseBits..core.MaxChallengeEffort. Default 24.
	ChallengeMaxBits int `toml:"challenge_max_bits" json:"challenge_max_bits"`

	// OverloadInFlight (no key, ADR 0014: "overload_in_flight (64)"): the
	// node is overloaded with more than this many /wats requests in flight.
	// MinOverloadInFlight..MaxOverloadInFlight. Default 64.
	OverloadInFlight int `toml:"-" json:"overload_in_flight"`

	// SolvedPerMin (no key, ADR 0014: "solved_per_min (1,200)"): the most
	// requests a minute, all peers together, that solutions let through.
	// MinSolvedPerMin..MaxPerMin. Default 1200.
	SolvedPerMin int `toml:"-" json:"solved_per_min"`

	// MissPerMin (key limits.miss_per_min) is the budget of one peer's
	// misses, requests for what never existed here (ClassMiss), in
	// requests a minute, on top of their type's rate: 0..MaxPerMin, 0 means
	// unlimited. Default 30 (a burst of 7). ADR 0030.
	MissPerMin int `toml:"miss_per_min" json:"miss_per_min"`

	// SuspectPercent (key limits.suspect_percent) is the share of every
	// rate above that a suspect peer gets (TierSuspect), in percent:
	// MinSuspectPercent..MaxSuspectPercent, at least one request a minute.
	// Default 10. ADR 0030.
	SuspectPercent int `toml:"suspect_percent" json:"suspect_percent"`

	// ValuedPercent (key limits.valued_percent) is the ceiling of a valued
	// peer's rates (TierValued), in percent of the rates above:
	// MinValuedPercent..MaxValuedPercent. Default 200. ADR 0030.
	ValuedPercent int `toml:"valued_percent" json:"valued_percent"`

	// StrangerReportPerMin (key limits.stranger_report_per_min) is the
	// rate of crash_report requests from all strangers together (peers
	// without a record: new and suspect), in requests a minute, on top of
	// each one's report_per_min: 0..MaxPerMin, 0 means unlimited. Default
	// 600 (a burst of 150, then 10 a second). Every report is a durable
	// append to the log, and ids are free: without it, a flood of fresh
	// ids grows the log without bound. ADR 0030.
	StrangerReportPerMin int `toml:"stranger_report_per_min" json:"stranger_report_per_min"`

	// GossipPerMin (key limits.gossip_per_min) is the rate of gossip
	// envelopes one peer may forward to this node, in envelopes a minute:
	// 0..MaxPerMin, 0 means unlimited. Default 6000 (a burst of 1,500,
	// then 100 a second). Suspects get suspect_percent of it, valued peers
	// valued_percent. Over it, an envelope is ignored before any signature
	// is checked: not stored, not forwarded. ADR 0031.
	GossipPerMin int `toml:"gossip_per_min" json:"gossip_per_min"`

	// StrangerGossipPerMin (key limits.stranger_gossip_per_min) is the
	// rate of gossip envelopes of new authors (NewAuthorMinutes) all
	// strangers together (peers without a record: new and suspect) may
	// forward, on top of each one's gossip_per_min: 0..MaxPerMin, 0 means
	// unlimited. Default 1200 (300, then 20 a second). Envelopes of
	// established authors take from the forwarder's own budget only. ADR
	// 0031.
	StrangerGossipPerMin int `toml:"stranger_gossip_per_min" json:"stranger_gossip_per_min"`

	// AuthorPerMin (key limits.author_per_min) is the rate of new events of
	// one author this node stores from gossip, in events a minute:
	// 0..MaxPerMin, 0 means unlimited. Default 600 (150, then 10 a
	// second). A suspect author gets suspect_percent, a valued one
	// valued_percent; a new author (NewAuthorMinutes) shares
	// stranger_author_per_min on top. ADR 0031.
	AuthorPerMin int `toml:"author_per_min" json:"author_per_min"`

	// StrangerAuthorPerMin (key limits.stranger_author_per_min) is the
	// rate of gossiped events of new authors (see NewAuthorMinutes), all
	// such authors together, on top of each one's author_per_min:
	// 0..MaxPerMin, 0 means unlimited. Default 600 (150, then 10 a
	// second): fresh keys cost nothing, so together they get this much, and
	// a new network of a few nodes publishing fits in it. ADR 0031.
	StrangerAuthorPerMin int `toml:"stranger_author_per_min" json:"stranger_author_per_min"`

	// NewAuthorMinutes (key limits.new_author_minutes) is how long an
	// author stays a new author after this node stored its first event, in
	// minutes: MinNewAuthorMinutes..MaxNewAuthorMinutes. Default 10, ADR
	// 0014's age of reputation. A new author that is not a peer with a
	// record shares stranger_author_per_min with all the others, and the
	// envelopes it is in take from the forwarders' strangers' share; an
	// established one has its own budget. ADR 0031.
	NewAuthorMinutes int `toml:"new_author_minutes" json:"new_author_minutes"`

	// StrangerSyncPerMin (key limits.stranger_sync_per_min) is the rate of
	// events of new authors (NewAuthorMinutes) this node stores from the
	// sync pages of peers without standing (peers it did not dial that are
	// neither reputed nor valued nor established authors), all such peers
	// together, in events a minute: 0..MaxPerMin, 0 means unlimited.
	// Default 6000 (a burst of 1,500, then 100 a second): a peer that joins
	// with a history of a few thousand events of its own is synced at
	// once, and ids that complete hello make the node store no more than
	// this of their own events whatever their number. A page from such a
	// peer waits for a token and is charged the events it brought. ADR
	// 0041.
	StrangerSyncPerMin int `toml:"stranger_sync_per_min" json:"stranger_sync_per_min"`

	// StrangerDHTPerMin (key limits.stranger_dht_per_min) is the rate of
	// DHT requests all strangers together (peers without a record) may
	// send to each of this node's DHT servers (the network's, the LAN's),
	// on top of each one's own budget, in requests a minute: 0..MaxPerMin,
	// 0 means unlimited. Default 12000 (a burst of 3,000, then 200 a
	// second): fresh ids, which cost nothing, buy no more than this
	// together; a stranger that completed hello draws a greeted allowance
	// before it, and the allowances solved challenges pay for come to no
	// more requests than this a minute either (SolvedGreetingsPerMin, ADR
	// 0059). ADR 0040.
	StrangerDHTPerMin int `toml:"stranger_dht_per_min" json:"stranger_dht_per_min"`
}

// GossipBudget returns the BudgetRate of the gossip envelopes peers forward
// (limits.gossip_per_min, limits.stranger_gossip_per_min; ADR 0031).
func (c Config) GossipBudget() BudgetRate {
	return BudgetRate{PerMin: c.GossipPerMin, StrangersPerMin: c.StrangerGossipPerMin,
		SuspectPercent: c.SuspectPercent, ValuedPercent: c.ValuedPercent}
}

// AuthorBudget returns the BudgetRate of the new events of each author
// (limits.author_per_min, limits.stranger_author_per_min; ADR 0031).
func (c Config) AuthorBudget() BudgetRate {
	return BudgetRate{PerMin: c.AuthorPerMin, StrangersPerMin: c.StrangerAuthorPerMin,
		SuspectPercent: c.SuspectPercent, ValuedPercent: c.ValuedPercent}
}

// DefaultConfig returns ADR 0014's defaults: hello 60, sync 600, replicate
// 120, crash_report 10 a minute per peer; 4 blob fetches per peer;
// challenges on, 8 to 24 bits; overloaded above 64 requests in flight; at
// most 1,200 solved requests a minute. And ADR 0030's: 30 misses a minute
// per peer, suspects at 10% of the rates, valued peers at most 200%,
// strangers' crash reports 600 a minute together. And ADR 0031's: gossip
// envelopes 6,000 a minute per peer and 1,200 from all strangers, new
// events 600 a minute per author and 600 from all new authors. And ADR
// 0041's: 6,000 events of new authors a minute from the sync pages of
// peers without standing. And ADR 0040's: 12,000 DHT requests a minute
// from all strangers to each DHT.
func DefaultConfig() Config {
	return Config{
		HelloPerMin:        60,
		SyncPerMin:         600,
		ReplicatePerMin:    120,
		ReportPerMin:       10,
		BlobFetchesPerPeer: 4,
		Challenge:          true,
		ChallengeBaseBits:  core.DefaultChallengeBaseBits,
		ChallengeMaxBits:   core.DefaultChallengeMaxBits,
		OverloadInFlight:   64,
		SolvedPerMin:       core.DefaultSolvedPerMin,
		MissPerMin:         30,
		SuspectPercent:     10,
		ValuedPercent:      200,

		StrangerReportPerMin: 600,

		GossipPerMin:         6000,
		StrangerGossipPerMin: 1200,
		AuthorPerMin:         600,
		StrangerAuthorPerMin: 600,
		NewAuthorMinutes:     int(core.ReputationAge / time.Minute),
		StrangerSyncPerMin:   6000,
		StrangerDHTPerMin:    12000,
	}
}

// PerMin returns the configured rate of k in requests a minute (0 means
// unlimited), or 0 for an invalid request type.
func (c Config) PerMin(k core.Request) int {
	switch k {
	case core.Hello:
		return c.HelloPerMin
	case core.Sync:
		return c.SyncPerMin
	case core.Replicate:
		return c.ReplicatePerMin
	case core.CrashReport:
		return c.ReportPerMin
	}
	return 0
}

// Rate returns the Rate of k, with ADR 0014's burst; an out-of-range value
// is an error wrapping ErrBadRate (Validate reports it better).
func (c Config) Rate(k core.Request) (Rate, error) {
	r, err := NewRate(c.PerMin(k))
	if err != nil {
		return Rate{}, fmt.Errorf("%s: %w", RateKey(k), err)
	}
	return r, nil
}

// ErrInvalid is the kind of every problem Validate reports: errors.Is(err,
// ErrInvalid) holds for each *ConfigError.
var ErrInvalid = errors.New("limits: invalid value")

// ConfigError is one out-of-range value of a Config. Its fields let the
// config package place the problem in the file (Key) and word it its own
// way; Error gives a complete message on its own, e.g.
//
//	limits: limits.sync_per_min = 60001: above the maximum 60000; allowed: 0..60000 requests a minute per peer, 0 means unlimited
type ConfigError struct {
	// Key is the full dotted key, e.g. "limits.sync_per_min"; for the
	// fields without a key, "limits." and the field's snake-case name.
	Key string
	// Value is the value found.
	Value int
	// Problem says what is wrong, e.g. "below the minimum 1".
	Problem string
	// Allowed says what is allowed and what 0 means where it means
	// something, e.g. "0..60000 requests a minute per peer, 0 means
	// unlimited".
	Allowed string
}

// Error formats the problem as "limits: KEY = VALUE: PROBLEM; allowed: ALLOWED".
func (e *ConfigError) Error() string {
	return "limits: " + e.Key + " = " + strconv.Itoa(e.Value) + ": " + e.Problem + "; allowed: " + e.Allowed
}

// Is reports whether target is ErrInvalid.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalid }

// Validate checks every field against its range and returns all the
// problems joined with errors.Join (each a *ConfigError), or nil.
func (c Config) Validate() error {
	var errs []error
	bad := func(key string, v int, problem, allowed string) {
		errs = append(errs, &ConfigError{Key: key, Value: v, Problem: problem, Allowed: allowed})
	}
	check := func(key string, v, lo, hi int, allowed string) {
		switch {
		case v < lo:
			bad(key, v, "below the minimum "+strconv.Itoa(lo), allowed)
		case v > hi:
			bad(key, v, "above the maximum "+strconv.Itoa(hi), allowed)
		}
	}
	rate := fmt.Sprintf("0..%d requests a minute per peer, 0 means unlimited", MaxPerMin)
	for _, k := range core.Requests() {
		check(RateKey(k), c.PerMin(k), 0, MaxPerMin, rate)
	}
	check("limits.blob_fetches_per_peer", c.BlobFetchesPerPeer, MinBlobFetchesPerPeer, MaxBlobFetchesPerPeer,
		fmt.Sprintf("%d..%d blobs fetched at once for one peer", MinBlobFetchesPerPeer, MaxBlobFetchesPerPeer))
	bits := fmt.Sprintf("%d..%d leading zero bits", MinChallengeBits, core.MaxChallengeEffort)
	check("limits.challenge_base_bits", c.ChallengeBaseBits, MinChallengeBits, core.MaxChallengeEffort,
		bits+", at most limits.challenge_max_bits")
	check("limits.challenge_max_bits", c.ChallengeMaxBits, MinChallengeBits, core.MaxChallengeEffort,
		bits+", at least limits.challenge_base_bits")
	inBits := func(v int) bool { return v >= MinChallengeBits && v <= core.MaxChallengeEffort }
	if inBits(c.ChallengeBaseBits) && inBits(c.ChallengeMaxBits) && c.ChallengeBaseBits > c.ChallengeMaxBits {
		bad("limits.challenge_base_bits", c.ChallengeBaseBits,
			fmt.Sprintf("above limits.challenge_max_bits (%d)", c.ChallengeMaxBits),
			bits+", at most limits.challenge_max_bits")
	}
	check("limits.overload_in_flight", c.OverloadInFlight, MinOverloadInFlight, MaxOverloadInFlight,
		fmt.Sprintf("%d..%d /wats requests in flight (a field without a config key)",
			MinOverloadInFlight, MaxOverloadInFlight))
	check("limits.solved_per_min", c.SolvedPerMin, MinSolvedPerMin, MaxPerMin,
		fmt.Sprintf("%d..%d solved requests a minute, all peers together (a field without a config key)",
			MinSolvedPerMin, MaxPerMin))
	check("limits.miss_per_min", c.MissPerMin, 0, MaxPerMin,
		fmt.Sprintf("0..%d misses a minute per peer, 0 means unlimited", MaxPerMin))
	check("limits.suspect_percent", c.SuspectPercent, MinSuspectPercent, MaxSuspectPercent,
		fmt.Sprintf("%d..%d percent of the rates", MinSuspectPercent, MaxSuspectPercent))
	check("limits.valued_percent", c.ValuedPercent, MinValuedPercent, MaxValuedPercent,
		fmt.Sprintf("%d..%d percent of the rates", MinValuedPercent, MaxValuedPercent))
	check("limits.stranger_report_per_min", c.StrangerReportPerMin, 0, MaxPerMin,
		fmt.Sprintf("0..%d crash reports a minute from all strangers together, 0 means unlimited", MaxPerMin))
	check("limits.gossip_per_min", c.GossipPerMin, 0, MaxPerMin,
		fmt.Sprintf("0..%d gossip envelopes a minute per forwarding peer, 0 means unlimited", MaxPerMin))
	check("limits.stranger_gossip_per_min", c.StrangerGossipPerMin, 0, MaxPerMin,
		fmt.Sprintf("0..%d gossip envelopes a minute from all strangers together, 0 means unlimited", MaxPerMin))
	check("limits.author_per_min", c.AuthorPerMin, 0, MaxPerMin,
		fmt.Sprintf("0..%d new events a minute per author, 0 means unlimited", MaxPerMin))
	check("limits.stranger_author_per_min", c.StrangerAuthorPerMin, 0, MaxPerMin,
		fmt.Sprintf("0..%d events a minute of all new authors together, 0 means unlimited", MaxPerMin))
	check("limits.new_author_minutes", c.NewAuthorMinutes, MinNewAuthorMinutes, MaxNewAuthorMinutes,
		fmt.Sprintf("%d..%d minutes", MinNewAuthorMinutes, MaxNewAuthorMinutes))
	check("limits.stranger_sync_per_min", c.StrangerSyncPerMin, 0, MaxPerMin,
		fmt.Sprintf("0..%d events a minute of new authors from the sync pages of all peers without standing, 0 means unlimited", MaxPerMin))
	check("limits.stranger_dht_per_min", c.StrangerDHTPerMin, 0, MaxPerMin,
		fmt.Sprintf("0..%d DHT requests a minute from all strangers together, 0 means unlimited", MaxPerMin))
	return errors.Join(errs...)
}
