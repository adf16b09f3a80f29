package store

import (
	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/blobs"
	"github.com/wats-network/wats/eventlog"
)

// LogUsage is what the event log l holds against its quotas q (the
// [events] keys; 0 is unlimited), as GET api.PathStatus shows it.
func LogUsage(l *eventlog.Log, q eventlog.Quotas) api.LogUsage {
	u, authors := l.Usage()
	return api.LogUsage{Events: u.Events, Bytes: u.Bytes, Authors: authors,
		MaxEvents: q.MaxEvents, MaxBytes: q.MaxBytes,
		MaxEventsPerAuthor: q.MaxEventsPerAuthor, MaxBytesPerAuthor: q.MaxBytesPerAuthor,
		Commits: l.Commits()}
}

// Fetches is the answer of GET api.PathBlobFetches: the fetches in
// flight, oldest first.
func Fetches(in []blobs.InFlight) []api.Fetch {
	out := make([]api.Fetch, 0, len(in))
	for _, f := range in {
		af := api.Fetch{CID: f.CID.String(), Size: f.Size, Held: f.Held, Started: f.Started.UTC(), Finding: f.Finding}
		if f.Provider != "" {
			af.Provider = f.Provider.String()
		}
		out = append(out, af)
	}
	return out
}
