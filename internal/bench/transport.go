package bench

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/internal/devnet"
	"github.com/wats-network/wats/p2p"
)

// This file is `wats bench transport`: the ceiling a blob fetch is held
// against (docs/adr/0053). One libp2p stream between two processes, each
// with a host built as a daemon builds its own (p2p.NewHost: TCP with
// Noise and yamux, QUIC; the resource manager of the default config),
// carries a number of bytes from the worker (the provider's side) to this
// process (the fetcher's side), which reads and discards them.

// sourceProtocol is the worker's protocol: the stream opener writes the
// number of bytes it wants (8 bytes, big-endian) and the worker sends that
// many and closes.
const sourceProtocol = protocol.ID("/wats-bench/source/1")

// transportChunk is the size of the writes and reads of the stream: a
// blob's chunk (blobs.ChunkSize).
const transportChunk = 1 << 20

// TransportFigure is one timed stream of TransportCeiling.
type TransportFigure struct {
	// Transport is "tcp" or "quic"; Bytes the bytes carried; Seconds the
	// time from the request to the last byte read; MiBPerS the rate.
	Transport string  `json:"transport"`
	Bytes     uint64  `json:"bytes"`
	Seconds   Seconds `json:"seconds"`
	MiBPerS   float64 `json:"mib_per_s"`
	// ReceiverCPU and SenderCPU are the CPU time (user and system) of the
	// reading process (this one) and of the worker during the stream
	// (Linux only; 0 elsewhere).
	ReceiverCPU Seconds `json:"receiver_cpu_s"`
	SenderCPU   Seconds `json:"sender_cpu_s"`
}

// Ceiling is a transport worker started (StartCeiling) and a host of this
// process connected to it, ready to time streams. Close ends both.
type Ceiling struct {
	h      host.Host
	worker *exec.Cmd
	info   peer.AddrInfo
	conns  map[string]ma.Multiaddr // the worker's address of each transport
}

// workerHello is the line the worker prints once it listens.
type workerHello struct {
	ID    string   `json:"id"`
	Addrs []string `json:"addrs"`
}

// StartCeiling starts the transport worker (this binary's hidden `bench
// transport-worker`, a process of its own) and a host here, each built by
// p2p.NewHost as a daemon's, listening on 127.0.0.1 over TCP and QUIC.
func StartCeiling(ctx context.Context) (*Ceiling, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "bench", "transport-worker")
	cmd.SysProcAttr = devnet.ProcAttr(true) // SIGTERM if this process dies
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the transport worker: %w", err)
	}
	c := &Ceiling{worker: cmd, conns: make(map[string]ma.Multiaddr)}
	hello := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(out).ReadBytes('\n')
		if err != nil {
			hello <- fmt.Errorf("the transport worker said nothing: %w", err)
			return
		}
		var w workerHello
		if err := json.Unmarshal(line, &w); err != nil {
			hello <- fmt.Errorf("the transport worker: %w", err)
			return
		}
		id, err := peer.Decode(w.ID)
		if err != nil {
			hello <- err
			return
		}
		c.info.ID = id
		for _, s := range w.Addrs {
			a, err := ma.NewMultiaddr(s)
			if err != nil {
				hello <- err
				return
			}
			c.info.Addrs = append(c.info.Addrs, a)
			c.conns[addrTransport(a)] = a
		}
		hello <- nil
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case err = <-hello:
	case <-ctx.Done():
		err = ctx.Err()
	case <-time.After(30 * time.Second):
		err = errors.New("the transport worker did not start within 30s")
	}
	if err == nil {
		c.h, err = benchHost()
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// addrTransport names the transport of a: "quic" or "tcp".
func addrTransport(a ma.Multiaddr) string {
	if strings.Contains(a.String(), "/quic") {
		return "quic"
	}
	return "tcp"
}

// benchHost is a host as a daemon's (p2p.NewHost) with the default
// config, listening on 127.0.0.1 over TCP and QUIC, of a new key.
func benchHost() (host.Host, error) {
	key, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		return nil, err
	}
	cfg := config.Default()
	cfg.P2P.Listen = []string{"/ip4/127.0.0.1/tcp/0", "/ip4/127.0.0.1/udp/0/quic-v1"}
	return p2p.NewHost(cfg, key, "wats-bench", p2p.NewGater(time.Now), func(peer.ID) bool { return false })
}

