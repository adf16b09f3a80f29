// Package routing is what a node asks of the network beyond its peers
// (docs/adr/0040): the network's own Kademlia DHT (go-libp2p-kad-dht,
// under the network's protocol prefix), which finds a peer's addresses by
// its peer ID, a blob's providers by its CID, and the network's nodes
// under its rendezvous key; the providing of the node's complete blobs;
// the bounds on what peers ask of it (a budget of DHT requests per peer,
// by tier, and a store of at most maxProviderRecords provider records, of
// which strangers fill three quarters at most); and NAT traversal (AutoNAT,
// AutoRelay, the relay service, hole punching) for the node's host.
//
// dht.go holds the DHT and its bounds (New, Routing), nat.go the host's
// NAT options and the hole punches' tracer, records.go the bounded store
// of provider records. The node gives a Routing what it knows that the
// DHT needs (Options: its peers to bootstrap from, its blobs, the tier of
// a peer) and carries out nothing for it: a refused request is answered
// here, and told to the node for its metrics and log.
package routing
