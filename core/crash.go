package core

// CrashInfo is what a report tells of a crash: the members of a crash
// event's body (docs/design.md §5) but its fingerprint, which the event
// log adds (eventlog.Crash). The control API's request to report a crash
// (api.CrashReportRequest) holds it too, so that the two cannot drift
// apart. In a body all six are required; the stack is bounded there
// (eventlog.MaxStackBytes).
type CrashInfo struct {
	// Program and Version name what crashed.
	Program string `json:"program"`
	Version string `json:"version"`
	// OS and Arch are where it ran, by Go's names (runtime.GOOS and
	// runtime.GOARCH).
	OS   string `json:"os"`
	Arch string `json:"arch"`
	// Reason is the failure, for example a panic's message; Stack is the
	// stack trace, whose first line goes into the fingerprint (ADR 0028).
	Reason string `json:"reason"`
	Stack  string `json:"stack"`
}
