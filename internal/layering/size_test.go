package layering

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxNodeLines bounds the lines of package node's own files, tests apart
// (ADR 0046): node wires the other packages together and carries out
// their verdicts; a decision, a protocol's mechanics or a store's grows in
// a package of its own.
const maxNodeLines = 2000

func TestNodeIsWiring(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "node", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("node's files: %v, %v", files, err)
	}
	lines := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines += bytes.Count(b, []byte("\n"))
	}
	if lines > maxNodeLines {
		t.Fatalf("package node has %d lines outside its tests, more than %d: move what is not wiring to the package it belongs to (ADR 0046)", lines, maxNodeLines)
	}
}
