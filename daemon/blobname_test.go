//go:build unix

package daemon

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/eventlog"
)

// TestAddNamedBlob: the name an add gives (the query parameter name, by
// descriptor and by upload) is the blob's name in GET PathBlobs, at
// eventlog.MaxBlobNameBytes bytes too; one byte past it, or a control
// character, is a 400 that stores nothing. The add's name wins over the
// one an event gives the blob; a blob added without one shows the
// event's (docs/adr/0051).
func TestAddNamedBlob(t *testing.T) {
	n := startNode(t, nil)
	c := apiClient(t, n)
	ctx := context.Background()
	atBound := strings.Repeat("é", eventlog.MaxBlobNameBytes/2) + "." // 255 bytes
	byDesc, _ := randFile(t, 3000, 1)
	byUpload, _ := randFile(t, 4000, 2)
	unnamed, unnamedData := randFile(t, 5000, 3)
	d, err := addFile(t, c, byDesc, &api.AddFileOptions{Name: "report.pdf"})
	if err != nil || d.Name != "report.pdf" {
		t.Fatalf("by descriptor: %+v, %v", d, err)
	}
	u, err := addFile(t, c, byUpload, &api.AddFileOptions{Name: atBound, Upload: true})
	if err != nil || u.Name != atBound {
		t.Fatalf("uploaded, a name of %d bytes: %+v, %v", len(atBound), u, err)
	}
	x, err := addFile(t, c, unnamed, nil)
	if err != nil || x.Name != "" {
		t.Fatalf("without a name: %+v, %v", x, err)
	}
	for _, bad := range []string{atBound + "x", "two\nlines", "tab\t"} {
		for _, upload := range []bool{false, true} {
			path, _ := randFile(t, 100, 9)
			_, err := addFile(t, c, path, &api.AddFileOptions{Name: bad, Upload: upload})
			var ae *api.Error
			if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || !strings.Contains(ae.Message, "name") {
				t.Errorf("name %q (upload %v): %v; want a 400 that names the name", bad, upload, err)
			}
		}
	}
	// Events name the first blob and the unnamed one otherwise.
	for _, b := range []*api.BlobInfo{d, x} {
		if _, err := c.AddEvent(ctx, "file", jsontext.Value(`{}`), api.BlobRef{CID: b.CID, Size: b.Size, Name: "from-the-event.bin"}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := c.Blobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, b := range list {
		got[b.CID] = b.Name
	}
	want := map[string]string{d.CID: "report.pdf", u.CID: atBound, x.CID: "from-the-event.bin"}
	if len(got) != len(want) {
		t.Fatalf("%d blobs listed, want %d (a bad name stored nothing): %+v", len(got), len(want), list)
	}
	for cid, name := range want {
		if got[cid] != name {
			t.Errorf("blob %s listed as %q; want %q", cid, got[cid], name)
		}
	}
	// The unnamed blob added again with a name takes it.
	if _, err := c.AddFile(ctx, mustOpen(t, unnamed), &api.AddFileOptions{Name: "named-later"}); err != nil {
		t.Fatal(err)
	}
	list, _ = c.Blobs(ctx)
	for _, b := range list {
		if b.CID == x.CID && b.Name != "named-later" {
			t.Errorf("the blob added again with a name is listed as %q", b.Name)
		}
	}
	var out bytes.Buffer
	if err := c.GetBlob(ctx, x.CID, x.Size, &out); err != nil || !bytes.Equal(out.Bytes(), unnamedData) {
		t.Errorf("the blob renamed reads back as %d bytes, %v", out.Len(), err)
	}
}

// TestBlobListLimit: GET /v1/blobs?limit=N answers the newest N blobs
// (the dashboard asks for 10); 0 or none, all; a limit that is not a
// number is a 400.
func TestBlobListLimit(t *testing.T) {
	n := startNode(t, nil)
	c := apiClient(t, n)
	for i := range 3 {
		f, _ := randFile(t, 1000+i, uint64(10+i))
		if _, err := addFile(t, c, f, nil); err != nil {
			t.Fatal(err)
		}
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return new(net.Dialer).DialContext(ctx, "unix", c.Socket())
	}}}
	all, err := c.Blobs(context.Background())
	if err != nil || len(all) != 3 {
		t.Fatalf("blobs: %v, %v", all, err)
	}
	for _, tc := range []struct {
		query  string
		status int
		n      int
	}{{"", 200, 3}, {"?limit=0", 200, 3}, {"?limit=2", 200, 2}, {"?limit=3", 200, 3}, {"?limit=4", 200, 3}, {"?limit=x", 400, 0}, {"?limit=-1", 400, 0}} {
		resp, err := hc.Get("http://wats" + api.PathBlobs + tc.query)
		if err != nil {
			t.Fatal(err)
		}
		var got []api.BlobInfo
		if resp.StatusCode == 200 {
			if err := json.UnmarshalRead(resp.Body, &got); err != nil {
				t.Fatal(err)
			}
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status || len(got) != tc.n {
			t.Errorf("GET %s%s: %d with %d blobs, want %d with %d", api.PathBlobs, tc.query, resp.StatusCode, len(got), tc.status, tc.n)
		}
		for i := range got {
			if got[i].CID != all[i].CID {
				t.Errorf("GET %s%s: blob %d is %s, want the newest first (%s)", api.PathBlobs, tc.query, i, got[i].CID, all[i].CID)
			}
		}
	}
}
