package daemon

import "golang.org/x/sys/unix"

// oPath is Linux's O_PATH: a descriptor that names a file without access
// to its content, which opening needs no read permission for.
const oPath = unix.O_PATH
