package metrics

import (
	"slices"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/proto"
)

// Metrics are the node's Prometheus metrics. None carries a peer ID or an
// address as a label (docs/design.md §12); labels are request types, sources and
// error codes, all from small fixed sets. The methods count; the gauges
// and the collectors read the node through Sources at each scrape.
type Metrics struct {
	reg *prometheus.Registry

	requests      *prometheus.CounterVec // by request type
	badRequests   *prometheus.CounterVec // by error code
	stored        *prometheus.CounterVec // by source: local, gossip, sync
	dropped       *prometheus.CounterVec // by source
	served        prometheus.Counter     // events sent in sync pages
	wrongNetworks prometheus.Counter
	syncBusyN     prometheus.Counter // sync requests refused for want of memory
	syncRefusedN  prometheus.Counter // this node's sync requests that a peer refused
	syncOverQuota prometheus.Counter // synced events the log's quota refused

	challengesIssued prometheus.Counter
	challengesSolved prometheus.Counter
	challengesFailed *prometheus.CounterVec // by reason
	gossipRejects    prometheus.Counter
	gossipIgnores    *prometheus.CounterVec // envelopes ignored, by reason
	syncGaps         prometheus.Counter     // envelopes gossip dropped for want of room
	headsStreams     prometheus.Counter     // heads streams this node opened
	headsFrames      *prometheus.CounterVec // heads announcements, by direction
	headsPulls       *prometheus.CounterVec // pulls on announcements, by outcome
	blobFetches      *prometheus.CounterVec // by source and outcome
	blobBytes        *prometheus.CounterVec // by direction and class
	blobImports      *prometheus.CounterVec // by via and outcome

	misses         *prometheus.CounterVec // requests that asked for what never existed, by type
	streamsRefused *prometheus.CounterVec // streams reset over a per-peer cap, by kind
	dhtRefusals    prometheus.Counter     // DHT requests refused over the peer's budget
	streamTimeouts *prometheus.CounterVec // streams reset past a deadline, by kind
	tierChanges    *prometheus.CounterVec // peers that moved to a tier, by tier
	persisted      *prometheus.CounterVec // peers given a peer-cache record, by the value they showed
	deferred       prometheus.Counter     // records put off by the budget of new records
	reportsShared  prometheus.Counter     // strangers' crash reports refused by their shared budget
	strangerEvicts *prometheus.CounterVec // strangers evicted for a newcomer, by tier
	bans           *prometheus.CounterVec // peers disconnected and refused for a while, by reason
	strangersBusy  prometheus.Counter     // strangers refused at the gater: slots and their slack full

	// The children of requests and misses for each request type, made
	// once: the request path then adds to them without the vectors' lock.
	requestsByKind [core.NumRequests]prometheus.Counter
	missesByKind   [core.NumRequests]prometheus.Counter

	droppedN atomic.Uint64 // sum of dropped and gossipRejects, for the status
	// The challenge counters again, for the status.
	issuedN, solvedN, failedN atomic.Uint64
}

// Sources are what the metrics read of the node at each scrape; a nil
// field reads as nothing (0, or no sample).
type Sources struct {
	// Effort is the challenge's effort now, in bits.
	Effort func() float64
	// InFlight is the /wats requests being handled.
	InFlight func() float64
	// Head is the position of the newest event in the log.
	Head func() float64
	// Peers is the connected peers that completed hello.
	Peers func() float64
	// StrangerSlots is the stranger slots held.
	StrangerSlots func() float64
	// QuotaUsed is the bytes of complete blobs against blobs.quota_bytes.
	QuotaUsed func() float64
	// Exchange is the blob exchange's counts: blocks nobody asked their
	// sender for, bytes accepted, rewants.
	Exchange func() (unsolicited, received, rewants uint64)
	// DB is pebble's metrics.
	DB func() *pebble.Metrics
	// ScoreBands is the peers of the gossip topic by score band name.
	ScoreBands func() map[string]int
	// Log is what the event log holds (events, bytes, authors) and the
	// synced batches it committed; ok false while there is no log.
	Log func() (events, bytes, authors, commits uint64, ok bool)
	// Disk is the disk guard's last look: free bytes, and whether writes
	// are refused; ok false before the first.
	Disk func() (free uint64, full, ok bool)
	// Bandwidth is the traffic of the node's streams against [bandwidth]
	// (docs/adr/0048).
	Bandwidth func() Bandwidth
}

