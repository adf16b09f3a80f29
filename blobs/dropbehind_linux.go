package blobs

import "golang.org/x/sys/unix"

// fileCache is the pageCache of the file open as fd.
type fileCache uintptr

// newFileCache returns the pageCache of the file open as fd, or nil when
// the kernel cannot describe its page cache (cachestat, Linux 6.5 and
// later) or fd is not a file of the system's (vfs.InvalidFd).
func newFileCache(fd uintptr) pageCache {
	if fd == ^uintptr(0) {
		return nil
	}
	var st unix.Cachestat_t
	if unix.Cachestat(uint(fd), &unix.CachestatRange{Off: 0, Len: 1}, &st, 0) != nil {
		return nil
	}
	return fileCache(fd)
}

func (fd fileCache) writtenBack(off, n int64) bool {
	var st unix.Cachestat_t
	if err := unix.Cachestat(uint(fd), &unix.CachestatRange{Off: uint64(off), Len: uint64(n)}, &st, 0); err != nil {
		return false
	}
	return st.Dirty == 0 && st.Writeback == 0
}

func (fd fileCache) drop(off, n int64) {
	_ = unix.Fadvise(int(fd), off, n, unix.FADV_DONTNEED)
}

// startWriteback is sync_file_range with SYNC_FILE_RANGE_WRITE: no wait,
// no metadata.
func (fd fileCache) startWriteback(off, n int64) {
	_ = unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
