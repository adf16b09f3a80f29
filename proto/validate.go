package proto

import (
	"fmt"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/wats-network/wats/core"
)

// The validate methods check the bounds of a message's Go value: the
// decoders call them on what they parsed, the encoders before they write, so
// both sides agree on what is valid. JSON syntax and types are the decoders'
// business; event contents are the event log's.

// badRequest is a CodeBadRequest error whose message is cut to
// MaxTextBytes, so that it can always be sent: a message quoting peer input
// (a long duplicate name, say) must not make the answer itself invalid.
func badRequest(format string, args ...any) *Error {
	return &Error{Code: CodeBadRequest, Message: TruncateText(fmt.Sprintf(format, args...))}
}

// TruncateText cuts s to at most MaxTextBytes, at a UTF-8 boundary, marking
// the cut with "…".
func TruncateText(s string) string {
	if len(s) <= MaxTextBytes {
		return s
	}
	const mark = "…"
	cut := MaxTextBytes - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

func checkString(field, s string, max int) error {
	if len(s) > max {
		return badRequest("%s: %d bytes, more than %d", field, len(s), max)
	}
	return nil
}

func checkStrings(field string, list []string, maxCount, maxBytes int) error {
	if len(list) > maxCount {
		return badRequest("%s: %d entries, more than %d", field, len(list), maxCount)
	}
	for i, s := range list {
		if len(s) > maxBytes {
			return badRequest("%s[%d]: %d bytes, more than %d", field, i, len(s), maxBytes)
		}
	}
	return nil
}

func checkInt(field string, n int64, min int64) error {
	if n < min || n > core.MaxSafeInt {
		return badRequest("%s: %d is outside %d..2^53", field, n, min)
	}
	return nil
}

// checkObject checks that v is a JSON object (by its first byte; the JSON
// itself is checked where it is parsed or written).
func checkObject(field string, v jsontext.Value) error {
	if v.Kind() != '{' {
		return badRequest("%s: not a JSON object", field)
	}
	return nil
}

func (m *Hello) validate() error {
	if err := checkInt("hello: \"version\"", int64(m.Version), 1); err != nil {
		return err
	}
	if err := checkString("hello: \"network\"", m.Network, MaxStringBytes); err != nil {
		return err
	}
	if err := checkString("hello: \"agent\"", m.Agent, MaxStringBytes); err != nil {
		return err
	}
	if err := checkStrings("hello: \"features\"", m.Features, MaxFeatures, MaxStringBytes); err != nil {
		return err
	}
	if err := checkStrings("hello: \"listen\"", m.Listen, MaxListenAddrs, MaxAddrBytes); err != nil {
		return err
	}
	if l := m.Limits; l != nil {
		for name, v := range map[string]int64{"hello_per_min": l.HelloPerMin, "sync_per_min": l.SyncPerMin,
			"replicate_per_min": l.ReplicatePerMin, "report_per_min": l.ReportPerMin} {
			if err := checkInt("hello: \"limits\"."+name, v, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *SyncRequest) validate() error {
	if m.Limit < 0 || m.Limit > MaxPageEvents {
		return badRequest("sync: \"limit\": %d is outside 1..%d", m.Limit, MaxPageEvents)
	}
	return nil
}

func (m *SyncResponse) validate() error {
	if len(m.Events) > MaxPageEvents {
		return badRequest("sync: \"events\": %d entries, more than %d", len(m.Events), MaxPageEvents)
	}
	total := 0
	for i, ev := range m.Events {
		if ev.Kind() != '{' {
			return badRequest("sync: \"events\"[%d]: not a JSON object", i)
		}
		total += len(ev)
	}
	if total > MaxPageBytes {
		return badRequest("sync: \"events\": %d bytes in all, more than %d", total, MaxPageBytes)
	}
	return nil
}

func (m *BlobRef) validate(field string) error {
	if err := checkString(field+".cid", m.CID, MaxStringBytes); err != nil {
		return err
	}
	return checkInt(field+".size", m.Size, 0)
}

func (m *Provider) validate(field string) error {
	if err := checkString(field+".id", m.ID, MaxStringBytes); err != nil {
		return err
	}
	return checkStrings(field+".addrs", m.Addrs, MaxProviderAddrs, MaxAddrBytes)
}

func validateProviders(field string, ps []Provider) error {
	if len(ps) > MaxProviders {
		return badRequest("%s: %d entries, more than %d", field, len(ps), MaxProviders)
	}
	for i := range ps {
		if err := ps[i].validate(fmt.Sprintf("%s[%d]", field, i)); err != nil {
			return err
		}
	}
	return nil
}

func (m *ReplicateRequest) validate() error {
	if len(m.Blobs) == 0 || len(m.Blobs) > MaxReplicateBlobs {
		return badRequest("replicate: \"blobs\": %d entries, want 1..%d", len(m.Blobs), MaxReplicateBlobs)
	}
	for i := range m.Blobs {
		if err := m.Blobs[i].validate(fmt.Sprintf("replicate: \"blobs\"[%d]", i)); err != nil {
			return err
		}
	}
	return validateProviders("replicate: \"providers\"", m.Providers)
}

func (m *ReplicateResponse) validate() error {
	if n := len(m.Stored) + len(m.Skipped) + len(m.Failed); n > MaxReplicateBlobs {
		return badRequest("replicate: %d entries in stored, skipped and failed, more than %d", n, MaxReplicateBlobs)
	}
	if err := checkStrings("replicate: \"stored\"", m.Stored, MaxReplicateBlobs, MaxStringBytes); err != nil {
		return err
	}
	if err := checkStrings("replicate: \"skipped\"", m.Skipped, MaxReplicateBlobs, MaxStringBytes); err != nil {
		return err
	}
	for i, f := range m.Failed {
		field := fmt.Sprintf("replicate: \"failed\"[%d]", i)
		if err := checkString(field+".cid", f.CID, MaxStringBytes); err != nil {
			return err
		}
		if err := checkString(field+".reason", f.Reason, MaxTextBytes); err != nil {
			return err
		}
	}
	return nil
}

func (m *CrashReportRequest) validate() error {
	return checkObject("crash_report: \"event\"", m.Event)
}

func (m *CrashReportResponse) validate() error {
	return checkString("crash_report: \"id\"", m.ID, MaxStringBytes)
}

func (m *Error) validate() error {
	if err := checkString("error: \"code\"", string(m.Code), MaxStringBytes); err != nil {
		return err
	}
	return checkString("error: \"message\"", m.Message, MaxTextBytes)
}

func (m *Refused) validate() error {
	if err := checkString("refused: \"reason\"", m.Reason, MaxTextBytes); err != nil {
		return err
	}
	return checkInt("refused: \"retry_after_ms\"", m.RetryAfterMs, 0)
}

func (m *Challenge) validate() error {
	if err := checkString("challenge: \"alg\"", m.Alg, MaxStringBytes); err != nil {
		return err
	}
	if err := checkString("challenge: \"seed\"", m.Seed, MaxStringBytes); err != nil {
		return err
	}
	if err := checkInt("challenge: \"effort\"", int64(m.Effort), 0); err != nil {
		return err
	}
	return checkInt("challenge: \"expires\"", m.Expires, 0)
}

func (s *Solution) validate() error {
	if err := checkString("solution.alg", s.Alg, MaxStringBytes); err != nil {
		return err
	}
	if err := checkString("solution.seed", s.Seed, MaxStringBytes); err != nil {
		return err
	}
	return checkString("solution.nonce", s.Nonce, MaxStringBytes)
}

func (m *Envelope) validate() error {
	if err := checkObject("envelope: \"event\"", m.Event); err != nil {
		return err
	}
	return validateProviders("envelope: \"providers\"", m.Providers)
}

// validate dispatches to m's validate method.
func validate(m Message) error {
	switch m := m.(type) {
	case *Hello:
		return m.validate()
	case *SyncRequest:
		return m.validate()
	case *SyncResponse:
		return m.validate()
	case *ReplicateRequest:
		return m.validate()
	case *ReplicateResponse:
		return m.validate()
	case *CrashReportRequest:
		return m.validate()
	case *CrashReportResponse:
		return m.validate()
	case *Error:
		return m.validate()
	case *Refused:
		return m.validate()
	case *Challenge:
		return m.validate()
	}
	return fmt.Errorf("proto: unknown message type %T", m)
}
