package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// PathLog answers GET ?lines=N with a LogTail: the last N lines the daemon
// logged, as it wrote them (text or JSON per log.format). The daemon keeps
// the last 1,000 lines and at most 512 KiB of them, each line cut at
// 16 KiB (daemon.LogRing, docs/adr/0050); without lines, or with more
// than it keeps, the answer holds all it keeps. A lines that is not a
// whole number from 1 up is 400; a daemon that keeps no lines (one run by
// a program of its own rather than `wats daemon`) answers 404.
const PathLog = "/v1/log"

// LogTail is the answer of GET PathLog.
type LogTail struct {
	// Lines are the lines, oldest first, each without its newline.
	Lines []string `json:"lines"`
	// Logged is how many lines the daemon wrote since it started: more
	// than len(Lines) when older ones were dropped, or not asked for.
	Logged uint64 `json:"logged"`
}

// Log returns the last lines lines the daemon logged (GET PathLog); all
// it keeps when lines <= 0.
func (c *Client) Log(ctx context.Context, lines int) (*LogTail, error) {
	var q url.Values
	if lines > 0 {
		q = url.Values{"lines": {strconv.Itoa(lines)}}
	}
	var out LogTail
	if err := c.getJSON(ctx, PathLog, q, &out); err != nil {
		return nil, err
	}
	if out.Lines == nil {
		out.Lines = []string{}
	}
	return &out, nil
}

// ProfileOf writes the daemon's runtime profile name (GET
// /debug/pprof/NAME?q, as net/http/pprof serves it) to w: q may ask for
// text ("debug=2": every goroutine's stack) or, for the CPU profile
// ("profile"), its length ("seconds=N"; the answer comes after it). It
// fails as Profile does.
func (c *Client) ProfileOf(ctx context.Context, name string, q url.Values, w io.Writer) error {
	if name == "" || strings.ContainsAny(name, "/?#") {
		return fmt.Errorf("api: profile %q: not a profile name", name)
	}
	resp, err := c.do(ctx, http.MethodGet, "/debug/pprof/"+name, q, nil, "application/octet-stream")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("api: profile %s: %w", name, err)
	}
	return nil
}
