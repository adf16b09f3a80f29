// Package netsim is a simulated internet for wats daemons (docs/adr/0040,
// docs/scale.md): network namespaces joined by veth links and bridges, a
// public segment (198.18.0.0/16) and home routers that masquerade the LANs
// behind them (198.19.<r>.0/24) with nftables, endpoint-independent or
// symmetric. Run starts a real daemon in each node's namespace and
// measures discovery on the DHT, how pairs connect (direct, hole-punched,
// relayed), gossip, and blobs fetched by CID across NATs.
//
// It needs root, `ip` and `nft`; Need says why it cannot run. Every
// namespace it makes is named ws<pid>-…, deleted by Close, and by the next
// Build after a run that was killed (ReapLeftovers). Addresses are only
// ever inside the namespaces it made.
//
// Files: net.go (the namespaces), sim.go (the daemons and the
// measurements), addrs.go (the address classes a daemon of the
// simulation takes, UseSimAddrs).
package netsim
