package api_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/wats-network/wats/api"
)

// A client is made from the socket path (repo.Repo.SocketPath); the first
// call tells whether a daemon runs there.
func ExampleClient() {
	c := api.NewClient("/home/alice/.wats/api.sock")
	defer c.Close()
	ctx := context.Background()

	st, err := c.Status(ctx)
	if errors.Is(err, api.ErrNoDaemon) {
		log.Fatal("start one with: wats daemon")
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(st.Peers, "peers,", st.Events, "events")

	ev, err := c.AddEvent(ctx, "note", jsontext.Value(`{"text":"hello"}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("stored %s\n", ev)
}

// Tail calls its function for every event the daemon stores, until the
// context ends.
func ExampleClient_Tail() {
	c := api.NewClient("/home/alice/.wats/api.sock")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := c.Tail(ctx, 0, func(ev jsontext.Value) error {
		fmt.Printf("%s\n", ev)
		return nil
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
}

// Sync reports progress as it goes; the last report has Done set.
func ExampleClient_Sync() {
	c := api.NewClient("/home/alice/.wats/api.sock")
	final, err := c.Sync(context.Background(), "12D3KooWJ1TsijH7H5F74hfAD5XishQz3sxrmAtVY37GtNd9CqYf",
		func(p api.SyncProgress) { fmt.Printf("%d/%d\n", p.Cursor, p.PeerHead) })
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("stored", final.Stored, "new events")
}
