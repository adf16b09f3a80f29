// Package devnet runs a local network of real wats daemons on 127.0.0.1
// (docs/design.md §13): the harness behind `wats devnet up|run|status|
// logs|down` and the pieces the benches of internal/bench build on.
//
// A devnet lives in a directory DIR: DIR/node0, DIR/node1, … are the
// nodes' repos, each with its daemon.log, and DIR/devnet.json (State)
// records what runs. The daemons are separate processes of this same
// binary (os.Executable, `wats daemon --repo DIR/nodeI`), each in its own
// process group. Start starts them one after the other, each bootstrapped
// to every node before it, and returns once they form a full mesh; Down
// stops them by pid (SIGTERM, then SIGKILL after StopGrace), checking
// /proc first so that a reused pid is never signalled, and with nothing
// running (even no DIR) does nothing and reports no error. Run is the
// foreground `devnet run`: its daemons are children of this process (and
// get SIGTERM, Linux's Pdeathsig, if it dies), it shows their convergence
// and with the demo publishes events, a file and a crash dump from them.
//
// The package writes no output of its own but to the writers and log
// functions it is given, and it knows nothing of the command line: cmd/wats
// parses and checks the flags, names the binary in hints (RunOptions.Hint)
// and prints the results (NodeStatus, DownResult).
//
// Usage, as `devnet up` and `devnet status` do:
//
//	net, err := devnet.Start(ctx, devnet.Options{Dir: dir, Nodes: 3,
//		Network: devnet.DefaultNetwork, Timeout: devnet.DefaultUpTimeout, Log: logf})
//	...
//	rows := devnet.Status(ctx, net.State()) // later: devnet.Load(dir)
//
// Files:
//   - devnet.go: Options, Start and Network (the daemons started and
//     their clients), Status, the logs (Logs, NodeLog, PrintLogs), Down.
//   - state.go: the devnet directory and its pid file devnet.json.
//   - daemon.go, procattr_*.go: Daemon, starting, signalling and reaping
//     daemon processes, the checks of a recorded pid.
//   - repo.go: PrepareRepo, a node's repo made or updated for a devnet.
//   - run.go: Run, the foreground demo, and the convergence view.
//   - blobs.go, spread.go: the demo's blobs, and how fast its events
//     reach every node.
package devnet
