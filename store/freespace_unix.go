//go:build unix

package store

import (
	"fmt"
	"syscall"
)

// freeSpace says how much room is left on dir's filesystem (" (N MiB
// free)"), or nothing if it cannot tell.
func freeSpace(dir string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return ""
	}
	return fmt.Sprintf(" (%d MiB free)", uint64(st.Bavail)*uint64(st.Bsize)>>20)
}
