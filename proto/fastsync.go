package proto

import (
	"bytes"

	"github.com/wats-network/wats/core"
)

// decodeCanonicalSync decodes a sync request written exactly as Marshal
// writes one without GREASE, {"type":"sync","after":"N","limit":M} (or
// without "limit"), and reports false for any other bytes, which the
// general decoder then reads. It is the decode of the most frequent
// request without json v2's reflection (ADR 0033: 1.9 µs a request through
// the general decoder, which this path must agree with:
// FuzzCanonicalSyncAgrees). It accepts only what the general decoder
// accepts, to the same value: a canonical cursor, a limit of plain digits
// from 1 to 2^53 without a leading zero (clamped to core.MaxPageEvents as
// decoded does), nothing else.
func decodeCanonicalSync(b []byte) (*Request, bool) {
	const head = `{"type":"sync","after":"`
	rest, ok := bytes.CutPrefix(b, []byte(head))
	if !ok {
		return nil, false
	}
	q := bytes.IndexByte(rest, '"')
	if q < 0 {
		return nil, false
	}
	after, err := core.ParseCursor(string(rest[:q]))
	if err != nil {
		return nil, false
	}
	rest = rest[q+1:]
	limit := int64(core.MaxPageEvents)
	if string(rest) != "}" {
		digits, ok := bytes.CutPrefix(rest, []byte(`,"limit":`))
		if !ok {
			return nil, false
		}
		if digits, ok = bytes.CutSuffix(digits, []byte("}")); !ok {
			return nil, false
		}
		if limit, ok = canonicalLimit(digits); !ok {
			return nil, false
		}
	}
	sync := &SyncRequest{After: after, Limit: int(min(limit, core.MaxPageEvents))}
	return &Request{Type: TypeSync, Sync: sync, Raw: b}, true
}

// canonicalLimit reads a limit of 1 to 16 digits, without a leading zero,
// from 1 to core.MaxSafeInt.
func canonicalLimit(d []byte) (int64, bool) {
	if len(d) == 0 || len(d) > 16 || d[0] == '0' {
		return 0, false
	}
	var n int64
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, n <= core.MaxSafeInt
}
