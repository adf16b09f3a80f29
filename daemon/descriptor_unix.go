//go:build unix

package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/wats-network/wats/api"
)

// maxPassedFiles is how many descriptors a read of a control connection
// takes: a PathBlobImport request passes one. The buffer for control
// messages holds that many; the kernel closes any further ones the
// message carried (MSG_CTRUNC), and the request is then refused.
const maxPassedFiles = 1

// wrapListener makes the connections l accepts take descriptors passed
// with SCM_RIGHTS (ADR 0036).
func wrapListener(l net.Listener) net.Listener { return descListener{l} }

type descListener struct{ net.Listener }

func (l descListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if uc, ok := c.(*net.UnixConn); ok && err == nil {
		return &descConn{UnixConn: uc, oob: make([]byte, syscall.CmsgSpace(4*maxPassedFiles))}, nil
	}
	return c, err
}

// descConn is a control connection that receives the descriptors a client
// passes with the bytes it sends (SCM_RIGHTS): it reads with recvmsg and
// keeps the one descriptor that came with the request being served until
// its handler takes it (takeFile) or the request ends (drop). It never
// holds more than one.
type descConn struct {
	*net.UnixConn
	oob []byte // read by Read only: the server reads a connection from one goroutine at a time

	mu struct {
		sync.Mutex
		// fd is the descriptor passed and not yet taken when has is set.
		// INVARIANT: has only while err is nil.
		fd  int
		has bool
		// err is set when the client passed more than one descriptor
		// before the request ended, or an unreadable control message.
		err error
	}
}

// errManyFiles and errNoFile are what takeFile says of what came.
var (
	errManyFiles = errors.New("more than one descriptor came with the request; pass one, the file's")
	errNoFile    = errors.New("no file descriptor came with the request (a socket forwarded from another host carries none): upload the file's bytes with POST " + api.PathBlobs)
)

func (c *descConn) Read(b []byte) (int, error) {
	n, oobn, flags, _, err := c.UnixConn.ReadMsgUnix(b, c.oob)
	if err != nil {
		// recvmsg's failure can leave n at -1, which no io.Reader may
		// return (the read of a plain conn says 0).
		return max(n, 0), err
	}
	if oobn > 0 || flags&syscall.MSG_CTRUNC != 0 {
		c.received(c.oob[:oobn], flags&syscall.MSG_CTRUNC != 0)
	}
	return n, nil
}

// received keeps the descriptor of a control message, or closes what came
// and remembers the fault when more than one came (in this message, cut
// short by the kernel, or beside one not yet taken).
func (c *descConn) received(oob []byte, truncated bool) {
	var fds []int
	msgs, perr := syscall.ParseSocketControlMessage(oob)
	for i := range msgs {
		got, err := syscall.ParseUnixRights(&msgs[i])
		if err == nil {
			fds = append(fds, got...)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.mu.err != nil:
	case perr != nil:
		c.mu.err = fmt.Errorf("an unreadable control message came with the request: %w", perr)
	case truncated || len(fds) > 1 || (c.mu.has && len(fds) > 0):
		c.mu.err = errManyFiles
	case len(fds) == 1:
		c.mu.fd, c.mu.has = fds[0], true
		return
	default:
		return
	}
	for _, fd := range fds {
		syscall.Close(fd)
	}
	c.closeLocked()
}

// closeLocked closes the descriptor held, if any. REQUIRES: c.mu held.
func (c *descConn) closeLocked() {
	if c.mu.has {
		syscall.Close(c.mu.fd)
		c.mu.has = false
	}
}

// takeFile returns the descriptor that came with the request as an open
// file (the caller closes it), errNoFile if none did, or the fault of what
// came.
func (c *descConn) takeFile() (*os.File, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.mu.err; err != nil {
		c.mu.err = nil
		return nil, err
	}
	if !c.mu.has {
		return nil, errNoFile
	}
	c.mu.has = false
	return os.NewFile(uintptr(c.mu.fd), "passed file"), nil
}

// drop forgets what came with a request that is over: a descriptor no
// handler took is closed.
func (c *descConn) drop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeLocked()
	c.mu.err = nil
}

func (c *descConn) Close() error {
	c.drop()
	return c.UnixConn.Close()
}

// connState drops, when a request is over, whatever descriptor came with
// it and was not taken (http.Server.ConnState).
func connState(c net.Conn, s http.ConnState) {
	if dc, ok := c.(*descConn); ok && s != http.StateNew && s != http.StateActive {
		dc.drop()
	}
}

type connKey struct{}

