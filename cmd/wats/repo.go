package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"syscall"

	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/node/api"
	"github.com/wats-network/wats/repo"
)

// configFile is the name of the config file in a repo (design §11:
// <repo>/config.toml).
const configFile = repo.ConfigFile

// defaultRepoDir is the default of --repo: $WATS_PATH, else ~/.wats; ""
// when neither can be found (checkRepoFlag then asks for --repo).
func defaultRepoDir() string {
	dir, err := repo.DefaultPath()
	if err != nil {
		return ""
	}
	return dir
}

// checkRepoFlag fails when --repo is empty: given as "", or defaulted
// without $WATS_PATH nor a home directory.
func (c *cli) checkRepoFlag() error {
	if c.repoDir == "" {
		return usageErrorf("no repo directory: pass --repo DIR or set $%s", repo.EnvPath)
	}
	return nil
}

// openRepo opens the --repo repo, with an error that says how to create
// one if there is none.
func (c *cli) openRepo() (*repo.Repo, error) {
	if err := c.checkRepoFlag(); err != nil {
		return nil, err
	}
	r, err := repo.Open(c.repoDir)
	if errors.Is(err, repo.ErrNotInitialized) {
		return nil, fmt.Errorf("no wats repo at %s; create one with: wats init --repo %s", c.repoDir, c.repoDir)
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// client returns a control API client for the daemon of the --repo repo.
// It does not check that one runs: the first call does, and apiError turns
// its api.ErrNoDaemon into the message that says how to start one.
func (c *cli) client() (*api.Client, error) {
	r, err := c.openRepo()
	if err != nil {
		return nil, err
	}
	return api.NewClient(r.SocketPath()), nil
}

// noDaemonError is the error of a command that needs a daemon when none
// runs for the repo.
type noDaemonError struct {
	repo, socket string
	cause        error // the *api.NoDaemonError
}

func (e *noDaemonError) Error() string {
	why := "no socket at " + e.socket
	if errors.Is(e.cause, syscall.ECONNREFUSED) {
		why = "nothing listens on " + e.socket
	}
	return fmt.Sprintf("no wats daemon is running for repo %s (%s); start one with: wats daemon --repo %s",
		e.repo, why, e.repo)
}

func (e *noDaemonError) Unwrap() error { return e.cause }

// apiError turns an error of the control API client into what the CLI
// prints: the no-daemon message, the daemon's own message for an HTTP
// error, or err itself.
func (c *cli) apiError(err error) error {
	if err == nil {
		return nil
	}
	var nd *api.NoDaemonError
	if errors.As(err, &nd) {
		return &noDaemonError{repo: c.repoDir, socket: nd.Socket, cause: err}
	}
	var ae *api.Error
	if errors.As(err, &ae) {
		return fmt.Errorf("the daemon says: %s", ae.Message)
	}
	return err
}

// configPath is the config file of the repo in dir.
func configPath(dir string) string { return filepath.Join(dir, configFile) }

// prepareNodeRepo makes dir a repo with the config cfg for a devnet node:
// it creates the repo (identity key and all) if there is none, and
// otherwise rewrites only its config file, so that a devnet started again
// keeps its nodes' identities and logs while its addresses (new ports each
// time) and bootstrap list are updated.
func prepareNodeRepo(dir string, cfg *config.Config) (*repo.Repo, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("devnet config for %s: %w", dir, err)
	}
	_, err := repo.Open(dir)
	var cerr *config.Error
	switch {
	case errors.Is(err, repo.ErrNotInitialized):
		return repo.Init(dir, repo.InitOptions{Config: cfg})
	case err != nil && !errors.As(err, &cerr) && !errors.Is(err, repo.ErrIncomplete):
		return nil, err // a bad key: not something to paper over
	}
	// An existing repo, or one whose config is missing or no longer
	// parses: (re)write the config.
	if err := writeFileAtomic(configPath(dir), config.Template(cfg), repo.FileMode); err != nil {
		return nil, err
	}
	return repo.Open(dir)
}

// nodeClient returns a control API client for the daemon of the repo in
// dir.
func nodeClient(dir string) (*api.Client, error) {
	r, err := repo.Open(dir)
	if err != nil {
		return nil, err
	}
	return api.NewClient(r.SocketPath()), nil
}

// initError explains a failed `wats init`.
func (c *cli) initError(err error) error {
	if errors.Is(err, repo.ErrAlreadyInitialized) {
		return fmt.Errorf("a wats repo already exists at %s; pass --force to replace its identity key, config and database", c.repoDir)
	}
	return err
}
