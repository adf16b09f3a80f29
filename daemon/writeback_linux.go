package daemon

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback starts writing the n bytes of f at off to the disk and
// returns at once (sync_file_range with SYNC_FILE_RANGE_WRITE: no wait,
// no metadata). A hint: an error changes nothing, the fsync that follows
// writes whatever is left.
func startWriteback(f *os.File, off, n int64) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
	})
}
