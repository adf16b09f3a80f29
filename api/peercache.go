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

// CachedPeer is one record of the persisted peer cache (docs/design.md §8).
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
	// The peer's value history (docs/adr/0030). Its requests that the node
	// served, refused, challenged and let through by a solution; Misses,
	// requests for what never existed here. Abuse signals: Invalid
	// messages, Failed solutions, Timeouts (streams held past a deadline).
	// What it gave: Events this node lacked, Bytes of blobs.
	Served     uint64 `json:"served"`
	Refused    uint64 `json:"refused"`
	Challenged uint64 `json:"challenged"`
	Solved     uint64 `json:"solved"`
	Misses     uint64 `json:"misses"`
	Invalid    uint64 `json:"invalid"`
	Failed     uint64 `json:"failed"`
	Timeouts   uint64 `json:"timeouts"`
	Events     uint64 `json:"events"`
	Bytes      uint64 `json:"bytes"`
	// LastUseful is when it last gave events or blobs (UTC; zero: never).
	LastUseful time.Time `json:"last_useful"`
	// Value says how it first showed value, which earned it the record:
	// connected, events, blobs, solved, or migrated (an older version's).
	Value string `json:"value"`
	// Tier is its tier ("suspect", "new", "normal", "valued") and
	// TierReason why, from the history above (docs/adr/0030).
	Tier       string `json:"tier"`
	TierReason string `json:"tier_reason"`
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
