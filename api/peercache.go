package api

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/wats-network/wats/core"
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
	// Counts are the peer's value history (core.Counts, docs/adr/0030):
	// its requests that the node served, refused, challenged and let
	// through by a solution; Misses, requests for what never existed here;
	// abuse signals (Invalid messages, Failed solutions, Timeouts); what it
	// gave (Events this node lacked, Bytes of blobs).
	core.Counts `json:",inline"`
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
