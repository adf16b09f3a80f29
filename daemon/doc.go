// Package daemon runs a node as `wats daemon` (Run): on a repo, locked
// while it runs, with the control API served on the repo's Unix socket,
// the web dashboard on api.dashboard_addr unless it is "" (package
// dashboard, docs/adr/0049) and the metrics on api.metrics_addr when set
// (docs/design.md §12). Handler is
// the control API as an http.Handler: each path of package api,
// answered from the node's exported methods, with the HTTP status of each
// outcome. Package node builds and runs the node itself and knows nothing
// of HTTP.
//
// Files:
//   - run.go: Run.
//   - server.go: Handler, Serve, the shutdown of the servers.
//   - logring.go: LogRing, the daemon's last log lines, and GET
//     api.PathLog (docs/adr/0050).
//   - handlers.go: one method per path; helpers.go: JSON in and out,
//     query parameters, the sentences of a failed fetch.
//   - import.go: the import of a file by its descriptor (ADR 0036);
//     descriptor_unix.go: the control connections that receive
//     descriptors (SCM_RIGHTS) and the checks of a passed file.
package daemon
