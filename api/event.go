package api

import (
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// EventID returns the "id" of a signed event as the API hands it out (the
// result of Client.AddEvent and Client.Event, an EventPage's Events, a
// line of Client.Tail). An event that does not decode or has no id is an
// error quoting its first 120 bytes ("the daemon returned an event without
// an id: …").
func EventID(ev jsontext.Value) (string, error) {
	var e struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(ev, &e); err != nil || e.ID == "" {
		return "", fmt.Errorf("the daemon returned an event without an id: %.120s", ev)
	}
	return e.ID, nil
}
