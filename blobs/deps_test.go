package blobs

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports keeps the package at the bottom of the layers (design §2):
// no other wats package, and no networking (the rules are pure).
func TestImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("glob: %v %v", files, err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			switch {
			case strings.HasPrefix(path, "github.com/wats-network/wats/"):
				t.Errorf("%s imports %s: no other wats package", name, path)
			case strings.Contains(path, ".") && path != "github.com/libp2p/go-libp2p/core/peer":
				t.Errorf("%s imports %s: only libp2p's core/peer outside the standard library", name, path)
			case path == "net" || strings.HasPrefix(path, "net/"):
				t.Errorf("%s imports %s: no networking", name, path)
			}
		}
	}
}
