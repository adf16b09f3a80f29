//go:build !unix

package node

// freeSpace says nothing here: no statfs.
func freeSpace(string) string { return "" }
