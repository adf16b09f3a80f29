package api

import "context"

// PathConfig answers GET with RunningConfig: the config the daemon runs
// with, which is the config file as it was when the daemon started.
const PathConfig = "/v1/config"

// RunningConfig is the answer of GET PathConfig.
type RunningConfig struct {
	// TOML is the running config as plain TOML, every key with its value
	// (config.Config.TOML), which config.Parse reads back.
	TOML string `json:"toml"`
}

// Config returns the config the daemon runs with (GET PathConfig).
func (c *Client) Config(ctx context.Context) (*RunningConfig, error) {
	var rc RunningConfig
	if err := c.getJSON(ctx, PathConfig, nil, &rc); err != nil {
		return nil, err
	}
	return &rc, nil
}
