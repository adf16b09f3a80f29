package api

import (
	"context"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/wats-network/wats/core"
)

// PathCrashes takes a POSTed CrashReportRequest and answers with the signed
// event; answers GET with a JSON array of CrashGroup.
const PathCrashes = "/v1/crashes"

// CrashReportRequest is the body of POST PathCrashes: a crash (docs/design.md §5),
// signed by the daemon, with its dump if DumpCID is set (a blob stored with
// AddBlob), stored and gossiped here or, with To, submitted to that peer.
type CrashReportRequest struct {
	core.CrashInfo `json:",inline"`
	// DumpCID and DumpSize name the dump blob; DumpName is its file name.
	DumpCID  string `json:"dump_cid,omitempty"`
	DumpSize uint64 `json:"dump_size,omitempty"`
	DumpName string `json:"dump_name,omitempty"`
	// To is a peer ID to submit the report to (crash_report); empty means
	// this node.
	To string `json:"to,omitempty"`
}

// CrashGroup is the reports of one fingerprint (GET PathCrashes).
type CrashGroup struct {
	Fingerprint string    `json:"fingerprint"`
	Program     string    `json:"program"`
	Reason      string    `json:"reason"`
	Count       int       `json:"count"`
	FirstSeen   time.Time `json:"first_seen"`
	LastSeen    time.Time `json:"last_seen"`
	LastVersion string    `json:"last_version"`
	LastEvent   string    `json:"last_event"`
}

// ReportCrash signs and stores (or submits) a crash report.
func (c *Client) ReportCrash(ctx context.Context, req CrashReportRequest) (jsontext.Value, error) {
	var out jsontext.Value
	if err := c.postJSON(ctx, PathCrashes, req, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// Crashes lists the crash reports of the log grouped by fingerprint.
func (c *Client) Crashes(ctx context.Context) ([]CrashGroup, error) {
	var out []CrashGroup
	if err := c.getJSON(ctx, PathCrashes, nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}
