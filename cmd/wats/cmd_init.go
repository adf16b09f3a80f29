package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/internal/humanize"
	"github.com/wats-network/wats/repo"
)

// profileHelp lists config.Profiles for init's help: each name, what it is
// for and changes (its Doc, wrapped to fit a terminal) and the keys it
// sets.
func profileHelp() string {
	var b strings.Builder
	for _, p := range config.Profiles {
		b.WriteString("\n")
		for i, line := range humanize.Wrap(p.Name+": "+p.Doc, maxHelpWidth-4) {
			indent := "  "
			if i > 0 {
				indent = "    "
			}
			fmt.Fprintf(&b, "%s%s\n", indent, line)
		}
		for _, k := range p.Keys {
			fmt.Fprintf(&b, "      %s\n", k)
		}
	}
	return b.String()
}

// maxHelpWidth is the width, in columns, that help texts and tables fit
// in (TestHelpLinesFit checks the help).
const maxHelpWidth = 100

// profileDoc is the Doc of the profile name ("" for none or unknown).
func profileDoc(name string) string {
	for _, p := range config.Profiles {
		if p.Name == name {
			return p.Doc
		}
	}
	return ""
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
database (which belongs to the old identity); it keeps the month's bandwidth
count, the disk ballast and databases a repair moved aside.

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
			if profile != "" {
				// What the profile changes, wrapped as in init's help.
				for i, line := range humanize.Wrap("profile "+profile+": "+profileDoc(profile), maxHelpWidth-2) {
					if i > 0 {
						line = "  " + line
					}
					fmt.Fprintln(c.stdout, line)
				}
			}
			fmt.Fprintf(c.stdout, "edit %s, then start the node with: %s\n",
				configPath(c.repoDir), c.hint("daemon", "--repo", c.repoDir))
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing repo's key and config, deleting its database")
	cmd.Flags().StringVar(&profile, "profile", "", "start from a profile's config: "+config.ProfileNames()+" (what each changes: above)")
	return cmd
}
