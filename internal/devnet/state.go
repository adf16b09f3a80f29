package devnet

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/wats-network/wats/internal/fileio"
)

// Devnet layout (docs/design.md §13): DIR/devnet.json records the running nodes;
// DIR/node0, DIR/node1, … are their repos, each with its daemon.log.
const (
	// stateFileName is the devnet's pid file in DIR.
	stateFileName = "devnet.json"
	// LogFileName is each node's daemon log, in its repo.
	LogFileName = "daemon.log"
	// stateVersion is the version of devnet.json's format.
	stateVersion = 1
	// maxStateBytes caps the devnet.json read: MaxNodes records of a
	// few hundred bytes each fit in a few tens of KiB.
	maxStateBytes = 1 << 20
)

// MaxNodes is the most nodes a devnet runs. Each node is a full daemon
// process (libp2p host, pebble database, a few tens of MiB): 32 of them
// already load a laptop; a bigger test network wants real machines.
const MaxNodes = 32

// ErrNoDevnet is returned by Load when DIR holds no devnet.json.
var ErrNoDevnet = errors.New("no devnet")

// State is devnet.json: what `devnet up` (or `devnet run`) started, so
// that the other devnet commands find the nodes.
type State struct {
	// Version is the version of the format, 1; Load refuses any other.
	Version int `json:"version"`
	// Network is the nodes' network name.
	Network string `json:"network"`
	// Started is when the devnet was started.
	Started time.Time `json:"started"`
	// Foreground is set by `devnet run`: the nodes are children of that
	// process, which removes them when it ends.
	Foreground bool `json:"foreground"`
	// RunnerPID is the pid of the process that started the nodes.
	RunnerPID int `json:"runner_pid"`
	// Nodes are the nodes in the order they were started: Nodes[i] is
	// nodeI.
	Nodes []NodeState `json:"nodes"`
}

// NodeState is one node of devnet.json.
type NodeState struct {
	// Index is I of nodeI; Repo its repo directory (NodeDir, as given,
	// not made absolute); Log its daemon log; PID its daemon's pid.
	Index int    `json:"index"`
	Repo  string `json:"repo"`
	Log   string `json:"log"`
	PID   int    `json:"pid"`
	// PeerID and Addrs are the node's identity, once its API answered.
	PeerID string   `json:"peer_id,omitempty"`
	Addrs  []string `json:"addrs,omitempty"`
}

// DefaultDir is the default --dir of the devnet commands:
// $WATS_DEVNET_DIR, else ~/.wats-devnet (".wats-devnet" without a home
// directory).
func DefaultDir() string {
	if d := os.Getenv("WATS_DEVNET_DIR"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ".wats-devnet"
	}
	return filepath.Join(home, ".wats-devnet")
}

// NodeDir is the repo of node i of the devnet in dir: DIR/nodeI.
func NodeDir(dir string, i int) string { return filepath.Join(dir, "node"+strconv.Itoa(i)) }

// Load reads dir's devnet.json: ErrNoDevnet if there is none, an error
// that says to remove it if it is damaged, of another version or over
// 1 MiB.
func Load(dir string) (*State, error) {
	path := filepath.Join(dir, stateFileName)
	b, err := fileio.ReadCapped(path, nil, maxStateBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoDevnet
	}
	if err != nil {
		return nil, err
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s is damaged (%v); remove it once no node of the devnet runs", path, err)
	}
	if st.Version != stateVersion {
		return nil, fmt.Errorf("%s has version %d; this wats reads version %d", path, st.Version, stateVersion)
	}
	return &st, nil
}

// save writes st to dir's devnet.json atomically (a temporary file renamed
// over it).
func (st *State) save(dir string) error {
	b, err := json.Marshal(st, jsontext.WithIndent("  "))
	if err != nil {
		return err
	}
	return fileio.WriteAtomic(filepath.Join(dir, stateFileName), append(b, '\n'), 0o600)
}

// removeState removes dir's devnet.json, if any.
func removeState(dir string) error {
	err := os.Remove(filepath.Join(dir, stateFileName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// cleanDir removes the node repos and devnet.json of the devnet in
// dir, and dir itself if nothing else is left in it. It removes only what
// a devnet creates (node<N> directories, devnet.json), so that a --dir
// pointing at the wrong place costs nothing else.
func cleanDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		n, isNode := strings.CutPrefix(name, "node")
		if isNode {
			_, err := strconv.Atoi(n)
			isNode = err == nil && e.IsDir()
		}
		if isNode || name == stateFileName {
			errs = append(errs, os.RemoveAll(filepath.Join(dir, name)))
		}
	}
	if rest, err := os.ReadDir(dir); err == nil && len(rest) == 0 {
		errs = append(errs, os.Remove(dir))
	}
	return errors.Join(errs...)
}