// Bandwidth is what the metrics read of the node's traffic
// (bandwidth.Counts has the same fields): the bytes sent (Up) and
// received (Down) on its streams since it started; the caps, in bytes a
// second, 0 unlimited; the bytes sent this calendar month and the monthly
// cap (0 none); the grants of the caps that had to wait, by direction (0
// up, 1 down) and class (0 standing, 1 stranger).
type Bandwidth struct {
	Up, Down              uint64
	UpCap, DownCap        uint64
	MonthUp, MonthlyUpCap uint64
	Waits                 [2][2]uint64
}

// New returns the metrics of a node read through src, registered in a
// registry of their own (Registry) with Go's and the process's collectors.
func New(src Sources) *Metrics {
	n := sources(src)
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "wats_requests_total", Help: "Decoded /wats/1 requests, by type.",
	}, []string{"type"})
	m.badRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "wats_bad_requests_total", Help: "/wats/1 requests refused as malformed, by error code (too_large: a frame over the request cap; frame: unreadable frame).",
	}, []string{"code"})
	m.stored = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "wats_events_stored_total", Help: "Events added to the log, by source.",
	}, []string{"source"})
	m.dropped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "wats_events_dropped_total", Help: "Invalid events dropped, by source.",
	}, []string{"source"})
	m.served = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "wats_sync_events_served_total", Help: "Events sent to peers in sync pages.",
	})
	m.wrongNetworks = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "wats_wrong_network_total", Help: "Peers found to be on another network and disconnected.",
	})
	m.syncBusyN = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "wats_sync_busy_total", Help: "Sync requests answered 'too busy' because the resource manager had no memory for a page.",
	})
	m.syncRefusedN = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "wats_sync_client_refused_total", Help: "Sync requests of this node that a peer refused as over its rate limit.",
	})
	m.syncOverQuota = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "wats_sync_over_quota_total", Help: "Synced events, valid and new, that the log's quota ([events]) refused; gossip counts its own in wats_gossip_ignored_total{reason=\"quota\"}.",
	})
	m.challengesIssued = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "wats_challenges_issued_total", Help: "b3 challenges sent to peers (ADR 0014).",
	})
	m.challengesSolved = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "wats_challenges_solved_total", Help: "Requests let through by a valid solution.",
	})
	m.challengesFailed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "wats_challenges_failed_total", Help: "Solutions refused, by reason (alg, seed, mac, expired, nonce, work, replayed, ceiling).",
	}, []string{"reason"})
	effort := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "wats_challenge_effort_bits", Help: "Current effort of the b3 challenge, in leading zero bits.",
	}, n.Effort)
	inFlight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "wats_requests_in_flight", Help: "/wats requests being handled.",
	}, n.InFlight)
	m.gossipRejects = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "wats_gossip_rejected_total", Help: "Gossip envelopes rejected by the validator.",
	})
	head := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "wats_log_head", Help: "Position of the newest event in the local log.",
	}, n.Head)
	peers := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "wats_peers", Help: "Connected peers that completed hello.",
	}, n.Peers)
	m.blobBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "wats_blob_bytes_total", Help: "Bytes of blob blocks served to peers (served: sent by the bitswap server) and fetched from them (fetched: accepted by a fetch), by the peer's class: standing (a peer with standing, docs/adr/0048) or stranger.",
	}, []string{"direction", "class"})
	m.blobFetches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "wats_blob_fetches_total",
		Help: "Blob fetches, by source (gossip, sync, crash_report, replicate, api) and outcome (stored, refused: over max_blob_bytes or the quota before any request, invalid: not what the event declares, failed: no provider served it, skipped: over the peer's fetch slots, dropped: auto-fetch queue full).",
	}, []string{"source", "outcome"})
	m.blobImports = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "wats_blob_imports_total",
		Help: "Blobs imported through the control API, by via (descriptor: a file the CLI passed open on the socket, upload: the bytes in the request) and outcome (stored, refused: over max_blob_bytes or the quota, failed).",
	}, []string{"via", "outcome"})
	blobExchange := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "wats_blob_unsolicited_blocks_total", Help: "Bitswap blocks received that no fetch asked their sender for; dropped, never stored.",
	}, func() float64 {
		u, _, _ := n.Exchange()
		return float64(u)
	})
	blobBytes := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "wats_blob_received_bytes_total", Help: "Bytes of bitswap blocks accepted by fetches.",
	}, func() float64 {
		_, r, _ := n.Exchange()
		return float64(r)
	})
	rewants := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "wats_blob_rewants_total", Help: "Times a fetch sent its wants in flight to its provider again: a silent third of the idle timeout, or one of several connections to it closed.",
	}, func() float64 {
		_, _, w := n.Exchange()
		return float64(w)
	})
	quota := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "wats_blob_quota_used_bytes", Help: "Bytes of complete blobs, as blobs.quota_bytes counts them.",
	}, n.QuotaUsed)
	m.misses = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "wats_requests_missed_total", Help: "Requests that asked for what never existed here (a cursor past the head, blobs no event names, a crash report held already), by type (ADR 0030).",
	}, []string{"type"})
	m.streamsRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "wats_streams_refused_total", Help: "Inbound streams reset because the peer held its cap of them, by kind (unnegotiated, wats, bitswap, protocol).",
	}, []string{"kind"})
	m.dhtRefusals = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "wats_dht_requests_refused_total", Help: "DHT requests refused because the peer was over its budget of them (docs/adr/0040).",
	})
	m.streamTimeouts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "wats_stream_timeouts_total", Help: "Inbound streams reset because they were held past a deadline (negotiation, wats: the request's first bytes, bitswap: the first message).",
	}, []string{"kind"})
	m.tierChanges = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "wats_peer_tier_changes_total", Help: "Connected peers whose tier changed, by the new tier (ADR 0030).",
	}, []string{"tier"})
	m.persisted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "wats_peers_persisted_total", Help: "Peers given a peer-cache record, by the value they showed first (connected, events, blobs, solved).",
	}, []string{"value"})
	m.deferred = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "wats_peer_records_deferred_total", Help: "Peers that showed value but got no peer-cache record yet: the budget of new records a minute was spent (ADR 0030); they are tried again every 5 s.",
	})
	m.reportsShared = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "wats_stranger_reports_refused_total", Help: "Crash reports of peers without a record refused because the strangers' shared budget (limits.stranger_report_per_min) was spent.",
	})
	m.strangerEvicts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "wats_strangers_evicted_total", Help: "Peers without a record disconnected to make room for a newcomer in the stranger slots, by tier.",
	}, []string{"tier"})
	m.bans = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "wats_peers_banned_total", Help: "Peers disconnected and refused for a while, by reason (stream flood).",
	}, []string{"reason"})
	m.strangersBusy = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "wats_strangers_refused_total", Help: "Connections of peers without a record refused at the gater: the stranger slots and the evicted strangers still closing filled them and their slack.",
	})
	m.gossipIgnores = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "wats_gossip_ignored_total", Help: "Gossip envelopes ignored (not stored, not forwarded, no score change), by reason: peer_budget (limits.gossip_per_min), author_budget (limits.author_per_min), quota ([events]), held (stored meanwhile by another path), error (a failed write). ADR 0031.",
	}, []string{"reason"})
	for _, r := range []string{"peer_budget", "author_budget", "quota", "held", "error"} {
		m.gossipIgnores.WithLabelValues(r)
	}
	m.syncGaps = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "wats_gossip_gaps_total", Help: "Envelopes gossipsub dropped before validation for want of room (or could not store) from a peer after hello: each asks for a sync from that peer at once (ADR 0031).",
	})
	m.headsStreams = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "wats_heads_streams_total", Help: "Heads streams this node opened to peers, each announcing its head as its log grows (docs/adr/0041).",
	})
	m.headsFrames = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "wats_heads_announcements_total", Help: "Heads announcements, by direction: out (written to peers), in (read from peers). docs/adr/0041.",
	}, []string{"direction"})
	m.headsPulls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "wats_heads_pulls_total", Help: "Sync pages pulled because a peer's announcement named an event this node lacked, by outcome: stored (the cursor moved), busy (a sync from the peer was running), empty (the peer had nothing after the cursor), failed. docs/adr/0041.",
	}, []string{"outcome"})
	for _, d := range []string{"in", "out"} {
		m.headsFrames.WithLabelValues(d)
	}
	for _, o := range []string{"stored", "busy", "empty", "failed"} {
		m.headsPulls.WithLabelValues(o)
	}
	scoreBands := prometheus.NewDesc("wats_gossip_peers_by_score", "Peers of the gossip topic by gossipsub score band: positive, zero, negative (not grafted), no_gossip (below -100), no_publish (below -500), graylisted (below -1000). ADR 0031.", []string{"band"}, nil)
	logUse := prometheus.NewDesc("wats_log_usage", "What the event log holds against its quotas ([events]): events, bytes and authors.", []string{"what"}, nil)
	commits := prometheus.NewDesc("wats_log_commits_total", "Synced batches the event log committed; events stored over this is the group-commit factor (ADR 0031).", nil, nil)
	fsyncs := prometheus.NewDesc("wats_db_wal_fsync_seconds", "Latency of pebble's WAL fsyncs, each the durable write of a group of events (ADR 0017, ADR 0031). A bucket counts the fsyncs that pebble's own, finer histogram puts at or below its bound, so it may undercount by up to a sixth of the bound.", nil, nil)
	dbMemory := prometheus.NewDesc("wats_db_memory_bytes", "Memory pebble holds outside the Go heap, by what: memtables (the live one, those waiting to flush and the one kept for reuse; each up to 16 MiB once written to) and block_cache (up to 64 MiB). Bounded by these sizes, not by traffic; a node's RSS grows by them as it writes and reads, and they are not given back while the database is open.", []string{"what"}, nil)
	m.reg.MustRegister(collectorFunc{descs: []*prometheus.Desc{scoreBands, logUse, commits, fsyncs, dbMemory}, collect: func(ch chan<- prometheus.Metric) {
		if dm := n.DB(); dm != nil {
			if h := dm.LogWriter.FsyncLatency; h != nil {
				if count, buckets, sum, ok := fsyncBuckets(h); ok {
					ch <- prometheus.MustNewConstHistogram(fsyncs, count, sum, buckets)
				}
			}
			ch <- prometheus.MustNewConstMetric(dbMemory, prometheus.GaugeValue, float64(dm.MemTable.Size+dm.MemTable.ZombieSize), "memtables")
			ch <- prometheus.MustNewConstMetric(dbMemory, prometheus.GaugeValue, float64(dm.BlockCache.Size), "block_cache")
		}
		for band, k := range n.ScoreBands() {
			ch <- prometheus.MustNewConstMetric(scoreBands, prometheus.GaugeValue, float64(k), band)
		}
		if events, bytes, authors, commitsN, ok := n.Log(); ok {
			ch <- prometheus.MustNewConstMetric(logUse, prometheus.GaugeValue, float64(events), "events")
			ch <- prometheus.MustNewConstMetric(logUse, prometheus.GaugeValue, float64(bytes), "bytes")
			ch <- prometheus.MustNewConstMetric(logUse, prometheus.GaugeValue, float64(authors), "authors")
			ch <- prometheus.MustNewConstMetric(commits, prometheus.CounterValue, float64(commitsN))
		}
	}})
	tiers := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "wats_stranger_slots_used", Help: "Inbound connections of peers without a peer-cache record (a quarter of p2p.max_conns at most).",
	}, n.StrangerSlots)
	for _, k := range core.Requests() {
		m.requestsByKind[k] = m.requests.WithLabelValues(k.String())
		m.missesByKind[k] = m.misses.WithLabelValues(k.String())
	}
	diskFree := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "wats_disk_free_bytes", Help: "Free bytes of the repo's disk at the disk guard's last look (docs/adr/0044).",
	}, func() float64 {
		free, _, _ := n.Disk()
		return float64(free)
	})
	diskFull := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "wats_disk_full", Help: "1 while writes are refused because the repo's disk is at its reserve (docs/adr/0044).",
	}, func() float64 {
		if _, full, ok := n.Disk(); ok && full {
			return 1
		}
		return 0
	})
	// The labelled counters are exported from the start with every label
	// value the node counts, at 0: each query of docs/grafana has a series
	// before the first count (a panel says 0, not "No data"), and a rate
	// sees the first count rise from 0.
	tierNames := make([]string, 0, limits.NumTiers)
	for t := range limits.NumTiers {
		tierNames = append(tierNames, limits.Tier(t).String())
	}
	zero(m.stored, []string{"local", "gossip", "sync", "crash_report"})
	zero(m.dropped, []string{"sync", "crash_report"})
	zero(m.badRequests, []string{string(proto.CodeTooLarge), string(proto.CodeBadRequest), string(proto.CodeUnsupported), "frame", "heads"})
	zero(m.challengesFailed, []string{"alg", "seed", "mac", "expired", "nonce", "work", "replayed", "ceiling"})
	zero(m.streamsRefused, []string{"unnegotiated", "wats", "bitswap", "protocol"})
	zero(m.streamTimeouts, []string{"negotiation", "wats", "wats_response", "bitswap"})
	zero(m.bans, []string{"stream flood", "gossip spam"})
	zero(m.strangerEvicts, tierNames)
	zero(m.blobBytes, []string{"served", "fetched"}, []string{"standing", "stranger"})
	zero(m.blobFetches, []string{"gossip", "sync", "crash_report", "replicate", "api"},
		[]string{"stored", "refused", "invalid", "failed", "skipped", "dropped"})
	zero(m.blobImports, []string{string(ImportUpload), string(ImportDescriptor)}, []string{"stored", "refused", "failed"})
	m.reg.MustRegister(diskFree, diskFull, bandwidthCollector(n.Bandwidth))
	m.reg.MustRegister(m.gossipIgnores, m.syncGaps, m.headsStreams, m.headsFrames, m.headsPulls)
	m.reg.MustRegister(m.misses, m.streamsRefused, m.dhtRefusals, m.streamTimeouts, m.tierChanges, m.persisted, m.deferred, m.reportsShared, m.strangerEvicts, m.bans, m.strangersBusy, tiers)
	m.reg.MustRegister(m.blobBytes, m.blobFetches, m.blobImports, blobExchange, blobBytes, rewants, quota)
	m.reg.MustRegister(m.requests, m.badRequests, m.stored, m.dropped, m.served,
		m.wrongNetworks, m.syncBusyN, m.syncRefusedN, m.syncOverQuota, m.gossipRejects, head, peers,
		m.challengesIssued, m.challengesSolved, m.challengesFailed, effort, inFlight,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *Metrics) Request(t proto.Type) {
	if k, ok := t.Request(); ok {
		m.requestsByKind[k].Inc()
		return
	}
	m.requests.WithLabelValues(string(t)).Inc()
}
func (m *Metrics) BadRequest(code string) { m.badRequests.WithLabelValues(code).Inc() }
func (m *Metrics) SyncServed(events int)  { m.served.Add(float64(events)) }
func (m *Metrics) SyncBusy()              { m.syncBusyN.Inc() }
func (m *Metrics) ChallengeIssued()       { m.challengesIssued.Inc(); m.issuedN.Add(1) }
func (m *Metrics) ChallengeSolved()       { m.challengesSolved.Inc(); m.solvedN.Add(1) }
func (m *Metrics) ChallengeFailed(reason string) {
	m.challengesFailed.WithLabelValues(reason).Inc()
	m.failedN.Add(1)
}
func (m *Metrics) SyncRefused() { m.syncRefusedN.Inc() }

