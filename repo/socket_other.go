//go:build !unix

package repo

import "os"

func ownerUID(string) int { return os.Getuid() }

func checkPrivateDir(string) error { return nil }
