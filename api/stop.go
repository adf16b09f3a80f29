package api

import "context"

// PathShutdown takes a POST with no body and answers 202 with a Shutdown:
// the daemon then shuts down as SIGINT or SIGTERM makes it (the control
// API closes, the node closes its connections and database, the repo lock
// is released, the process exits 0). The answer is sent before the
// control API closes; the caller that wants to know when the daemon has
// stopped watches the repo lock (docs/adr/0051, addendum).
const PathShutdown = "/v1/shutdown"

// Shutdown is the answer of POST PathShutdown.
type Shutdown struct {
	// PID is the daemon's process id, as written in the repo lock.
	PID int `json:"pid"`
}

// PathDisconnect takes a POSTed DisconnectRequest, closes every
// connection to the peer it names and answers with a Disconnected; 400
// for a peer that is not a peer ID.
const PathDisconnect = "/v1/peers/disconnect"

// DisconnectRequest is the body of POST PathDisconnect.
type DisconnectRequest struct {
	// Peer is the peer ID (12D3KooW…) whose connections are closed.
	Peer string `json:"peer"`
}

// Disconnected is the answer of POST PathDisconnect.
type Disconnected struct {
	PeerID string `json:"peer_id"`
	// Closed is the number of connections to the peer that were open and
	// are now closed; 0 when none was open (nothing was done).
	Closed int `json:"closed"`
}

// Shutdown asks the daemon to shut down cleanly (POST PathShutdown) and
// returns its answer, sent before it stops: the daemon's pid.
func (c *Client) Shutdown(ctx context.Context) (*Shutdown, error) {
	var out Shutdown
	if err := c.postJSON(ctx, PathShutdown, struct{}{}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Disconnect asks the daemon to close every connection to the peer id
// (POST PathDisconnect); the answer says how many were open.
func (c *Client) Disconnect(ctx context.Context, id string) (*Disconnected, error) {
	var out Disconnected
	if err := c.postJSON(ctx, PathDisconnect, DisconnectRequest{Peer: id}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
