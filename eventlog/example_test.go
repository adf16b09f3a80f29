package eventlog_test

import (
	"crypto/ed25519"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/wats-network/wats/eventlog"

	"github.com/wats-network/wats/core"
)

func ExampleNew() {
	// The key of testdata/events.json: seed 01 02 … 20.
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(i + 1)
	}
	key, _ := crypto.UnmarshalEd25519PrivateKey(ed25519.NewKeyFromSeed(seed))
	now := time.UnixMilli(1767225600000)
	body := jsontext.Value(`{"text":"héllo ✓ \"quoted\" \u0007","n":42,"nested":{"b":1,"a":[true,null,1.5,1e+21,0]}}`)

	e, err := eventlog.New(key, now, "note", body, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(e.ID)
	fmt.Println(e.Verify(now))
	// Output:
	// 32eacf574f511cbd9f083456265f57f3c734c4cde90c8203b25d8ed024340ea7
	// <nil>
}

func ExampleLog_Page() {
	db, _ := pebble.Open("", &pebble.Options{FS: vfs.NewMem()})
	defer db.Close()
	l, _ := eventlog.Open(db)

	_, key, _ := ed25519.GenerateKey(nil)
	priv, _ := crypto.UnmarshalEd25519PrivateKey(key)
	now := time.Now()
	var evs []*eventlog.Event
	for i := range 5 {
		e, _ := eventlog.New(priv, now, "note", jsontext.Value(fmt.Sprintf(`{"i":%d}`, i)), nil)
		evs = append(evs, e)
	}
	l.Append(evs)

	// A reader pages by position, two at a time, from the start.
	for after, more := core.Cursor(0), true; more; {
		var page []jsontext.Value
		page, after, more, _ = l.Page(after, 2, 4<<20)
		fmt.Println(len(page), "events, next", after, "more", more)
	}
	// Output:
	// 2 events, next 2 more true
	// 2 events, next 4 more true
	// 1 events, next 5 more false
}
