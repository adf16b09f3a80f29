// Command wats is the wats node's single binary: the daemon (`wats daemon`)
// and the CLI that drives it over the control API on the repo's Unix socket
// (docs/design.md §12), plus `wats devnet`, which runs a local multi-node network
// of real daemon processes (docs/design.md §13).
//
// Every command takes --repo DIR (default $WATS_PATH, else ~/.wats). The
// commands that need a running daemon talk to it only through the client of
// package api, never through the node's internals (docs/design.md §2); they
// need only the repo's socket path, so they do not parse its config.toml
// (a config broken while the daemon runs does not stop them). Errors go to
// stderr, without Go package prefixes; the exit code is 0 on success, 1 on
// an error and 2 on a usage error (unknown command or flag, bad argument).
//
// Hints (the next command to run) name the binary as the user can run it:
// "wats" when that is what $PATH runs, else the path it was run by (e.g.
// bin/wats), and give one command a line, quoted for the shell.
//
// Files:
//   - main.go: main, run (exit codes, signals, error printing).
//   - root.go: the command tree, the --repo flag, usage errors.
//   - hints.go: how hints name the binary and quote arguments; the
//     package prefixes left out of printed errors.
//   - repo.go: opening the repo, the control API client (its socket found
//     without the config: repo.SocketPathOf), the no-daemon and
//     daemon-error messages.
//   - cmd_init.go, cmd_daemon.go, cmd_config.go, cmd_version.go: commands
//     that need no running daemon.
//   - cmd_node.go: id, status, peers, events, sync: thin calls of the
//     control API with text and --json output.
//   - cmd_diag_bundle.go: `wats diag bundle`, the archive of a bug report
//     (docs/adr/0050).
//   - output.go: terminal detection, the views of `wats sync` (progress
//     bar, plain lines, JSON lines).
//   - devnet.go: `wats devnet up|run|status|exec|logs|down`: flags, hints and
//     output around package internal/devnet, which runs the devnet.
//   - cmd_bench*.go: `wats bench`, and its hidden worker subcommands, around
//     package internal/bench.
//
// A devnet's daemons are separate processes of this same binary
// (os.Executable), each in its own process group, recorded in
// DIR/devnet.json (internal/devnet). `devnet exec` runs this binary with
// --repo DIR/nodeI and passes its exit code on.
//
// Tests: main_test.go drives the commands in-process (usage errors, the
// no-daemon message, init, config, and every daemon command against a fake
// control API on the repo's socket); hints_test.go tests the hints and the
// help; e2e_test.go and operator_test.go build the binary and run real
// devnets (skipped with -short). The devnet's and the benches' pieces are
// tested in their packages.
package main
