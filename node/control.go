package node

import (
	"context"
	"io"
	"strings"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/blobs"
	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/metrics"
	"github.com/wats-network/wats/p2p"
)

// What the control server (package daemon) reads and drives of a
// running node, beside the methods that answer in api's types
// (Status, Peers, Limits, Diag, PeerCache, CrashGroups).

// Blobs returns the node's blob store.
func (n *Node) Blobs() *blobs.Store { return n.blobs }

// ImportBlob stores the bytes of r as a blob (blobs.Store.Import, with its
// bounds) and counts the import by via and outcome. size is the blob's
// size when the caller knows it (a file's, a request's Content-Length),
// -1 if not: a known size over the bounds is refused before r is read.
func (n *Node) ImportBlob(ctx context.Context, r io.Reader, size int64, via metrics.ImportVia) (cid.Cid, uint64, error) {
	var (
		c   cid.Cid
		got uint64
		err error
	)
	if size >= 0 {
		err = n.blobs.CheckImport(uint64(size))
	}
	if err == nil {
		c, got, err = n.blobs.Import(ctx, r)
	}
	n.m.BlobImport(via, blobs.Outcome(err)) // stored, refused or failed: an import has no content fault
	return c, got, err
}

// Agent returns the agent the node sends in hello (Options.Agent).
func (n *Node) Agent() string { return n.agent }

// RunningConfig returns the configuration the node runs with: its config,
// with log.level as the daemon last set it (Options.LogLevel). The copy is
// shallow; its lists must only be read.
func (n *Node) RunningConfig() config.Config {
	cfg := *n.cfg
	if n.logLevel != nil {
		cfg.Log.Level = strings.ToLower(n.logLevel.Level().String())
	}
	return cfg
}

// ForgetPeer deletes p's peer-cache record; peercache.ErrNotFound if it has
// none.
func (n *Node) ForgetPeer(p peer.ID) error { return n.peers.Forget(p) }

// ResolvePeer reads a peer given by an operator: a peer ID, or a full
// multiaddr, which is dialled (hello included) within 30 s.
func (n *Node) ResolvePeer(ctx context.Context, s string) (peer.ID, error) {
	ai, err := p2p.ParsePeer(s)
	if err != nil || len(ai.Addrs) == 0 {
		return ai.ID, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return n.connectInfo(ctx, ai)
}
