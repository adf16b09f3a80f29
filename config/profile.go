package config

import (
	"fmt"
	"strings"
)

// A Profile is a named set of changes to a config, for a kind of node:
// wats init --profile NAME writes Default() with the profile applied. Each
// change is a key and its value, so that
// what a profile sets can be told in full (Keys) and checked by Validate.
type Profile struct {
	// Name is what --profile takes.
	Name string
	// Doc says, in a sentence, what the profile is for and, in words, all
	// that it changes (Keys says it as keys): init prints it.
	Doc string
	// Apply changes c to the profile's values.
	Apply func(c *Config)
	// Keys are the keys Apply sets, each with its value, for help texts.
	Keys []string
}

// Profiles are the profiles of wats init, in the order help lists them.
var Profiles = []Profile{
	{
		Name: "local",
		Doc: "a node on this machine only, beside others (a second daemon, tests): listens on 127.0.0.1 " +
			"at ports the system picks, turns mDNS on (finds, and is found by, nodes with mDNS on), always a DHT server",
		Keys: []string{
			`p2p.listen = ["/ip4/127.0.0.1/tcp/0", "/ip4/127.0.0.1/udp/0/quic-v1"]`,
			`p2p.mdns = true`,
			`p2p.dht = "server"`,
		},
		Apply: func(c *Config) {
			c.P2P.Listen = []string{"/ip4/127.0.0.1/tcp/0", "/ip4/127.0.0.1/udp/0/quic-v1"}
			c.P2P.MDNS = true
			c.P2P.DHT = DHTServer
		},
	},
	{
		Name: "server",
		Doc: "a node on a public address among strangers: mDNS off, always a DHT server, stricter limits " +
			"for strangers, blobs served to peers only, JSON logs",
		Keys: []string{
			`p2p.mdns = false`,
			`p2p.dht = "server"`,
			`limits.stranger_report_per_min = 300`,
			`limits.stranger_gossip_per_min = 600`,
			`limits.stranger_author_per_min = 300`,
			`limits.new_author_minutes = 30`,
			`limits.stranger_sync_per_min = 3000`,
			`limits.stranger_dht_per_min = 6000`,
			`limits.miss_per_min = 15`,
			`blobs.serve = "peers"`,
			`log.format = "json"`,
		},
		Apply: func(c *Config) {
			c.P2P.MDNS = false
			c.P2P.DHT = DHTServer
			c.Limits.StrangerReportPerMin = 300
			c.Limits.StrangerGossipPerMin = 600
			c.Limits.StrangerAuthorPerMin = 300
			c.Limits.NewAuthorMinutes = 30
			c.Limits.StrangerSyncPerMin = 3000
			c.Limits.StrangerDHTPerMin = 6000
			c.Limits.MissPerMin = 15
			c.Blobs.Serve = ServePeers
			c.Log.Format = "json"
		},
	},
}

// ProfileNames returns the names of Profiles, joined by ", ".
func ProfileNames() string {
	names := make([]string, len(Profiles))
	for i, p := range Profiles {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// WithProfile returns Default() with the named profile applied; "" is
// Default() itself. An unknown name is an error that lists the known ones.
func WithProfile(name string) (*Config, error) {
	c := Default()
	if name == "" {
		return c, nil
	}
	for _, p := range Profiles {
		if p.Name == name {
			p.Apply(c)
			return c, nil
		}
	}
	return nil, fmt.Errorf("config: no profile %q (profiles: %s)", name, ProfileNames())
}
