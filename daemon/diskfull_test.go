package daemon

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ipfs/go-cid"

	"github.com/wats-network/wats/blobs"
	"github.com/wats-network/wats/node"
)

// diskFull is an error as the node's stores return one on a full disk.
type diskFull struct{}

func (diskFull) Error() string        { return "disk full: the filesystem of /r has 1.00 MiB free" }
func (diskFull) Is(target error) bool { return target == node.ErrDiskFull }

// TestDiskFullAnswers: a write refused on a full disk is answered 507
// with the guard's sentence, whatever status the handler chose, and a
// fetch that failed on it says so without the packages it came through.
func TestDiskFullAnswers(t *testing.T) {
	wrapped := fmt.Errorf("node: store event: eventlog: append: %w", diskFull{})
	w := httptest.NewRecorder()
	writeError(w, http.StatusInternalServerError, wrapped)
	if w.Code != http.StatusInsufficientStorage || !strings.Contains(w.Body.String(), "disk full: the filesystem of /r") {
		t.Fatalf("a refused write: %d %s; want 507 with the guard's sentence", w.Code, w.Body)
	}
	w = httptest.NewRecorder()
	writeError(w, http.StatusBadRequest, errors.New("bad"))
	if w.Code != http.StatusBadRequest {
		t.Fatalf("another error: %d, want the handler's 400", w.Code)
	}
	c, _ := cid.Decode("bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku")
	msg := fetchFailure(c, fmt.Errorf("blobs: fetch: %w: %w", blobs.ErrStore, wrapped), false)
	if want := "could not fetch blob " + c.String() + ": disk full: the filesystem of /r has 1.00 MiB free"; msg != want {
		t.Fatalf("fetch failure %q, want %q", msg, want)
	}
}
