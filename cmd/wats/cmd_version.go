package main

import (
	"fmt"
	"io"
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
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = nil
	}
	return buildInfoFrom(version, info)
}

// buildInfoFrom is readBuildInfo for the -ldflags version v and the build
// info of the binary (nil if it has none).
func buildInfoFrom(v string, info *debug.BuildInfo) buildInfo {
	bi := buildInfo{Version: v, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if info == nil {
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
		Short: "Print the version, the Go version and, if the build recorded it, the commit",
		Long: `Print the wats version, the Go version and platform, and the commit the
binary was built from when the build recorded it: go build stamps the commit
(vcs.revision) when it builds in a git checkout, unless -buildvcs=false (as
GOFLAGS may set).`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			bi := readBuildInfo()
			if asJSON {
				return c.printJSON(bi)
			}
			return printBuildInfo(c.stdout, bi)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// printBuildInfo writes bi as `wats version` prints it: a line each for
// the version, Go and the commit (if recorded).
func printBuildInfo(w io.Writer, bi buildInfo) error {
	fmt.Fprintf(w, "wats %s\n", bi.Version)
	fmt.Fprintf(w, "go: %s %s\n", bi.GoVersion, bi.Platform)
	if bi.Commit != "" {
		mod := ""
		if bi.Modified {
			mod = " (modified)"
		}
		_, err := fmt.Fprintf(w, "commit: %s%s %s\n", bi.Commit, mod, bi.Time)
		return err
	}
	return nil
}
