package eventlog

import (
	"errors"
	"fmt"
)

// Sentinel errors. Validation failures come wrapped in a *ValidationError
// (and, from VerifyBatch, in a *BatchError around it); test them with
// errors.Is.
var (
	// ErrMalformed: the event is not well-formed (bad JSON, duplicate or
	// unknown field, missing field, wrong type, bad kind or author syntax,
	// body not an object, ...).
	ErrMalformed = errors.New("eventlog: malformed event")
	// ErrTooLarge: a size cap of this package is exceeded (MaxEventBytes,
	// MaxBodyBytes, MaxBlobs, core.MaxKindLen, MaxStackBytes, ...).
	ErrTooLarge = errors.New("eventlog: event too large")
	// ErrFuture: the event's time is more than MaxFutureSkew after now
	// (docs/design.md §5).
	ErrFuture = errors.New("eventlog: event time in the future")
	// ErrBadID: the id is not the BLAKE3-256 of the signing bytes (docs/design.md §5).
	ErrBadID = errors.New("eventlog: event id does not match")
	// ErrBadSignature: sig is not a valid Ed25519 signature of the signing
	// bytes by the author's key (docs/design.md §5).
	ErrBadSignature = errors.New("eventlog: bad event signature")
	// ErrNotFound: Log.Get or Log.Find found no event with that id.
	ErrNotFound = errors.New("eventlog: not found")
	// ErrAmbiguous: Log.Find was given an id prefix that several events
	// share.
	ErrAmbiguous = errors.New("eventlog: id prefix matches several events")
	// ErrPageTooSmall: Log.Page was given a maxBytes smaller than the next
	// event, so it can return nothing without stalling the reader. It cannot
	// happen when maxBytes >= MaxEventBytes.
	ErrPageTooSmall = errors.New("eventlog: page byte budget smaller than the next event")
	// ErrBadArgument: a caller passed an argument outside its documented
	// range (for instance Page with limit < 1).
	ErrBadArgument = errors.New("eventlog: bad argument")
	// ErrDamaged: Log.All met a stored event that no longer decodes (a
	// damaged record; `wats repo check` finds and repairs them). The
	// error wraps the decode error too.
	ErrDamaged = errors.New("eventlog: a stored event does not decode")
)

// ValidationError says which field of an event is wrong and why. Err is one
// of the sentinels above (ErrMalformed, ErrTooLarge, ErrFuture, ErrBadID,
// ErrBadSignature), so errors.Is(err, ErrBadID) works through it.
type ValidationError struct {
	// Field is the JSON path of the offending field, e.g. "kind",
	// "blobs[3].size" or "body.stack"; empty when the event as a whole is at
	// fault (e.g. not a JSON object, too many bytes).
	Field string
	// Reason is a short human-readable explanation.
	Reason string
	// Err is the sentinel classifying the failure.
	Err error
}

func (e *ValidationError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%v: %s", e.Err, e.Reason)
	}
	return fmt.Sprintf("%v: %s: %s", e.Err, e.Field, e.Reason)
}

// Unwrap returns the sentinel.
func (e *ValidationError) Unwrap() error { return e.Err }

func invalid(sentinel error, field, format string, args ...any) *ValidationError {
	return &ValidationError{Field: field, Reason: fmt.Sprintf(format, args...), Err: sentinel}
}

// BatchError is a rejection reported by VerifyBatch: the index of the event in
// the input and the reason (usually a *ValidationError).
type BatchError struct {
	Index int
	Err   error
}

func (e *BatchError) Error() string { return fmt.Sprintf("event %d: %v", e.Index, e.Err) }

// Unwrap returns the reason.
func (e *BatchError) Unwrap() error { return e.Err }
