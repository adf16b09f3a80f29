package config

import (
	"errors"
	"fmt"
	"strings"
)

// The kinds of configuration problems. Every problem is an *Error whose Is
// matches exactly one of these, so callers branch with errors.Is and print
// the error itself, which says where and what.
var (
	// ErrSyntax: the file is not valid TOML (or defines a key twice).
	ErrSyntax = errors.New("config: syntax error")
	// ErrUnknownKey: a key or table the Config has no field for (strict
	// decoding, docs/design.md §11).
	ErrUnknownKey = errors.New("config: unknown key")
	// ErrType: a value of the wrong TOML type, e.g. conns_low = "32"; also
	// a value where a table belongs (p2p = 1) or a table where a value
	// belongs ([network]).
	ErrType = errors.New("config: wrong type")
	// ErrInvalid: a value of the right type outside its allowed range or
	// form, e.g. conns_low = 0 or interval = "30".
	ErrInvalid = errors.New("config: invalid value")
)

// Error is one problem with a configuration. Load and Parse report all the
// problems they find at once, joined with errors.Join; use errors.As to get
// the first *Error, or range over the joined errors.
type Error struct {
	// File is the name given to Parse (the path, for Load); "" for the
	// problems Validate finds in a Config that came from no file.
	File string
	// Line and Column locate the key in File, both from 1; 0 when unknown,
	// e.g. when the key was not in the file and kept its default.
	Line, Column int
	// Key is the full dotted key, e.g. "p2p.conns_low", with an index for
	// one entry of a list, e.g. "p2p.listen[3]"; "" for a syntax error that
	// is not about one key.
	Key string
	// Kind is ErrSyntax, ErrUnknownKey, ErrType or ErrInvalid.
	Kind error
	// Msg says what is wrong and how to put it right; it names the key.
	Msg string
	// Err is the underlying decoder error, if any.
	Err error

	// locate lists the other keys a rule of Validate reads (a rule between
	// two keys): their position may stand in for Key's when Key is not in
	// the file, and Parse drops the problem when one of them is in the
	// file with a value of the wrong type (it would judge the default).
	// INVARIANT: a rule that reads a key other than Key lists it here.
	locate []string
}

// Error formats the problem as FILE:LINE:COLUMN: MSG, leaving out what is
// unknown; without a file, as "config: line LINE: MSG" or "config: MSG".
func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0 && e.Column > 0:
		fmt.Fprintf(&b, "%s:%d:%d: ", e.File, e.Line, e.Column)
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	case e.File != "":
		fmt.Fprintf(&b, "%s: ", e.File)
	case e.Line > 0:
		fmt.Fprintf(&b, "config: line %d: ", e.Line)
	default:
		b.WriteString("config: ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Is reports whether target is e's Kind.
func (e *Error) Is(target error) bool { return target == e.Kind }

// Unwrap returns the underlying decoder error, or nil.
func (e *Error) Unwrap() error { return e.Err }

// join returns the problems as one error: nil for none, the *Error itself
// for one, errors.Join of them otherwise.
func join(problems []*Error) error {
	switch len(problems) {
	case 0:
		return nil
	case 1:
		return problems[0]
	}
	errs := make([]error, len(problems))
	for i, p := range problems {
		errs[i] = p
	}
	return errors.Join(errs...)
}
