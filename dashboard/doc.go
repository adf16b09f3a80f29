// Package dashboard is the node's web dashboard (docs/adr/0049): a page
// and its scripts, embedded in the binary, that show the node live —
// identity, peers, the event log, blobs and fetches, admission and
// bandwidth over the last hour — from the control API's read-only views
// and a History of the node's metrics.
//
// The daemon serves it on api.dashboard_addr, a loopback address, with at
// most daemon.MaxTCPConns connections. Every path asks for the token the
// daemon made at its start: as the first segment of the path (the URL
// that `wats dashboard` prints is http://127.0.0.1:PORT/TOKEN/, and the
// page's requests are relative to it) or as "Authorization: Bearer …".
// No cookie holds it: a browser sends a host's cookies to every port of
// it, another local user's server among them. Without a token the answer
// is 401; with a wrong one, 403; with a Host header that is a DNS name
// (not localhost), 421. Only GET and HEAD are served: the dashboard shows
// the node and changes nothing.
package dashboard