// SyncOverQuota counts k synced events the log's quota refused.
func (m *Metrics) SyncOverQuota(k int) { m.syncOverQuota.Add(float64(k)) }
func (m *Metrics) BlobFetch(source, outcome string) {
	m.blobFetches.WithLabelValues(source, outcome).Inc()
}
func (m *Metrics) BlobImport(via ImportVia, outcome string) {
	m.blobImports.WithLabelValues(string(via), outcome).Inc()
}

// ImportVia is how a blob reached the node's import, the via label of
// wats_blob_imports_total.
type ImportVia string

const (
	// ImportUpload: the blob's bytes came in a request body.
	ImportUpload ImportVia = "upload"
	// ImportDescriptor: the caller passed the file open on the control
	// socket and the daemon read it (ADR 0036).
	ImportDescriptor ImportVia = "descriptor"
)

func (m *Metrics) WrongNetwork() { m.wrongNetworks.Inc() }

func (m *Metrics) Miss(k core.Request) { m.missesByKind[k].Inc() }
func (m *Metrics) BitswapMiss()        { m.misses.WithLabelValues("bitswap").Inc() }

// BlobBytes counts n bytes of blob blocks served to a peer (served) or
// fetched from one, by its class (standing or not).
func (m *Metrics) BlobBytes(served, standing bool, n uint64) {
	dir, class := "fetched", "stranger"
	if served {
		dir = "served"
	}
	if standing {
		class = "standing"
	}
	m.blobBytes.WithLabelValues(dir, class).Add(float64(n))
}

