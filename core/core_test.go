package core

import "testing"

// TestIsKindChar: exactly a-z, 0-9, '.', '_' and '-', checked at the edges
// of each range.
func TestIsKindChar(t *testing.T) {
	for _, r := range "`{/:AZ ,+\x00\x7f" {
		if IsKindChar(r) {
			t.Errorf("IsKindChar(%q) = true", r)
		}
	}
	for _, r := range "az09._-" {
		if !IsKindChar(r) {
			t.Errorf("IsKindChar(%q) = false", r)
		}
	}
	if IsKindChar('é') || IsKindChar('ａ') {
		t.Error("a non-ASCII letter is a kind character")
	}
}
