// Package dashboard is the node's web dashboard (docs/adr/0049): a page
// and its scripts, embedded in the binary, that show the node live —
// identity, peers, the event log, blobs and fetches, admission and
// bandwidth over the last hour — from the control API's read-only views
// and a History of the node's metrics.
//
// The daemon serves it on api.dashboard_addr, a loopback address. Every
// path asks for the token the daemon made at its start: in the URL that
// `wats dashboard` prints (?token=…, which the first answer moves into a
// cookie), as a cookie, or as "Authorization: Bearer …". Without a token
// the answer is 401; with a wrong one, 403. Only GET and HEAD are served:
// the dashboard shows the node and changes nothing.
package dashboard
