package main

import (
	"go/build"
	"strings"
	"testing"
)

// TestImports keeps the layering of design §2: the CLI talks to a daemon
// through the control API client (node/api) and starts one with node.Run;
// it does not reach into the node's internals (event log, wire protocol,
// gossip, ...).
func TestImports(t *testing.T) {
	const module = "github.com/wats-network/wats/"
	allowed := map[string]bool{
		module + "config":   true,
		module + "repo":     true,
		module + "node":     true, // for node.Run only
		module + "node/api": true,
	}
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if strings.HasPrefix(imp, module) && !allowed[imp] {
			t.Errorf("cmd/wats imports %s; use the control API (node/api) instead", imp)
		}
	}
}