func (m *Metrics) StreamRefused(kind string)     { m.streamsRefused.WithLabelValues(kind).Inc() }
func (m *Metrics) DhtRefused()                   { m.dhtRefusals.Inc() }
func (m *Metrics) StreamTimeout(kind string)     { m.streamTimeouts.WithLabelValues(kind).Inc() }
func (m *Metrics) TierChange(t limits.Tier)      { m.tierChanges.WithLabelValues(t.String()).Inc() }
func (m *Metrics) PeerPersisted(value string)    { m.persisted.WithLabelValues(value).Inc() }
func (m *Metrics) RecordDeferred()               { m.deferred.Inc() }
func (m *Metrics) StrangerReportRefused()        { m.reportsShared.Inc() }
func (m *Metrics) StrangerEvicted(t limits.Tier) { m.strangerEvicts.WithLabelValues(t.String()).Inc() }
func (m *Metrics) PeerBanned(reason string)      { m.bans.WithLabelValues(reason).Inc() }
func (m *Metrics) HeadsAnnounced(dir string)     { m.headsFrames.WithLabelValues(dir).Inc() }
func (m *Metrics) HeadsPulled(outcome string)    { m.headsPulls.WithLabelValues(outcome).Inc() }
func (m *Metrics) StrangerRefused()              { m.strangersBusy.Inc() }
func (m *Metrics) GossipRejected(error) {
	m.gossipRejects.Inc()
	m.droppedN.Add(1)
}

