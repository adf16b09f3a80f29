package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/spf13/cobra"

	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/internal/fileio"
	"github.com/wats-network/wats/repo"
)

func (c *cli) configCmd() *cobra.Command {
	var showJSON bool
	show := &cobra.Command{
		Use:   "show [--json]",
		Short: "Print the config in effect as TOML: the running daemon's, else the file's",
		Long: `Print the configuration in effect as TOML: every key with its value,
defaults included. When the repo's daemon runs, that is the config it runs
with (read when it started), and the keys in which config.toml differs from it
are listed on stderr, with how each takes effect: log.level at a SIGHUP, the
others at the next start.
Without a daemon it is config.toml's; without a repo, the defaults.

With --json: an object with source ("daemon", "file" or "defaults"), config
(every key, dotted, with its value) and differs (the keys config.toml changes
that the daemon does not run with yet).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			eff, err := c.effectiveConfig(cmd.Context())
			if err != nil {
				return err
			}
			if showJSON {
				return c.printJSON(eff.view())
			}
			b, err := eff.running.TOML()
			if err != nil {
				return err
			}
			if _, err := c.stdout.Write(b); err != nil {
				return err
			}
			switch {
			case eff.fileErr != nil:
				fmt.Fprintf(c.stderr, "the daemon runs with the config above; the repo's config.toml is not valid, "+
					"and the daemon would not start with it:\n%s\n", userMessage(eff.fileErr))
			case eff.source == "defaults":
				fmt.Fprintf(c.stderr, "no wats repo at %s: showing the defaults\n", c.repoDir)
			case len(eff.differs) > 0:
				fmt.Fprintf(c.stderr, "the daemon runs with the config above; %s changes %s: %s\n",
					configPath(c.repoDir), strings.Join(eff.differs, ", "), c.applyHint(eff.differs, eff.pid))
			case eff.source == "file":
				fmt.Fprintf(c.stderr, "no daemon runs: the config of %s\n", configPath(c.repoDir))
			}
			return nil
		},
	}
	show.Flags().BoolVar(&showJSON, "json", false, "print JSON: source, config (dotted keys) and differs")

	get := &cobra.Command{
		Use:   "get KEY|TABLE",
		Short: "Print one key's value in effect, or a table's keys, as TOML",
		Long: `Print the value of KEY (dotted, as in config.toml: log.level,
p2p.listen) in effect: the running daemon's, else config.toml's (its default
if the file leaves it out). When the daemon runs with another value than the
file's, both are said, and how the file's takes effect (log.level at a SIGHUP,
the others at the next start). Given a TABLE (p2p, blobs), print its header and
every key of it with its value.`,
		Example: `  wats config get log.level
  wats config get limits.sync_per_min
  wats config get blobs`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			keys := config.TableKeys(args[0])
			if keys == nil {
				if _, err := config.Default().Get(args[0]); err != nil {
					return usageErrorf("%s", userMessage(err))
				}
				keys = args[:1]
			}
			eff, err := c.effectiveConfig(cmd.Context())
			if err != nil {
				return err
			}
			if keys[0] != args[0] {
				fmt.Fprintf(c.stdout, "[%s]\n", args[0])
			}
			var differs []string
			for _, k := range keys {
				v, _ := eff.running.Get(k)
				if keys[0] != args[0] {
					fmt.Fprintf(c.stdout, "%s = %s\n", strings.TrimPrefix(k, args[0]+"."), v)
				} else {
					fmt.Fprintln(c.stdout, v)
				}
				if slices.Contains(eff.differs, k) {
					differs = append(differs, k)
				}
			}
			for _, k := range differs {
				v, _ := eff.running.Get(k)
				fv, _ := eff.file.Get(k)
				fmt.Fprintf(c.stderr, "the daemon runs with %s = %s; %s has %s: %s\n", k, v, configPath(c.repoDir), fv,
					c.applyHint([]string{k}, eff.pid))
			}
			return nil
		},
	}

	set := &cobra.Command{
		Use:   "set KEY VALUE",
		Short: "Set one key in config.toml, checked as the daemon would",
		Long: `Set KEY (dotted, as in config.toml) to VALUE in the repo's config.toml,
keeping every comment and other line. VALUE is TOML ("debug", 30, true,
["a", "b"]); strings may be given unquoted (debug) and lists of strings as
a,b; a negative number is a VALUE, not a flag (-5). The new file is
checked as the daemon checks it (exact names, types, bounds, the rules
between keys) and written only if it passes. A running daemon applies
log.level at a SIGHUP and the other keys at its next start.`,
		Example: `  wats config set log.level debug
  wats config set p2p.listen /ip4/0.0.0.0/tcp/9287,/ip4/0.0.0.0/udp/9287/quic-v1
  wats config set limits.sync_per_min 1200`,
		// Its flags are parsed here (setArgs), so that a negative number is
		// a VALUE, not a flag.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, raw []string) error {
			args, repoDir, help, err := setArgs(raw)
			if help {
				return cmd.Help()
			}
			if err != nil {
				return usageErrorf("%v", err)
			}
			if repoDir != "" {
				c.repoDir = repoDir
			}
			if err := c.checkRepoFlag(); err != nil {
				return err
			}
			if _, err := config.Default().Get(args[0]); err != nil {
				return usageErrorf("%s", userMessage(err))
			}
			path := configPath(c.repoDir)
			data, err := os.ReadFile(path)
			if errors.Is(err, fs.ErrNotExist) && !repoExists(c.repoDir) {
				return c.noRepoError()
			}
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			out, err := config.Set(data, args[0], args[1])
			if err != nil {
				return fmt.Errorf("%s not changed: %w", path, err)
			}
			if err := fileio.WriteAtomic(path, out, 0o600); err != nil {
				return err
			}
			eff, err := c.effectiveConfig(cmd.Context())
			if err != nil {
				return err
			}
			v, _ := eff.file.Get(args[0])
			fmt.Fprintf(c.stdout, "%s = %s in %s\n", args[0], v, path)
			if slices.Contains(eff.differs, args[0]) {
				rv, _ := eff.running.Get(args[0])
				fmt.Fprintf(c.stderr, "the daemon runs with %s: %s\n", rv, c.applyHint(args[:1], eff.pid))
			}
			return nil
		},
	}
	validate := &cobra.Command{
		Use:   "validate [FILE]",
		Short: "Check a config file (default: the repo's config.toml)",
		Long: `Check FILE (default: <repo>/config.toml) as the daemon would: strict TOML
decoding and every key's rule. Prints the problems it finds, each with its
line, and exits 1 if there is any; otherwise prints "FILE: ok". The checks
run in phases (syntax and unknown keys, then types, then values), and a
phase with problems stops the later ones: after fixing what it printed, run
it again, as the later checks may find more. Needs no daemon.`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(_ *cobra.Command, args []string) error {
			var file string
			if len(args) == 1 {
				file = args[0]
			} else {
				if err := c.checkRepoFlag(); err != nil {
					return err
				}
				file = configPath(c.repoDir)
			}
			_, err := config.Load(file)
			switch {
			case errors.Is(err, fs.ErrNotExist) && len(args) == 1:
				return fmt.Errorf("there is no file %s", file)
			case errors.Is(err, fs.ErrNotExist) && repoExists(c.repoDir):
				return fmt.Errorf("there is no config at %s; create it (an empty file means every default)", file)
			case errors.Is(err, fs.ErrNotExist):
				return fmt.Errorf("there is no config at %s; create a repo, with a config holding the defaults, with: %s",
					file, c.hint("init", "--repo", c.repoDir))
			case err != nil:
				return fmt.Errorf("%s is not a valid wats config:\n%w", file, err)
			}
			fmt.Fprintf(c.stdout, "%s: ok\n", file)
			return nil
		},
	}
	return group("config", "Show, get, set and validate the configuration", show, get, set, validate)
}

// effective is the config in effect for `config show` and `config get`.
type effective struct {
	// source is "daemon" (the running daemon's), "file" (config.toml's, no
	// daemon answering) or "defaults" (no repo).
	source string
	// running is the config in effect; file is config.toml's (the same
	// unless source is "daemon").
	running, file *config.Config
	// differs are the keys in which file differs from running.
	differs []string
	// fileErr is why config.toml could not be read, when the daemon's
	// config is shown instead.
	fileErr error
	// pid is the running daemon's (repo.LockHolder), 0 when none runs
	// or it is unknown.
	pid int
}

// effectiveConfig returns the config in effect for the --repo repo: the
// running daemon's if it answers, else the file's, else (no repo) the
// defaults. A broken config.toml is an error only without a daemon.
func (c *cli) effectiveConfig(ctx context.Context) (*effective, error) {
	if err := c.checkRepoFlag(); err != nil {
		return nil, err
	}
	r, ferr := repo.Open(c.repoDir)
	if errors.Is(ferr, repo.ErrNotInitialized) {
		d := config.Default()
		return &effective{source: "defaults", running: d, file: d}, nil
	}
	if cl, err := c.client(); err == nil {
		if rc, err := cl.Config(ctx); err == nil {
			running, err := config.Parse([]byte(rc.TOML), "the daemon's config")
			if err != nil {
				return nil, fmt.Errorf("the daemon sent a config that does not parse: %w", err)
			}
			e := &effective{source: "daemon", running: running, file: running, fileErr: ferr}
			if pid, held, err := repo.LockHolder(c.repoDir); err == nil && held {
				e.pid = pid
			}
			if ferr == nil {
				e.file = r.Config
				e.differs = config.Diff(running, r.Config)
			}
			return e, nil
		}
	}
	if ferr != nil {
		return nil, ferr
	}
	return &effective{source: "file", running: r.Config, file: r.Config}, nil
}

// configView is the JSON of `config show --json`.
type configView struct {
	Source  string         `json:"source"`
	Config  map[string]any `json:"config"`
	Differs []string       `json:"differs"`
}

func (e *effective) view() configView {
	v := configView{Source: e.source, Config: map[string]any{}, Differs: e.differs}
	if v.Differs == nil {
		v.Differs = []string{}
	}
	for _, k := range config.Keys() {
		s, _ := e.running.Get(k)
		v.Config[k] = jsontext.Value(tomlToJSON(s))
	}
	return v
}

// tomlToJSON turns the one-line TOML of a config value (config.Get: a
// string, number, bool or list of strings) into JSON, which shares their
// syntax but for TOML's literal strings, which Get does not write.
func tomlToJSON(s string) string {
	if jsontext.Value(s).IsValid() {
		return s
	}
	return strconv.Quote(s)
}

// reloadable are the keys a running daemon applies at a SIGHUP
// (reloadConfig); the others take a restart.
var reloadable = map[string]bool{"log.level": true}

// applyHint says how the keys changed in config.toml take effect in the
// running daemon, whose pid is pid (0: unknown): a SIGHUP when all are
// reloadable, a restart when none is, and both said when some are. The
// SIGHUP is a command to paste: kill -HUP with the pid (repo.LockHolder),
// else reading it from repo.lock, which holds the pid alone.
func (c *cli) applyHint(keys []string, pid int) string {
	kill := "kill -HUP $(cat " + shellQuote(filepath.Join(c.repoDir, repo.LockFile)) + ")"
	if pid > 0 {
		kill = fmt.Sprintf("kill -HUP %d", pid)
	}
	var hup []string
	for _, k := range keys {
		if reloadable[k] {
			hup = append(hup, k)
		}
	}
	switch len(hup) {
	case len(keys):
		return "send the daemon a SIGHUP to apply: " + kill
	case 0:
		return "restart the daemon to apply"
	}
	return fmt.Sprintf("restart the daemon to apply them all; a SIGHUP applies %s alone: %s", strings.Join(hup, ", "), kill)
}

// setArgs parses the command line of `config set` (DisableFlagParsing):
// --repo DIR or --repo=DIR, -h or --help, "--" (what follows is
// positional), and exactly two positional args, KEY and VALUE, of which
// VALUE may begin with "-" (a negative number). Any other flag is an
// error.
func setArgs(raw []string) (args []string, repoDir string, help bool, err error) {
	for i := 0; i < len(raw); i++ {
		a := raw[i]
		switch {
		case a == "--":
			args = append(args, raw[i+1:]...)
			i = len(raw)
		case a == "-h" || a == "--help":
			return nil, "", true, nil
		case a == "--repo":
			if i+1 == len(raw) {
				return nil, "", false, errors.New("flag needs an argument: --repo")
			}
			i++
			repoDir = raw[i]
		case strings.HasPrefix(a, "--repo="):
			repoDir = strings.TrimPrefix(a, "--repo=")
		case strings.HasPrefix(a, "--") || (strings.HasPrefix(a, "-") && len(args) != 1):
			// Only VALUE, the second positional, may begin with "-".
			return nil, "", false, fmt.Errorf("unknown flag: %s", a)
		default:
			args = append(args, a)
		}
	}
	if len(args) != 2 {
		return nil, "", false, fmt.Errorf("accepts 2 args, KEY and VALUE, received %d", len(args))
	}
	return args, repoDir, false, nil
}
