//go:build !unix

package api

import (
	"net"
	"os"
)

// canPassFiles: no descriptors over sockets here; AddFile uploads.
const canPassFiles = false

func withFile(conn net.Conn, _ *os.File) (net.Conn, error) {
	conn.Close()
	return nil, errNoDescriptor
}
