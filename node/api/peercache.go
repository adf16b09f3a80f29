package api

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// PathPeerCache answers GET with a JSON array of CachedPeer, most recently
// seen first; DELETE PathPeerCache + "/{id}" forgets one peer.
const PathPeerCache = "/v1/peers/cache"

// CachedPeer is one record of the persisted peer cache (design §8).
type CachedPeer struct {
	PeerID string   `json:"peer_id"`
	Addrs  []string `json:"addrs"`
	// FirstSeen, LastSeen and LastHello are UTC; zero when never.
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	LastHello time.Time `json:"last_hello"`
	Agent     string    `json:"agent"`
	Features  []string  `json:"features"`
	// Cursor is how far this node has synced the peer's log.
	Cursor uint64 `json:"cursor"`
	// Reputed reports an established reputation (ADR 0014): met in an
	// earlier run, or first hello at least 10 minutes ago.
	Reputed bool `json:"reputed"`
	// MetInEarlierRun reports that the record was loaded at start.
	MetInEarlierRun bool `json:"met_in_earlier_run"`
	// Requests of this peer that the node served, refused, challenged and
	// let through by a solution; Misses are requests for things that do not
	// exist (seed 004: peer value history).
	Served     uint64 `json:"served"`
	Refused    uint64 `json:"refused"`
	Challenged uint64 `json:"challenged"`
	Solved     uint64 `json:"solved"`
	Misses     uint64 `json:"misses"`
}

// PeerCache returns every record of the daemon's peer cache (GET
// PathPeerCache).
func (c *Client) PeerCache(ctx context.Context) ([]CachedPeer, error) {
	var out []CachedPeer
	if err := c.getJSON(ctx, PathPeerCache, nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// ForgetPeer deletes the record of a peer (DELETE PathPeerCache/{id});
// ErrNotFound when there is none.
func (c *Client) ForgetPeer(ctx context.Context, id string) error {
	resp, err := c.do(ctx, http.MethodDelete, PathPeerCache+"/"+url.PathEscape(id), nil, nil, ContentTypeJSON)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}
