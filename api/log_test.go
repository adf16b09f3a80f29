package api

import (
	"testing"

	"github.com/go-json-experiment/json"
)

// TestLogTailWire pins the JSON names of LogTail, which scripts read
// (GET PathLog).
func TestLogTailWire(t *testing.T) {
	b, err := json.Marshal(LogTail{Lines: []string{"a", `b "c"`}, Logged: 3})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"lines":["a","b \"c\""],"logged":3}`; string(b) != want {
		t.Errorf("LogTail = %s, want %s", b, want)
	}
}
