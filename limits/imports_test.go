package limits

import (
	"go/build"
	"strings"
	"testing"
)

// TestImportsNoWatsPackage keeps limits at the bottom of the dependency
// graph (design §2: proto, limits and challenge import no other project
// package).
func TestImportsNoWatsPackage(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkg.Imports) == 0 {
		t.Fatal("no imports found: the test is looking at the wrong directory")
	}
	for _, imp := range pkg.Imports {
		if strings.HasPrefix(imp, "github.com/wats-network/wats") {
			t.Errorf("limits imports %s", imp)
		}
	}
}
