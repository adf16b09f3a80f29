package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/repo"
)

// profileHelp lists config.Profiles for init's help: each name, what it is
// for and the keys it sets.
func profileHelp() string {
	var b strings.Builder
	for _, p := range config.Profiles {
		fmt.Fprintf(&b, "\n  %s: %s\n", p.Name, p.Doc)
		for _, k := range p.Keys {
			fmt.Fprintf(&b, "      %s\n", k)
		}
	}
	return b.String()
}

func (c *cli) initCmd() *cobra.Command {
	var force bool
	var profile string
	cmd := &cobra.Command{
		Use:   "init [--profile NAME] [--force]",
		Short: "Create a repo: identity key and default config",
		Long: `Create the repo directory (mode 0700) with a new Ed25519 identity key
(mode 0600) and a commented config.toml holding the defaults. Refuses if the
repo exists, unless --force, which replaces its key and config and deletes its
database (which belongs to the old identity).

--profile starts from the defaults changed for a kind of node:
` + profileHelp(),
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := c.checkRepoFlag(); err != nil {
				return err
			}
			cfg, err := config.WithProfile(profile)
			if err != nil {
				return err
			}
			r, err := repo.Init(c.repoDir, &repo.InitOptions{Force: force, Config: cfg})
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
	cmd.Flags().StringVar(&profile, "profile", "", "start from a profile's config: "+config.ProfileNames())
	return cmd
}
