//go:build !unix

package store

// freeSpace says nothing here: no statfs.
func freeSpace(string) string { return "" }