// GossipIgnored counts an envelope ignored for reason: peer_budget,
// author_budget, quota, held or error.
func (m *Metrics) GossipIgnored(reason string) { m.gossipIgnores.WithLabelValues(reason).Inc() }

// bandwidthCollector is the metrics of [bandwidth] (docs/adr/0048), read
// through read at each scrape.
func bandwidthCollector(read func() Bandwidth) prometheus.Collector {
	bytes := prometheus.NewDesc("wats_bandwidth_bytes_total", "Bytes sent (up) and received (down) on the node's libp2p streams since it started.", []string{"direction"}, nil)
	caps := prometheus.NewDesc("wats_bandwidth_cap_bytes_per_second", "The caps of bandwidth.up_bytes_per_s and down_bytes_per_s; 0 is unlimited.", []string{"direction"}, nil)
	month := prometheus.NewDesc("wats_bandwidth_month_up_bytes", "Bytes sent this calendar month (UTC), kept across restarts.", nil, nil)
	monthly := prometheus.NewDesc("wats_bandwidth_monthly_up_cap_bytes", "bandwidth.monthly_up_bytes: past it blobs are served only to peers with standing; 0 is none.", nil, nil)
	waits := prometheus.NewDesc("wats_bandwidth_waits_total", "Grants of the bandwidth caps that had to wait, by direction and class (standing: peers with standing, served first; stranger).", []string{"direction", "class"}, nil)
	return collectorFunc{descs: []*prometheus.Desc{bytes, caps, month, monthly, waits}, collect: func(ch chan<- prometheus.Metric) {
		b := read()
		for d, dir := range [2]string{"up", "down"} {
			ch <- prometheus.MustNewConstMetric(bytes, prometheus.CounterValue, float64([2]uint64{b.Up, b.Down}[d]), dir)
			ch <- prometheus.MustNewConstMetric(caps, prometheus.GaugeValue, float64([2]uint64{b.UpCap, b.DownCap}[d]), dir)
			for c, class := range [2]string{"standing", "stranger"} {
				ch <- prometheus.MustNewConstMetric(waits, prometheus.CounterValue, float64(b.Waits[d][c]), dir, class)
			}
		}
		ch <- prometheus.MustNewConstMetric(month, prometheus.GaugeValue, float64(b.MonthUp))
		ch <- prometheus.MustNewConstMetric(monthly, prometheus.GaugeValue, float64(b.MonthlyUpCap))
	}}
}

