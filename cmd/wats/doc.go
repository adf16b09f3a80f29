// Command wats is the wats node's single binary: the daemon (`wats daemon`)
// and the CLI that drives it over the control API on the repo's Unix socket
// (docs/design.md §12), plus `wats devnet`, which runs a local multi-node network
// of real daemon processes (docs/design.md §13).
//
// Every command takes --repo DIR (default $WATS_PATH, else ~/.wats). The
// commands that need a running daemon talk to it only through the client of
// package node/api, never through the node's internals (docs/design.md §2); they
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
//   - repo.go: opening the repo, the socket path without the config, the
//     control API client, the no-daemon and daemon-error messages.
//   - cmd_init.go, cmd_daemon.go, cmd_config.go, cmd_version.go: commands
//     that need no running daemon.
//   - cmd_node.go: id, status, peers, events, sync: thin calls of the
//     control API with text and --json output.
//   - output.go: terminal detection, the views of `wats sync` (progress
//     bar, plain lines, JSON lines).
//   - devnet.go: `wats devnet up|status|exec|logs|down`.
//   - devnet_state.go: the devnet directory and its pid file devnet.json.
//   - devnet_proc.go, procattr_*.go: starting, signalling and reaping
//     daemon processes.
//   - devnet_run.go: `wats devnet run`, the foreground demo, and the
//     convergence view.
//
// A devnet's daemons are separate processes of this same binary
// (os.Executable), each in its own process group, recorded in
// DIR/devnet.json; `devnet down` stops them by pid (SIGTERM, then SIGKILL
// after 10s), checking /proc first so that a reused pid is never
// signalled; with nothing running (even no DIR) it says so and exits 0,
// so that cleanup scripts can call it again. The daemons of `devnet run`
// are its children and also get SIGTERM (Linux Pdeathsig) if it dies.
//
// Tests: main_test.go drives the commands in-process (usage errors, the
// no-daemon message, init, config, and every daemon command against a fake
// control API on the repo's socket); hints_test.go tests the hints and the
// help; devnet_test.go tests the devnet's pieces; e2e_test.go builds the
// binary and runs real devnets (skipped with -short).
package main
