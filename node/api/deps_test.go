package api

import (
	"go/build"
	"strings"
	"testing"
)

// TestImports keeps node/api at the bottom of the layers (design §2): it is
// shared by the daemon (package node) and the CLI, so it imports no other
// package of the project.
func TestImports(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if strings.HasPrefix(imp, "github.com/wats-network/wats/") {
			t.Errorf("node/api imports %s", imp)
		}
	}
}
