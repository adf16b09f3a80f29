package challenge

import (
	"errors"
	"fmt"
	"testing"
)

// TestFailureKind: each of Verify's errors has its label, a forgotten
// seed is a replay, anything else is "other".
func TestFailureKind(t *testing.T) {
	for err, want := range map[error]string{
		ErrUnknownAlg: "alg", ErrBadSeed: "seed", ErrBadMAC: "mac", ErrExpired: "expired", ErrBadNonce: "nonce",
		ErrInsufficientWork: "work", ErrReplayed: "replayed", ErrForgotten: "replayed", ErrCeiling: "ceiling",
		fmt.Errorf("wrapped: %w", ErrExpired): "expired", errors.New("x"): "other",
	} {
		if got := FailureKind(err); got != want {
			t.Errorf("FailureKind(%v) = %q, want %q", err, got, want)
		}
	}
}
