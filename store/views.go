package store

import (
	"github.com/wats-network/wats/api"
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