// Close ends the worker and the host.
func (c *Ceiling) Close() {
	if c.h != nil {
		_ = c.h.Close()
	}
	if c.worker != nil && c.worker.Process != nil {
		_ = c.worker.Process.Kill()
		_ = c.worker.Wait()
	}
}

// Measure times one stream of size bytes from the worker over transport
// ("tcp" or "quic"), on a connection of that transport alone (any other
// is closed first).
func (c *Ceiling) Measure(ctx context.Context, transport string, size uint64) (TransportFigure, error) {
	f := TransportFigure{Transport: transport, Bytes: size}
	a, ok := c.conns[transport]
	if !ok {
		return f, fmt.Errorf("the transport worker has no %s address", transport)
	}
	_ = c.h.Network().ClosePeer(c.info.ID)
	c.h.Peerstore().ClearAddrs(c.info.ID)
	if err := c.h.Connect(ctx, peer.AddrInfo{ID: c.info.ID, Addrs: []ma.Multiaddr{a}}); err != nil {
		return f, fmt.Errorf("connect to the transport worker over %s: %w", transport, err)
	}
	s, err := c.h.NewStream(ctx, c.info.ID, sourceProtocol)
	if err != nil {
		return f, err
	}
	defer s.Close()
	if got := addrTransport(s.Conn().RemoteMultiaddr()); got != transport {
		return f, fmt.Errorf("the stream went over %s, not %s", got, transport)
	}
	cpuR, cpuS := cpuTime(os.Getpid()), cpuTime(c.worker.Process.Pid)
	start := time.Now()
	var req [8]byte
	binary.BigEndian.PutUint64(req[:], size)
	if _, err := s.Write(req[:]); err != nil {
		return f, err
	}
	buf := make([]byte, transportChunk)
	n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{s}, buf)
	d := time.Since(start)
	f.ReceiverCPU, f.SenderCPU = Seconds(cpuTime(os.Getpid())-cpuR), Seconds(cpuTime(c.worker.Process.Pid)-cpuS)
	if err != nil {
		return f, err
	}
	if uint64(n) != size {
		return f, fmt.Errorf("the transport worker sent %d bytes of %d", n, size)
	}
	f.Seconds, f.MiBPerS = Seconds(d), float64(size)/(1<<20)/d.Seconds()
	return f, nil
}

// TransportWorker is the worker process of the transport ceiling (`wats
// bench transport-worker`): it starts a host as StartCeiling's, prints
// its peer ID and addresses as one JSON line to w, and sends each stream
// of sourceProtocol the bytes asked for (pseudo-random, from one buffer
// of transportChunk), until ctx ends.
func TransportWorker(ctx context.Context, w io.Writer) error {
	h, err := benchHost()
	if err != nil {
		return err
	}
	defer h.Close()
	buf := make([]byte, transportChunk)
	_, _ = io.ReadFull(benchBlob(transportChunk), buf)
	h.SetStreamHandler(sourceProtocol, func(s network.Stream) {
		var req [8]byte
		if _, err := io.ReadFull(s, req[:]); err != nil {
			_ = s.Reset()
			return
		}
		for n := binary.BigEndian.Uint64(req[:]); n > 0; {
			k := min(n, uint64(len(buf)))
			if _, err := s.Write(buf[:k]); err != nil {
				_ = s.Reset()
				return
			}
			n -= k
		}
		_ = s.Close()
	})
	hello := workerHello{ID: h.ID().String()}
	for _, a := range h.Addrs() {
		hello.Addrs = append(hello.Addrs, a.String())
	}
	b, err := json.Marshal(hello)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "%s\n", b); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}
