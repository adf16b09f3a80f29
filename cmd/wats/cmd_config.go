package main

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/repo"
)

func (c *cli) configCmd() *cobra.Command {
	show := &cobra.Command{
		Use:   "show",
		Short: "Print the effective config of the repo as TOML",
		Long: `Print the repo's effective configuration as TOML: every key with its
value, defaults included. Needs no daemon. Without a repo it prints the
defaults.`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := c.checkRepoFlag(); err != nil {
				return err
			}
			var cfg *config.Config
			r, err := repo.Open(c.repoDir)
			switch {
			case errors.Is(err, repo.ErrNotInitialized):
				fmt.Fprintf(c.stderr, "no wats repo at %s: showing the defaults\n", c.repoDir)
				cfg = config.Default()
			case err != nil:
				return err
			default:
				cfg = r.Config
			}
			b, err := cfg.TOML()
			if err != nil {
				return err
			}
			_, err = c.stdout.Write(b)
			return err
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
	return group("config", "Show and validate the configuration", show, validate)
}
