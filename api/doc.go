// Package api is the control API of a wats daemon: the HTTP/JSON messages
// it serves on its Unix socket and the client the CLI uses to call it.
//
// docs/design.md §12: the daemon serves HTTP/JSON on a Unix socket in its repo
// (mode 0600, repo directory 0700); nothing of it listens on the network.
// The socket path comes from repo.Repo.SocketPath. The server side lives in
// package node; this package holds only what both sides share, so that
// cmd/wats depends on api and never on the daemon's internals
// (docs/design.md §2).
//
// Endpoints (all paths under one socket, JSON field names in snake_case):
//
//	GET  /v1/id                     ID
//	GET  /v1/status                 Status
//	GET  /v1/peers                  []Peer
//	POST /v1/peers/connect          ConnectRequest -> Peer
//	GET  /v1/events?after=N&limit=N EventPage
//	POST /v1/events                 AddEventRequest -> the stored signed event
//	GET  /v1/events/{id}            the event with that id or unique id
//	                                prefix (8 to 64 hex), 404 if none,
//	                                409 if several
//	GET  /v1/tail?after=N           NDJSON: one event per line, forever
//	POST /v1/sync                   SyncRequest -> NDJSON: SyncProgress lines (with "all": every peer's share)
//	POST /v1/blobs/fetch            FetchRequest -> NDJSON: FetchProgress lines
//	POST /v1/blobs/stream           FetchRequest -> the blob's bytes in order
//	                                as they are fetched, then the trailer
//	                                Wats-Blob-Status (ADR 0035)
//	GET  /metrics                   Prometheus text exposition
//
// Any non-2xx response carries an ErrorBody; the client turns it into an
// *Error. When no daemon listens on the socket the client returns an error
// matching ErrNoDaemon (a *NoDaemonError naming the socket).
//
// Files:
//
//   - api.go: paths, request and response types, ErrorBody, the bounds
//     of event ids and pages the daemon accepts.
//   - client.go: Client and its calls, including the two NDJSON streams.
//   - blobs.go: the blob paths and calls, the fetch's progress and
//     StreamBlob, the blob's bytes with their trailer; AddFile, which
//     passes a file's descriptor to the daemon (descriptor_unix.go, ADR
//     0036) or uploads it.
//   - event.go: EventID, the id of a signed event as the API returns it.
//   - errors.go: ErrNoDaemon, NoDaemonError, Error (matching ErrNotFound
//     for 404 and ErrAmbiguous for 409) and the other sentinels.
package api
