package config

import (
	"errors"
	"fmt"
	"github.com/wats-network/wats/bandwidth"
	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/limits"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// Validate checks every key against its rule and returns all the problems
// joined with errors.Join, or nil. Each problem is an *Error of kind
// ErrInvalid whose message names the key and its value, says what is
// wrong, the allowed range (keyDocs) and gives an example, e.g.
//
//	config: p2p.conns_low = 96: must be below p2p.conns_high (96); allowed: ...; example (in [p2p]): conns_low = 32
func (c *Config) Validate() error { return join(c.problems()) }

// problems returns the problems Validate reports, in key order.
func (c *Config) problems() []*Error {
	var ch checker
	ch.network(c.Network)
	c.P2P.validate(&ch)
	c.Sync.validate(&ch)
	validateLimits(&ch, c.Limits)
	if b := c.Blobs.MaxBlobBytes; b < 1 || b > core.MaxSafeInt {
		ch.bad("blobs.max_blob_bytes", b, "not in 1..2^53")
	} else if q := c.Blobs.QuotaBytes; q < b || q > core.MaxSafeInt {
		ch.bad("blobs.quota_bytes", q, "below max_blob_bytes or above 2^53", "blobs.max_blob_bytes")
	}
	ch.oneOf("blobs.serve", c.Blobs.Serve, ServePeers, ServeAll)
	if b := c.Blobs.MaxPartialBytes; b < 0 || b > core.MaxSafeInt {
		ch.bad("blobs.max_partial_bytes", b, "not in 0..2^53")
	}
	ch.durationRange("blobs.max_partial_age", c.Blobs.MaxPartialAge, 0, MaxPartialAge)
	c.Events.validate(&ch)
	c.Bandwidth.validate(&ch)
	if m := c.PeerCache.MaxPeers; m < 1 || m > MaxPeerCache {
		ch.bad("peercache.max_peers", m, fmt.Sprintf("not in 1..%d", MaxPeerCache))
	}
	c.API.validate(&ch)
	c.Log.validate(&ch)
	return ch.errs
}

// validate checks the [events] quotas: each in range, and an author's
// quota no larger than the log's.
func (e *EventsConfig) validate(ch *checker) {
	if n := e.MaxEvents; n < 0 || n > MaxLogEvents {
		ch.bad("events.max_events", n, "not in 0..2^40")
	}
	if n := e.MaxEventsPerAuthor; n < 0 || n > MaxLogEvents {
		ch.bad("events.max_events_per_author", n, "not in 0..2^40")
	} else if e.MaxEvents > 0 && (n == 0 || n > e.MaxEvents) {
		ch.bad("events.max_events_per_author", n, fmt.Sprintf("above events.max_events (%d)", e.MaxEvents), "events.max_events")
	}
	bytes := func(key string, n int64) bool {
		if n != 0 && (n < MinLogBytes || n > core.MaxSafeInt) {
			ch.bad(key, n, "not 0 or in 65536..2^53")
			return false
		}
		return true
	}
	if bytes("events.max_bytes", e.MaxBytes) && bytes("events.max_bytes_per_author", e.MaxBytesPerAuthor) &&
		e.MaxBytes > 0 && (e.MaxBytesPerAuthor == 0 || e.MaxBytesPerAuthor > e.MaxBytes) {
		ch.bad("events.max_bytes_per_author", e.MaxBytesPerAuthor, fmt.Sprintf("above events.max_bytes (%d)", e.MaxBytes), "events.max_bytes")
	}
}

// validate checks the [bandwidth] caps: 0, or within the limiter's rates
// (bandwidth.MinBytesPerS..MaxBytesPerS) and for the month
// MinMonthlyUpBytes..2^53.
func (b *BandwidthConfig) validate(ch *checker) {
	for key, v := range map[string]int64{"bandwidth.up_bytes_per_s": b.UpBytesPerS, "bandwidth.down_bytes_per_s": b.DownBytesPerS} {
		if v != 0 && (v < bandwidth.MinBytesPerS || v > bandwidth.MaxBytesPerS) {
			ch.bad(key, v, "not 0 or in 16384..2^40")
		}
	}
	if v := b.MonthlyUpBytes; v != 0 && (v < MinMonthlyUpBytes || v > core.MaxSafeInt) {
		ch.bad("bandwidth.monthly_up_bytes", v, "not 0 or in 1048576..2^53")
	}
}

// checker collects the problems of a Config.
type checker struct{ errs []*Error }

// bad records that key, holding v, breaks its rule; problem says how.
// locate names keys whose position may stand in for key's (see Error).
func (ch *checker) bad(key string, v any, problem string, locate ...string) {
	ch.report(key, key+" = "+inline(v), problem, locate)
}

// report records a problem with key, described as subject and problem,
// followed by the allowed range and an example from keyDocs.
func (ch *checker) report(key, subject, problem string, locate []string) {
	base, _, _ := strings.Cut(key, "[")
	doc := keyDocs[base]
	msg := subject + ": " + problem + "; allowed: " + doc.allowed + "; example"
	if f, ok := fields[base]; ok && f.table != "" {
		msg += " (in [" + f.table + "])"
	}
	msg += ": " + doc.example
	ch.errs = append(ch.errs, &Error{Key: key, Kind: ErrInvalid, Msg: msg, locate: locate})
}

// intRange checks lo <= v <= hi.
func (ch *checker) intRange(key string, v, lo, hi int) {
	switch {
	case v < lo:
		ch.bad(key, v, fmt.Sprintf("below the minimum %d", lo))
	case v > hi:
		ch.bad(key, v, fmt.Sprintf("above the maximum %d", hi))
	}
}

// durationRange checks lo <= d <= hi.
func (ch *checker) durationRange(key string, d Duration, lo, hi time.Duration) {
	switch {
	case d.Duration < lo:
		ch.bad(key, d, fmt.Sprintf("shorter than the minimum %q", durationText(lo)))
	case d.Duration > hi:
		ch.bad(key, d, fmt.Sprintf("longer than the maximum %q", durationText(hi)))
	}
}

// oneOf checks that v is one of allowed.
func (ch *checker) oneOf(key, v string, allowed ...string) {
	if !slices.Contains(allowed, v) {
		ch.bad(key, v, "not one of the allowed values")
	}
}

// network checks the key `network`: 1..MaxNetworkLen bytes of [a-z0-9._-].
func (ch *checker) network(name string) {
	const key = "network"
	switch {
	case name == "":
		ch.bad(key, name, "empty")
		return
	case len(name) > MaxNetworkLen:
		ch.bad(key, name, fmt.Sprintf("%d characters, more than %d", len(name), MaxNetworkLen))
		return
	}
	for i := range len(name) {
		if c := name[i]; !isNetworkByte(c) {
			problem := fmt.Sprintf("character %q at byte %d is not allowed", rune(c), i)
			if c >= 'A' && c <= 'Z' {
				problem += " (use lower case)"
			}
			ch.bad(key, name, problem)
			return
		}
	}
}

func isNetworkByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// checkFullAddr reports s, the value of key, unless it is a multiaddr with
// an address and a final /p2p/<peer id> (p2p.bootstrap, p2p.relays).
func checkFullAddr(ch *checker, key, s string) {
	if _, err := ma.NewMultiaddr(s); err != nil {
		ch.bad(key, s, "not a multiaddr: "+err.Error())
		return
	}
	ai, err := peer.AddrInfoFromString(s)
	switch {
	case err != nil:
		ch.bad(key, s, "does not end in /p2p/<peer id>")
	case len(ai.Addrs) == 0:
		ch.bad(key, s, "has no address before /p2p/<peer id>")
	}
}

func (p *P2PConfig) validate(ch *checker) {
	switch n := len(p.Listen); {
	case n == 0:
		ch.report("p2p.listen", "p2p.listen is empty", "the node needs an address to listen on", nil)
	case n > MaxListenAddrs:
		ch.report("p2p.listen", fmt.Sprintf("p2p.listen has %d entries", n),
			fmt.Sprintf("more than %d", MaxListenAddrs), nil)
	}
	for i, s := range p.Listen {
		if _, err := ma.NewMultiaddr(s); err != nil {
			ch.bad(fmt.Sprintf("p2p.listen[%d]", i), s, "not a multiaddr: "+err.Error())
		}
	}

	if n := len(p.Bootstrap); n > MaxBootstrapPeers {
		ch.report("p2p.bootstrap", fmt.Sprintf("p2p.bootstrap has %d entries", n),
			fmt.Sprintf("more than %d", MaxBootstrapPeers), nil)
	}
	for i, s := range p.Bootstrap {
		checkFullAddr(ch, fmt.Sprintf("p2p.bootstrap[%d]", i), s)
	}

	if !slices.Contains(DHTModes, p.DHT) {
		ch.bad("p2p.dht", p.DHT, "not one of "+strings.Join(DHTModes, ", "))
	}
	if n := len(p.Relays); n > MaxRelays {
		ch.report("p2p.relays", fmt.Sprintf("p2p.relays has %d entries", n),
			fmt.Sprintf("more than %d", MaxRelays), nil)
	}
	for i, s := range p.Relays {
		checkFullAddr(ch, fmt.Sprintf("p2p.relays[%d]", i), s)
	}

	if p.ConnsLow < 1 {
		ch.bad("p2p.conns_low", p.ConnsLow, "below the minimum 1")
	} else if p.ConnsLow >= p.ConnsHigh {
		ch.bad("p2p.conns_low", p.ConnsLow,
			fmt.Sprintf("must be below p2p.conns_high (%d)", p.ConnsHigh), "p2p.conns_high")
	}
	if p.ConnsHigh > MaxConnsHigh {
		ch.bad("p2p.conns_high", p.ConnsHigh, fmt.Sprintf("above the maximum %d", MaxConnsHigh))
	}
	ch.durationRange("p2p.conns_grace", p.ConnsGrace, 0, MaxConnsGrace)
	if p.MaxConns < p.ConnsHigh {
		ch.bad("p2p.max_conns", p.MaxConns,
			fmt.Sprintf("must be at least p2p.conns_high (%d)", p.ConnsHigh), "p2p.conns_high")
	} else if p.MaxConns > MaxMaxConns {
		ch.bad("p2p.max_conns", p.MaxConns, fmt.Sprintf("above the maximum %d", MaxMaxConns))
	}
	ch.intRange("p2p.max_streams", p.MaxStreams, MinMaxStreams, MaxMaxStreams)
	ch.intRange("p2p.max_memory_mib", p.MaxMemoryMiB, MinMemoryMiB, MaxMemoryMiB)
}

func (s *SyncConfig) validate(ch *checker) {
	ch.durationRange("sync.interval", s.Interval, MinSyncInterval, MaxSyncInterval)
}

func (a *APIConfig) validate(ch *checker) {
	ch.loopbackAddr("api.metrics_addr", a.MetricsAddr, 1, "metrics stay off the network")
	ch.loopbackAddr("api.dashboard_addr", a.DashboardAddr, 0, "the dashboard stays off the network")
}

// loopbackAddr checks that v is "" or a loopback host:port whose port is
// minPort..65535; why says why a host elsewhere is refused.
func (ch *checker) loopbackAddr(key, v string, minPort int, why string) {
	if v == "" {
		return
	}
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		ch.bad(key, v, "not a host:port")
		return
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		ch.bad(key, v, fmt.Sprintf("host %q is not a loopback address; %s", host, why))
	}
	if n, err := strconv.Atoi(port); err != nil || n < minPort || n > 65535 {
		ch.bad(key, v, fmt.Sprintf("port %q is not a number from %d to 65535", port, minPort))
	}
}

func (l *LogConfig) validate(ch *checker) {
	ch.oneOf("log.level", l.Level, "debug", "info", "warn", "error")
	ch.oneOf("log.format", l.Format, "text", "json")
}

// validateLimits reports the problems limits.Config.Validate finds, as
// config problems of their keys. The fields without a key are not read
// from the file, so their problems cannot come from it.
func validateLimits(ch *checker, l limits.Config) {
	err := l.Validate()
	if err == nil {
		return
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	for _, e := range errs {
		var ce *limits.ConfigError
		if !errors.As(e, &ce) {
			continue
		}
		var locate []string
		switch ce.Key {
		case "limits.challenge_base_bits":
			locate = []string{"limits.challenge_max_bits"}
		case "limits.challenge_max_bits":
			locate = []string{"limits.challenge_base_bits"}
		}
		if _, ok := keyDocs[ce.Key]; ok {
			ch.bad(ce.Key, ce.Value, ce.Problem, locate...)
		}
	}
}
