package config_test

import (
	"errors"
	"fmt"

	"github.com/wats-network/wats/config"
)

func ExampleParse() {
	data := []byte(`network = "lab"

[p2p]
listn = ["/ip4/0.0.0.0/tcp/4001"]
`)
	_, err := config.Parse(data, "/home/ada/.wats/config.toml")
	fmt.Println(err)
	fmt.Println(errors.Is(err, config.ErrUnknownKey))
	// Output:
	// /home/ada/.wats/config.toml:4:1: unknown key "p2p.listn": did you mean "p2p.listen"?
	// true
}

func ExampleConfig_Validate() {
	c := config.Default()
	c.P2P.ConnsLow = 100 // above conns_high (96)
	c.Sync.Interval.Duration = 0
	fmt.Println(c.Validate())
	// Output:
	// config: p2p.conns_low = 100: must be below p2p.conns_high (96); allowed: connections, an integer with 1 <= conns_low < conns_high; example (in [p2p]): conns_low = 32
	// config: sync.interval = "0s": shorter than the minimum "1s"; allowed: a duration from "1s" to "24h"; example (in [sync]): interval = "30s"
}
