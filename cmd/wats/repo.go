package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/repo"
	"github.com/wats-network/wats/store"
)

// configFile is the name of the config file in a repo (docs/design.md §11:
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

// openRepo opens the --repo repo, config included, with an error that says
// how to create one if there is none. Only the commands that need the
// config use it (daemon); those that only call the daemon use client.
func (c *cli) openRepo() (*repo.Repo, error) {
	if err := c.checkRepoFlag(); err != nil {
		return nil, err
	}
	r, err := repo.Open(c.repoDir)
	if errors.Is(err, repo.ErrNotInitialized) {
		return nil, c.noRepoError()
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// noRepoError says there is no repo at --repo and how to create one.
func (c *cli) noRepoError() error {
	return fmt.Errorf("no wats repo at %s; create one with: %s", c.repoDir, c.hint("init", "--repo", c.repoDir))
}

// clientFor checks a command's argument arg with check, then returns
// client's.
func (c *cli) clientFor(check func(string) error, arg string) (*api.Client, error) {
	if err := check(arg); err != nil {
		return nil, err
	}
	return c.client()
}

// client returns a control API client for the daemon of the --repo repo.
// It reads nothing of the repo but its location (repo.SocketPathOf), so that a
// config.toml edited while the daemon runs, and broken, does not stop the
// commands that only talk to the daemon. It does not check that a daemon
// runs: the first call does, and apiError turns its api.ErrNoDaemon into
// the message that says how to start one.
func (c *cli) client() (*api.Client, error) {
	if err := c.checkRepoFlag(); err != nil {
		return nil, err
	}
	sock, err := repo.SocketPathOf(c.repoDir)
	if errors.Is(err, repo.ErrNotInitialized) {
		return nil, c.noRepoError()
	}
	if err != nil {
		return nil, err
	}
	return api.NewClient(sock), nil
}

// repoExists reports whether dir holds a repo (whole or not).
func repoExists(dir string) bool {
	_, err := repo.SocketPathOf(dir)
	return err == nil
}

// noDaemonError is the error of a command that needs a daemon when none
// runs for the repo.
type noDaemonError struct {
	repo, socket string
	start        string // the command that starts one
	cause        error  // the *api.NoDaemonError
}

func (e *noDaemonError) Error() string {
	why := "no socket at " + e.socket
	if errors.Is(e.cause, syscall.ECONNREFUSED) {
		why = "nothing listens on " + e.socket
	}
	return fmt.Sprintf("no wats daemon is running for repo %s (%s); start one with: %s", e.repo, why, e.start)
}

func (e *noDaemonError) Unwrap() error { return e.cause }

// daemonError is an error the daemon reported, in an HTTP error response
// or in the last line of a stream. Every such error reads "the daemon
// says: MSG", after what failed when there is more to say.
type daemonError struct {
	what string // what failed, e.g. "sync of 12D3KooW…"; "" for nothing more
	msg  string
	err  error // the *api.Error, or api.ErrSyncFailed
}

func (e *daemonError) Error() string {
	if e.what == "" {
		return "the daemon says: " + e.msg
	}
	return e.what + " failed; the daemon says: " + e.msg
}

func (e *daemonError) Unwrap() error { return e.err }

// errStreamClosed is what the CLI says when the daemon closes a stream
// before its end (api.ErrStreamEnded).
var errStreamClosed = errors.New("the daemon closed the stream (it may have stopped)")

// ask makes one call of the control API for cmd: the client of c's repo
// (client), call with cmd's context, and its error as the CLI prints it
// (apiError). call is usually a method expression, (*api.Client).Status.
func ask[T any](c *cli, cmd *cobra.Command, call func(*api.Client, context.Context) (T, error)) (T, error) {
	cl, err := c.client()
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := call(cl, cmd.Context())
	return v, c.apiError(err)
}

// askOrRead is ask, or, when no daemon runs, read on the stopped node's
// repo (c.offline): the commands that show what a node holds work with the
// daemon stopped too.
func askOrRead[T any](c *cli, cmd *cobra.Command, call func(*api.Client, context.Context) (T, error), read func(*store.Offline) (T, error)) (T, error) {
	cl, err := c.client()
	if err != nil {
		var zero T
		return zero, err
	}
	ctx := cmd.Context()
	v, err := call(cl, ctx)
	if !daemonGone(err) {
		return v, c.apiError(err)
	}
	// No daemon answers: read the repo on disk, unless a daemon holds it
	// (starting or stopping): then ask it once it answers, or read once it
	// is gone, for up to daemonAnswerWait.
	offline := func() error {
		return c.offline(func(o *store.Offline) error {
			var rerr error
			v, rerr = read(o)
			return rerr
		})
	}
	err = offline()
	var le *repo.LockedError
	for deadline := time.Now().Add(daemonAnswerWait); errors.As(err, &le) && time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return v, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if v, err = call(cl, ctx); !daemonGone(err) {
			return v, c.apiError(err)
		}
		err = offline()
	}
	if errors.As(err, &le) {
		return v, fmt.Errorf("%s is held by a daemon (%s) whose control API did not answer in %v: it is starting or stopping; try again",
			c.repoDir, pidText(le.PID), daemonAnswerWait)
	}
	return v, err
}

// daemonGone reports whether err says no daemon answers: none runs, or
// the one that did closed the connection midway (it is stopping): read
// as an end of file or a reset, or, as the request was written, a broken
// pipe.
func daemonGone(err error) bool {
	return errors.Is(err, api.ErrNoDaemon) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE)
}