// connContext puts a control connection in its requests' contexts
// (http.Server.ConnContext), for passedFile.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if dc, ok := c.(*descConn); ok {
		return context.WithValue(ctx, connKey{}, dc)
	}
	return ctx
}

// passedFile returns the file whose descriptor came with the request of
// ctx, checked by checkPassedFile, and its size; errNoFile if none came.
func passedFile(ctx context.Context) (*os.File, int64, error) {
	dc, _ := ctx.Value(connKey{}).(*descConn)
	if dc == nil {
		return nil, 0, errNoFile
	}
	f, err := dc.takeFile()
	if err != nil {
		return nil, 0, err
	}
	size, err := checkPassedFile(f)
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, size, nil
}

// passedOutput returns the file whose descriptor came with the request of
// ctx for the daemon to write a blob into (api.PathBlobStreamFile),
// checked by checkOutputFile; errNoFile if none came.
func passedOutput(ctx context.Context) (*os.File, error) {
	dc, _ := ctx.Value(connKey{}).(*descConn)
	if dc == nil {
		return nil, errNoFile
	}
	f, err := dc.takeFile()
	if err != nil {
		return nil, err
	}
	if err := checkOutputFile(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// descriptorState returns the status flags (F_GETFL) and the stat of the
// passed descriptor f.
func descriptorState(f *os.File) (flags int, st unix.Stat_t, err error) {
	sc, err := f.SyscallConn()
	if err != nil {
		return 0, st, err
	}
	var ferr error
	if err := sc.Control(func(fd uintptr) {
		if flags, ferr = unix.FcntlInt(fd, unix.F_GETFL, 0); ferr == nil {
			ferr = unix.Fstat(int(fd), &st)
		}
	}); err != nil {
		return 0, st, err
	}
	if ferr != nil {
		return 0, st, fmt.Errorf("the descriptor passed: %w", ferr)
	}
	return flags, st, nil
}

// checkOutputFile checks that f, a descriptor a client passed, may take a
// blob's bytes: open for writing, without O_APPEND, a regular file, empty
// and at offset 0, so that once written it holds exactly the blob. The
// daemon writes to the file only through f, so nowhere its caller could
// not.
func checkOutputFile(f *os.File) error {
	flags, st, err := descriptorState(f)
	if err != nil {
		return err
	}
	switch {
	case oPath != 0 && flags&oPath != 0, flags&unix.O_ACCMODE == unix.O_RDONLY:
		return errors.New("the descriptor passed is not open for writing")
	case flags&unix.O_APPEND != 0:
		return errors.New("the descriptor passed is open for appending; blob get writes a new file from its start")
	}
	if kind := fileKind(uint32(st.Mode) & unix.S_IFMT); kind != "" {
		return fmt.Errorf("the descriptor passed is %s, not a regular file", kind)
	}
	if st.Size != 0 {
		return fmt.Errorf("the file passed holds %d bytes; blob get writes into an empty file", st.Size)
	}
	off, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return fmt.Errorf("the descriptor passed: %w", err)
	}
	if off != 0 {
		// The daemon writes at the descriptor's offset: past 0, the file
		// would hold a hole of zeros before the blob.
		return fmt.Errorf("the descriptor passed is at offset %d; blob get writes a new file from its start", off)
	}
	return nil
}

// checkPassedFile checks that f, a descriptor a client passed, may be
// imported: open for reading (not write-only, not O_PATH, a handle that
// needs no read permission on the file) and a regular file. It returns the
// file's size. The daemon reads the file only through f, so it reads
// nothing its caller could not: the kernel checked the caller's access
// when the caller opened it, and checks f's mode at each read.
func checkPassedFile(f *os.File) (int64, error) {
	flags, st, err := descriptorState(f)
	if err != nil {
		return 0, err
	}
	switch {
	case oPath != 0 && flags&oPath != 0:
		return 0, errors.New("the descriptor passed was opened with O_PATH, which does not allow reading the file")
	case flags&unix.O_ACCMODE == unix.O_WRONLY:
		return 0, errors.New("the descriptor passed is open for writing only, not for reading")
	}
	if kind := fileKind(uint32(st.Mode) & unix.S_IFMT); kind != "" {
		return 0, fmt.Errorf("the descriptor passed is %s, not a regular file: blob add takes a file", kind)
	}
	return st.Size, nil
}

// fileKind names a file type other than a regular file ("" for one).
func fileKind(typ uint32) string {
	switch typ {
	case unix.S_IFREG:
		return ""
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFIFO:
		return "a pipe"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "a device"
	case unix.S_IFLNK:
		return "a symbolic link"
	default:
		return "not a file"
	}
}
