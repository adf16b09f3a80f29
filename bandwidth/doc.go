// Package bandwidth caps and counts the traffic of a node's libp2p streams
// (docs/adr/0048): a token bucket per direction whose waiters are granted
// in priority order, peers with standing before strangers (Limiter); the
// stream and host wrappers that hold every stream to it and count its
// bytes, in all and per peer (Meter.Wrap, Meter.Host); and the month's
// count of bytes sent, kept in the repo's MonthFile, past whose cap
// (bandwidth.monthly_up_bytes) blobs are served to peers with standing
// only (Meter.Serves).
//
// Configured by the table [bandwidth] of config.toml; 0 is unlimited, as
// ADR 0014 writes it.
package bandwidth
