package devnet

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/internal/humanize"
)

// The blob part of `devnet run --demo` (ADR 0029): node0 publishes a file
// event naming a blob, the last node submits a crash report with a dump to
// node0, and the run checks that every node ends up holding both blobs.

const (
	// demoFileBytes is the size of the demo's file: a few chunks, so
	// that the fetch walks a DAG.
	demoFileBytes = 3<<20 + 12345
	// demoDumpBytes is the size of the demo's crash dump.
	demoDumpBytes = 256 << 10
)

// blobDemo publishes the demo's two blobs and tracks which nodes hold them.
type blobDemo struct {
	clients []*api.Client
	done    chan struct{}
	mu      struct {
		sync.Mutex
		blobs []api.BlobInfo // the file, then the dump, once published
		names []string
		err   error
		// holding[i] is how many of the blobs node i held at the last check.
		holding []int
	}
}

// startBlobDemo publishes the blobs in the background; log reports each
// step.
func startBlobDemo(ctx context.Context, clients []*api.Client, log io.Writer) *blobDemo {
	d := &blobDemo{clients: clients, done: make(chan struct{})}
	d.mu.holding = make([]int, len(clients))
	go func() {
		defer close(d.done)
		if err := d.publish(ctx, log); err != nil && ctx.Err() == nil {
			d.mu.Lock()
			d.mu.err = err
			d.mu.Unlock()
			fmt.Fprintf(log, "blob demo: %v\n", err)
		}
	}()
	return d
}

func (d *blobDemo) publish(ctx context.Context, log io.Writer) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*CallTimeout)
	defer cancel()
	first, last := d.clients[0], d.clients[len(d.clients)-1]
	lastIdx := len(d.clients) - 1

	file, err := first.AddBlob(ctx, bytes.NewReader(demoBytes(demoFileBytes, 1)))
	if err != nil {
		return fmt.Errorf("node0: blob add: %w", err)
	}
	if _, err := first.AddEvent(ctx, "file", jsontext.Value(`{"text":"the devnet demo's file"}`),
		api.BlobRef{CID: file.CID, Size: file.Size, Name: "demo.bin"}); err != nil {
		return fmt.Errorf("node0: events add: %w", err)
	}
	d.add(*file, fmt.Sprintf("demo.bin (%s, from node0)", humanize.Bytes(file.Size)))

	dump, err := last.AddBlob(ctx, bytes.NewReader(demoBytes(demoDumpBytes, 2)))
	if err != nil {
		return fmt.Errorf("node%d: blob add: %w", lastIdx, err)
	}
	id, err := first.ID(ctx)
	if err != nil {
		return fmt.Errorf("node0: id: %w", err)
	}
	if _, err := last.ReportCrash(ctx, api.CrashReportRequest{
		CrashInfo: core.CrashInfo{
			Program: "wats-demo", Version: "1.0.0", OS: "linux", Arch: "amd64",
			Reason: "panic: the devnet demo's crash", Stack: "goroutine 1 [running]:\nmain.main()\n\tdemo.go:1",
		},
		DumpCID: dump.CID, DumpSize: dump.Size, DumpName: "core.dmp", To: id.PeerID,
	}); err != nil {
		return fmt.Errorf("node%d: crash report: %w", lastIdx, err)
	}
	d.add(*dump, fmt.Sprintf("core.dmp (%s, a crash dump from node%d)", humanize.Bytes(dump.Size), lastIdx))
	return nil
}

func (d *blobDemo) add(b api.BlobInfo, name string) {
	d.mu.Lock()
	d.mu.blobs = append(d.mu.blobs, b)
	d.mu.names = append(d.mu.names, name)
	d.mu.Unlock()
}

// refresh lists every node's blobs and counts the demo's among them.
func (d *blobDemo) refresh(ctx context.Context) {
	if d == nil {
		return
	}
	d.mu.Lock()
	want := append([]api.BlobInfo(nil), d.mu.blobs...)
	d.mu.Unlock()
	held := make([]int, len(d.clients))
	var wg sync.WaitGroup
	for i, cl := range d.clients {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, CallTimeout)
			defer cancel()
			list, err := cl.Blobs(cctx)
			if err != nil {
				return
			}
			for _, w := range want {
				for _, b := range list {
					if b.CID == w.CID && b.Size == w.Size { // the list's also has a name and time
						held[i]++
						break
					}
				}
			}
		})
	}
	wg.Wait()
	d.mu.Lock()
	d.mu.holding = held
	d.mu.Unlock()
}

// state says whether every node holds both blobs (ok), and describes where
// the demo stands.
func (d *blobDemo) state() (ok bool, summary string) {
	if d == nil {
		return true, ""
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.mu.err != nil {
		return false, "the blob demo failed: " + d.mu.err.Error()
	}
	if len(d.mu.blobs) < 2 {
		return false, "blobs: publishing a file and a crash report with a dump"
	}
	var lacking []string
	for i, h := range d.mu.holding {
		if h < len(d.mu.blobs) {
			lacking = append(lacking, fmt.Sprintf("node%d holds %d of 2", i, h))
		}
	}
	if len(lacking) > 0 {
		return false, "blobs: fetching; " + strings.Join(lacking, ", ")
	}
	return true, fmt.Sprintf("blobs: all %d nodes hold %s and %s", len(d.mu.holding), d.mu.names[0], d.mu.names[1])
}

// demoBytes returns n pseudo-random bytes, the same for a seed.
func demoBytes(n int, seed byte) []byte {
	b := make([]byte, n)
	_, _ = rand.NewChaCha8([32]byte{'w', 'a', 't', 's', seed}).Read(b) // never fails
	return b
}

// wait waits until the blobs are published (or publishing failed).
func (d *blobDemo) wait() {
	if d != nil {
		<-d.done
	}
}

// note is the view's line on the blob demo: where it stands.
func (d *blobDemo) note() string {
	_, s := d.state()
	return s
}
