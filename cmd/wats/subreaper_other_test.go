//go:build !linux

package main

import "testing"

// setSubreaper does nothing outside Linux, where init reaps orphans.
func setSubreaper(*testing.T) {}
