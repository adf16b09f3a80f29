package devnet

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/internal/fileio"
	"github.com/wats-network/wats/repo"
)

// PrepareRepo makes dir a repo with the config cfg for a devnet node (or
// a bench's daemon): it creates the repo (identity key and all) if there
// is none, and otherwise rewrites only the keys of its config file that
// the devnet manages (network, p2p.listen, p2p.bootstrap, sync.interval),
// so that a devnet started again keeps its nodes' identities, logs and
// config edits while its addresses (new ports each time) and bootstrap
// list are updated. A config that no longer parses is replaced by cfg. It
// fails, without writing, if cfg does not validate.
func PrepareRepo(dir string, cfg *config.Config) (*repo.Repo, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("devnet config for %s: %w", dir, err)
	}
	r, err := repo.Open(dir)
	var cerr *config.Error
	switch {
	case errors.Is(err, repo.ErrNotInitialized):
		return repo.Init(dir, &repo.InitOptions{Config: cfg})
	case err == nil:
		// An existing node keeps its config.toml edits; only the keys the
		// devnet manages are set.
		kept := *r.Config
		kept.Network = cfg.Network
		kept.P2P.Listen = cfg.P2P.Listen
		kept.P2P.Bootstrap = cfg.P2P.Bootstrap
		kept.Sync.Interval = cfg.Sync.Interval
		cfg = &kept
	case !errors.As(err, &cerr) && !errors.Is(err, repo.ErrIncomplete):
		return nil, err // a bad key: not something to paper over
	}
	// An existing repo, or one whose config is missing or no longer
	// parses: (re)write the config.
	if err := fileio.WriteAtomic(filepath.Join(dir, repo.ConfigFile), config.Template(cfg), repo.FileMode); err != nil {
		return nil, err
	}
	return repo.Open(dir)
}

// nodeClient returns a control API client for the daemon of the repo in
// dir, without reading its config (repo.SocketPathOf).
func nodeClient(dir string) (*api.Client, error) {
	sock, err := repo.SocketPathOf(dir)
	if errors.Is(err, repo.ErrNotInitialized) {
		return nil, fmt.Errorf("no wats repo at %s", dir)
	}
	if err != nil {
		return nil, err
	}
	return api.NewClient(sock), nil
}