// zero makes vec's child of each combination of values (a list per
// label, in the vector's order of labels), so that it is exported at 0.
func zero(vec *prometheus.CounterVec, values ...[]string) {
	var each func(prefix []string, rest [][]string)
	each = func(prefix []string, rest [][]string) {
		if len(rest) == 0 {
			vec.WithLabelValues(prefix...)
			return
		}
		for _, v := range rest[0] {
			each(append(prefix[:len(prefix):len(prefix)], v), rest[1:])
		}
	}
	each(nil, values)
}

// collectorFunc is a prometheus.Collector of metrics made at each scrape.
type collectorFunc struct {
	descs   []*prometheus.Desc
	collect func(chan<- prometheus.Metric)
}

func (c collectorFunc) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}
func (c collectorFunc) Collect(ch chan<- prometheus.Metric) { c.collect(ch) }

func (m *Metrics) EventsStored(source string, k int) {
	m.stored.WithLabelValues(source).Add(float64(k))
}
func (m *Metrics) EventsDropped(source string, k int) {
	m.dropped.WithLabelValues(source).Add(float64(k))
	m.droppedN.Add(uint64(k))
}

// droppedTotal counts the invalid events dropped from all sources (sync
// pages and gossip envelopes).
func (m *Metrics) DroppedTotal() uint64 { return m.droppedN.Load() }

