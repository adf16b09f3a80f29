package limits

import (
	"time"

	"github.com/wats-network/wats/core"
)

// Each request type of /wats/1 (core.Request) has its own budget (ADR 0014:
// "token buckets per peer and request type on /wats: hello, sync,
// replicate, crash_report"), indexed by the Request: arrays of budgets have
// core.NumRequests entries.

// kindInfo is what each request type's budget is called: its config key,
// its refusal reason and its "peer throttled" log topic, built once so that
// the hot paths do not concatenate.
var kindInfo = [core.NumRequests]struct{ key, refusal, throttled string }{
	core.Hello:       {"limits.hello_per_min", "rate limited (hello): retry later", "throttled hello"},
	core.Sync:        {"limits.sync_per_min", "rate limited (sync): retry later", "throttled sync"},
	core.Replicate:   {"limits.replicate_per_min", "rate limited (replicate): retry later", "throttled replicate"},
	core.CrashReport: {"limits.report_per_min", "rate limited (crash_report): retry later", "throttled crash_report"},
}

// RateKey returns the full config key of r's rate, e.g.
// "limits.report_per_min" for core.CrashReport (ADR 0014's table), or ""
// for an invalid Request.
func RateKey(r core.Request) string {
	if !r.Valid() {
		return ""
	}
	return kindInfo[r].key
}

// Refusal returns the reason of the "refused" response to a request of
// type r over its limit, exactly as ADR 0014 words it, in the form ADR
// 0015 gives: "rate limited (<type>): retry later" with the wire type
// name, e.g.
// "rate limited (sync): retry later". It does not allocate.
func Refusal(r core.Request) string {
	if !r.Valid() {
		return "rate limited (" + r.String() + "): retry later"
	}
	return kindInfo[r].refusal
}

// RetryAfterMs converts a retryAfter from Allow into the value of the
// refusal's "retry_after_ms" field (docs/design.md §4): whole milliseconds, rounded
// up so that a peer that waits that long finds a token; 0 for d <= 0.
func RetryAfterMs(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d-1)/time.Millisecond) + 1
}
