package attack

import (
	"context"
	"net"
	"testing"
)

// TestFromSource: an id given a source address dials from it (127.0.0.2:
// on Linux all of 127.0.0.0/8 is local), and from the system's choice
// without one.
func TestFromSource(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, tc := range []struct {
		src  net.IP
		want string
	}{{net.ParseIP("127.0.0.2"), "127.0.0.2"}, {nil, "127.0.0.1"}} {
		d, err := fromSource(tc.src)(nil)
		if err != nil {
			t.Fatal(err)
		}
		c, err := d.DialContext(context.Background(), "tcp", l.Addr().String())
		if err != nil {
			t.Skipf("cannot dial from %v here: %v", tc.src, err)
		}
		s, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if got := s.RemoteAddr().(*net.TCPAddr).IP.String(); got != tc.want {
			t.Errorf("source %v: the listener sees %s, want %s", tc.src, got, tc.want)
		}
		s.Close()
		c.Close()
	}
}