// fsyncBounds are the upper bounds of wats_db_wal_fsync_seconds, in
// seconds: fine enough to tell a disk's usual fsync (a few ms) from the
// stalls that hold up gossip (100 ms and more).
var fsyncBounds = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}

// fsyncBuckets folds pebble's WAL fsync histogram h (in nanoseconds, 100
// buckets) into fsyncBounds: the count, the cumulative count at each
// bound (of pebble's buckets whose bound is at or below it) and the sum in
// seconds. ok is false if h cannot be read.
func fsyncBuckets(h prometheus.Histogram) (count uint64, buckets map[float64]uint64, sum float64, ok bool) {
	var m dto.Metric
	if h.Write(&m) != nil || m.Histogram == nil {
		return 0, nil, 0, false
	}
	buckets = make(map[float64]uint64, len(fsyncBounds))
	for _, b := range fsyncBounds {
		buckets[b] = 0
	}
	for _, pb := range m.Histogram.GetBucket() {
		upper := pb.GetUpperBound() / 1e9
		for _, b := range fsyncBounds {
			if upper <= b {
				buckets[b] = max(buckets[b], pb.GetCumulativeCount())
			}
		}
	}
	return m.Histogram.GetSampleCount(), buckets, m.Histogram.GetSampleSum() / 1e9, true
}

