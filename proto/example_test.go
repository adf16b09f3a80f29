package proto_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/proto"
)

// A requester encodes a request, frames it, and a responder reads the frame
// and decodes it.
func ExampleDecodeRequest() {
	var stream bytes.Buffer
	b, err := proto.MarshalGreased(&proto.SyncRequest{After: 41, Limit: 100}, false)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s\n", b)
	if err := proto.WriteFrame(&stream, b); err != nil {
		panic(err)
	}

	frame, err := proto.ReadFrame(&stream, proto.MaxRequestBytes)
	if err != nil {
		panic(err)
	}
	req, err := proto.DecodeRequest(frame)
	if err != nil {
		panic(err)
	}
	fmt.Println(req.Type, req.Sync.After, req.Sync.Limit)

	// A bad request is a *proto.Error: its code is what to answer with.
	_, err = proto.DecodeRequest([]byte(`{"type":"sync","after":"-1"}`))
	var perr *proto.Error
	if errors.As(err, &perr) {
		fmt.Println(perr.Code)
	}
	// Output:
	// {"type":"sync","after":"41","limit":100}
	// sync 41 100
	// bad_request
}

// Catching up on a peer's log page by page.
func ExampleCall() {
	var (
		ctx  context.Context
		h    host.Host
		p    peer.ID
		from core.Cursor
	)
	for {
		resp, err := proto.Call(ctx, h, p, &proto.SyncRequest{After: from})
		var refused *proto.RefusedError
		switch {
		case errors.As(err, &refused):
			fmt.Println("over the limit:", refused.Reason)
			return
		case err != nil:
			fmt.Println(err)
			return
		}
		// store resp.Sync.Events ...
		from = resp.Sync.Next
		if !resp.Sync.More {
			return
		}
	}
}
