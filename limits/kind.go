package limits

import (
	"strconv"
	"time"
)

// Kind is a request type of /wats/1 that has its own budget (ADR 0014:
// "token buckets per peer and request type on /wats: hello, sync,
// replicate, crash_report"). The zero Kind is KindHello. Kinds index
// arrays: a valid Kind is below NumKinds.
type Kind uint8

// The request types with a budget, in the order of ADR 0014's table.
const (
	KindHello       Kind = iota // "hello", key limits.hello_per_min
	KindSync                    // "sync" (pages of up to 256 events), key limits.sync_per_min
	KindReplicate               // "replicate", key limits.replicate_per_min
	KindCrashReport             // "crash_report", key limits.report_per_min

	// NumKinds is the number of Kinds; arrays indexed by Kind have this
	// length.
	NumKinds = 4
)

// kindInfo is what each Kind is called: its wire type, its config key, its
// refusal reason and its "peer throttled" log topic, built once so that the
// hot paths do not concatenate.
var kindInfo = [NumKinds]struct{ name, key, refusal, throttled string }{
	KindHello:       {"hello", "limits.hello_per_min", "rate limited (hello): retry later", "throttled hello"},
	KindSync:        {"sync", "limits.sync_per_min", "rate limited (sync): retry later", "throttled sync"},
	KindReplicate:   {"replicate", "limits.replicate_per_min", "rate limited (replicate): retry later", "throttled replicate"},
	KindCrashReport: {"crash_report", "limits.report_per_min", "rate limited (crash_report): retry later", "throttled crash_report"},
}

// Kinds returns every Kind, in order.
func Kinds() [NumKinds]Kind {
	return [NumKinds]Kind{KindHello, KindSync, KindReplicate, KindCrashReport}
}

// ParseKind returns the Kind whose wire type name is s ("hello", "sync",
// "replicate", "crash_report"; docs/design.md §4), and false for any other string,
// e.g. a request type without a budget.
func ParseKind(s string) (Kind, bool) {
	for k := range Kind(NumKinds) {
		if kindInfo[k].name == s {
			return k, true
		}
	}
	return 0, false
}

// Valid reports whether k is one of the NumKinds request types.
func (k Kind) Valid() bool { return k < NumKinds }

// String returns the wire type name of k ("crash_report" for
// KindCrashReport), or "kind(N)" for an invalid Kind.
func (k Kind) String() string {
	if !k.Valid() {
		return "kind(" + strconv.Itoa(int(k)) + ")"
	}
	return kindInfo[k].name
}

// Key returns the full config key of k's rate, e.g. "limits.report_per_min"
// for KindCrashReport (ADR 0014's table), or "" for an invalid Kind.
func (k Kind) Key() string {
	if !k.Valid() {
		return ""
	}
	return kindInfo[k].key
}

// Refusal returns the reason of the "refused" response to a request of
// kind k over its limit, exactly as ADR 0014 words it, in the form ADR
// 0015 gives: "rate limited (<type>): retry later" with the wire type name, e.g.
// "rate limited (sync): retry later". It does not allocate.
func Refusal(k Kind) string {
	if !k.Valid() {
		return "rate limited (" + k.String() + "): retry later"
	}
	return kindInfo[k].refusal
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