// sources returns src with a nil field answering nothing.
func sources(src Sources) Sources {
	zero := func() float64 { return 0 }
	for _, f := range []*func() float64{&src.Effort, &src.InFlight, &src.Head, &src.Peers, &src.StrangerSlots, &src.QuotaUsed} {
		if *f == nil {
			*f = zero
		}
	}
	if src.Exchange == nil {
		src.Exchange = func() (uint64, uint64, uint64) { return 0, 0, 0 }
	}
	if src.DB == nil {
		src.DB = func() *pebble.Metrics { return nil }
	}
	if src.ScoreBands == nil {
		src.ScoreBands = func() map[string]int { return nil }
	}
	if src.Log == nil {
		src.Log = func() (uint64, uint64, uint64, uint64, bool) { return 0, 0, 0, 0, false }
	}
	if src.Disk == nil {
		src.Disk = func() (uint64, bool, bool) { return 0, false, false }
	}
	if src.Bandwidth == nil {
		src.Bandwidth = func() Bandwidth { return Bandwidth{} }
	}
	return src
}

// Registry is the registry the metrics are in; the node registers more
// collectors in it (admission's), and the control API serves it.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// SyncGap counts an envelope gossip dropped from a peer after hello, for
// which a sync from it starts at once.
func (m *Metrics) SyncGap() { m.syncGaps.Inc() }

// HeadsStream counts a heads stream this node opened.
func (m *Metrics) HeadsStream() { m.headsStreams.Inc() }

// Challenges returns the challenges issued, the solutions that let a
// request through, and those refused, since the start.
func (m *Metrics) Challenges() (issued, solved, failed uint64) {
	return m.issuedN.Load(), m.solvedN.Load(), m.failedN.Load()
}

// Value returns the value of the counter or gauge name whose labels hold
// every one of values (in any order), summed over the series that match;
// 0 when none does. It reads what a scrape would (tests, the status).
func (m *Metrics) Value(name string, values ...string) float64 {
	families, err := m.reg.Gather()
	if err != nil {
		return 0
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, mt := range f.GetMetric() {
			if !hasValues(mt, values) {
				continue
			}
			switch {
			case mt.Counter != nil:
				sum += mt.Counter.GetValue()
			case mt.Gauge != nil:
				sum += mt.Gauge.GetValue()
			}
		}
	}
	return sum
}

// hasValues reports whether mt's labels hold every one of values.
func hasValues(mt *dto.Metric, values []string) bool {
	for _, v := range values {
		if !slices.ContainsFunc(mt.GetLabel(), func(l *dto.LabelPair) bool { return l.GetValue() == v }) {
			return false
		}
	}
	return true
}
