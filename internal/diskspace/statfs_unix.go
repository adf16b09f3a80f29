//go:build unix

package diskspace

import "golang.org/x/sys/unix"

// statfs reads the bytes available to an unprivileged user on dir's
// filesystem, and its size.
func statfs(dir string) (free, total uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), uint64(st.Blocks) * uint64(st.Bsize), nil
}
