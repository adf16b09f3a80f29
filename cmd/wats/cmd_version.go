package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// buildInfo is what `wats version` reports.
type buildInfo struct {
	Version   string `json:"version"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
	// Commit, Time and Modified come from the VCS stamp of the build, when
	// the binary was built from a checkout with -buildvcs.
	Commit   string `json:"commit,omitempty"`
	Time     string `json:"commit_time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
}

// readBuildInfo returns the version (the -ldflags value, else the module
// version when built with `go install ...@version`), the Go version and
// the VCS stamp if any.
func readBuildInfo() buildInfo {
	bi := buildInfo{Version: version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return bi
	}
	if v := info.Main.Version; bi.Version == "dev" && v != "" && v != "(devel)" {
		bi.Version = v
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			bi.Commit = s.Value
		case "vcs.time":
			bi.Time = s.Value
		case "vcs.modified":
			bi.Modified = s.Value == "true"
		}
	}
	return bi
}

func (c *cli) versionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, the Go version and the commit",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			bi := readBuildInfo()
			if asJSON {
				return c.printJSON(bi)
			}
			fmt.Fprintf(c.stdout, "wats %s\n", bi.Version)
			fmt.Fprintf(c.stdout, "go: %s %s\n", bi.GoVersion, bi.Platform)
			if bi.Commit != "" {
				mod := ""
				if bi.Modified {
					mod = " (modified)"
				}
				fmt.Fprintf(c.stdout, "commit: %s%s %s\n", bi.Commit, mod, bi.Time)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
