package daemon

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wats-network/wats/api"
)

// TestImportRefusesPathOnlyDescriptor: a descriptor opened with O_PATH,
// which needs no read permission on the file (here of mode 0000, which
// only root could read otherwise), is refused, through the client too: the
// daemon reads only through a descriptor that allows reading, so nothing
// its caller could not read. (Root reads any file by CAP_DAC_OVERRIDE: the
// part that shows a caller without read access cannot open the file runs
// only as another user.)
func TestImportRefusesPathOnlyDescriptor(t *testing.T) {
	sock, c := serveAndDial(t, startNode(t, nil))
	path, _ := randFile(t, 5000, 1)
	if err := os.Chmod(path, 0); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		if _, err := os.Open(path); !errors.Is(err, fs.ErrPermission) {
			t.Fatalf("open of a mode-0000 file: %v, want permission denied", err)
		}
	}
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	status, body := rawRequest(t, sock, []string{importHead}, []int{fd})
	if status != http.StatusBadRequest || !strings.Contains(body, "O_PATH") {
		t.Errorf("an O_PATH descriptor: %d %s, want 400 naming O_PATH", status, body)
	}
	_, err = c.AddFile(context.Background(), f, nil)
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || !strings.Contains(ae.Message, "O_PATH") {
		t.Errorf("AddFile of an O_PATH file: %v, want the daemon's 400 (and no upload)", err)
	}
	if list, _ := c.Blobs(context.Background()); len(list) != 0 {
		t.Errorf("%d blobs stored", len(list))
	}
}