// daemonAnswerWait bounds how long a command that reads the repo waits for
// a daemon that holds it, starting or stopping, to answer or be gone.
const daemonAnswerWait = 15 * time.Second

// pidText names a process id, or says it is unknown (0).
func pidText(pid int) string {
	if pid > 0 {
		return fmt.Sprintf("pid %d", pid)
	}
	return "pid unknown"
}

// apiError turns an error of the control API client into what the CLI
// prints: the no-daemon message, the daemon's own message for an HTTP
// error, the closed-stream message, or err itself.
func (c *cli) apiError(err error) error {
	if err == nil {
		return nil
	}
	var nd *api.NoDaemonError
	if errors.As(err, &nd) {
		return &noDaemonError{repo: c.repoDir, socket: nd.Socket, cause: err,
			start: c.hint("daemon", "--repo", c.repoDir)}
	}
	var ae *api.Error
	if errors.As(err, &ae) {
		return &daemonError{msg: ae.Message, err: err}
	}
	if errors.Is(err, api.ErrStreamEnded) {
		return errStreamClosed
	}
	return err
}

// configPath is the config file of the repo in dir.
func configPath(dir string) string { return filepath.Join(dir, configFile) }

// initError explains a failed `wats init`.
func (c *cli) initError(err error) error {
	if errors.Is(err, repo.ErrAlreadyInitialized) {
		return fmt.Errorf("a wats repo already exists at %s; pass --force to replace its identity key, config and database", c.repoDir)
	}
	return err
}

// offline runs read with the repo's database opened read-only, for the
// commands that can answer without a daemon (id, events ls, blob ls, peers
// cache) when none runs: it says so on stderr, so that a script reading
// stdout gets the same output as with a daemon.
func (c *cli) offline(read func(*store.Offline) error) error {
	r, err := c.openRepo()
	if err != nil {
		return err
	}
	o, err := store.OpenOffline(r)
	if err != nil {
		return fmt.Errorf("no daemon runs for %s, and its database could not be read: %w", r.Dir, err)
	}
	defer o.Close()
	fmt.Fprintf(c.stderr, "no daemon runs: read from %s on disk\n", r.Dir)
	return read(o)
}

// show asks the daemon with call (ask) and prints its answer: as JSON with
// asJSON, else with print.
func show[T any](c *cli, cmd *cobra.Command, asJSON bool, call func(*api.Client, context.Context) (T, error), print func(T) error) error {
	v, err := ask(c, cmd, call)
	if err != nil {
		return err
	}
	if asJSON {
		return c.printJSON(v)
	}
	return print(v)
}
