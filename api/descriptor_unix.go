//go:build unix

package api

import (
	"net"
	"os"
	"syscall"
)

// canPassFiles: Unix sockets here carry descriptors (SCM_RIGHTS).
const canPassFiles = true

// withFile returns conn, a new connection to the daemon's socket, as one
// whose first write carries f's descriptor as SCM_RIGHTS ancillary data
// (ADR 0036): the kernel gives the daemon a descriptor of the same open
// file, and the daemon reads through it with the access f was opened with.
// f must stay open until that write is done.
func withFile(conn net.Conn, f *os.File) (net.Conn, error) {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		conn.Close()
		return nil, errNoDescriptor
	}
	sc, err := f.SyscallConn()
	if err != nil {
		conn.Close()
		return nil, err
	}
	var rights []byte
	if err := sc.Control(func(fd uintptr) { rights = syscall.UnixRights(int(fd)) }); err != nil {
		conn.Close()
		return nil, err
	}
	return &fileConn{UnixConn: uc, rights: rights}, nil
}

// fileConn sends its descriptor with the first bytes written: the head of
// the one request made on it.
type fileConn struct {
	*net.UnixConn
	rights []byte // nil once sent
}

func (c *fileConn) Write(b []byte) (int, error) {
	if c.rights == nil || len(b) == 0 {
		return c.UnixConn.Write(b)
	}
	n, _, err := c.UnixConn.WriteMsgUnix(b, c.rights, nil)
	if n > 0 {
		c.rights = nil // gone with those bytes
	}
	if err != nil || n == len(b) {
		return n, err
	}
	m, err := c.UnixConn.Write(b[n:])
	return n + m, err
}
