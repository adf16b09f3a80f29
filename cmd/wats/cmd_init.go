package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/wats-network/wats/repo"
)

func (c *cli) initCmd() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "init [--force]",
		Short: "Create a repo: identity key and default config",
		Long: `Create the repo directory (mode 0700) with a new Ed25519 identity key
(mode 0600) and a commented config.toml holding the defaults. Refuses if the
repo exists, unless --force, which replaces its key and config and deletes its
database (which belongs to the old identity).`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := c.checkRepoFlag(); err != nil {
				return err
			}
			r, err := repo.Init(c.repoDir, repo.InitOptions{Force: force})
			if err != nil {
				return c.initError(err)
			}
			fmt.Fprintf(c.stdout, "initialized a wats repo at %s\n", c.repoDir)
			fmt.Fprintf(c.stdout, "peer id: %s\n", repo.PeerID(r))
			fmt.Fprintf(c.stdout, "edit %s, then start the node with: %s\n",
				configPath(c.repoDir), c.hint("daemon", "--repo", c.repoDir))
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing repo's key and config, deleting its database")
	return cmd
}
