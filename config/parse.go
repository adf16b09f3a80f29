package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// Load reads the config file at path and returns it as Parse does, with
// path as the file name in every error. A missing file is an error that
// matches fs.ErrNotExist; a file over MaxFileSize bytes is refused.
func Load(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("config: read %s: %w", path, err)
	}
	if len(data) > MaxFileSize {
		return nil, &Error{File: path, Kind: ErrInvalid,
			Msg: fmt.Sprintf("larger than %d bytes: not a wats config file", MaxFileSize)}
	}
	return Parse(data, path)
}

// Parse decodes data, a config.toml named name (for messages), over
// Default() and validates the result. Decoding is strict (docs/design.md §4, §11):
// every table and key must be one of Config's, its name matched exactly,
// case included (`Network` and `[Log]` are unknown). Keys the file omits
// keep their defaults.
//
// The error, if any, joins one *Error per problem (see Error), each naming
// the file, the line and column, and the key:
//   - ErrSyntax: not TOML, or a key or table defined twice;
//   - ErrUnknownKey: a key or table Config has no field for, with the
//     nearest known key or the list of the table's keys;
//   - ErrType: a value of the wrong TOML type, a value where a table
//     belongs or a table where a value belongs;
//   - ErrInvalid: a value outside its range (see Validate), a duration
//     that time.ParseDuration refuses, an integer beyond 64 bits, or a
//     file of more than MaxKeys keys.
//
// Problems are reported together, in the order of the file: the unknown
// keys, the values of the wrong type and the values out of range, each key
// decoded and validated on its own. Three things limit this:
//   - A file of more than MaxKeys keys and tables is refused with one
//     ErrInvalid problem, before anything else is looked at.
//   - An ErrSyntax problem is reported alone: past a syntax error the
//     parser cannot tell what the file means, and of a key defined twice
//     either value would be a guess.
//   - Validate's rules read the keys that decoded, so a key of the wrong
//     type is reported once, as ErrType, and the rules that read it (its
//     own, and those between it and another key, such as p2p.conns_low <
//     p2p.conns_high) are skipped rather than applied to its default. The
//     keys below an unknown table are not looked at.
func Parse(data []byte, name string) (*Config, error) {
	d, perr := scan(data)
	if d.tooMany != nil {
		d.tooMany.File = name
		return nil, d.tooMany
	}
	// The syntax, and TOML's rules on keys and tables defined twice, by
	// go-toml's decoder into a value that keeps nothing.
	var sink struct{}
	if err := toml.Unmarshal(data, &sink); err != nil {
		return nil, d.syntaxProblem(err, name)
	}
	if perr != nil {
		return nil, d.syntaxProblem(perr, name)
	}

	c := Default()
	problems := d.problems
	for _, v := range d.values {
		if p := d.decode(v, c); p != nil {
			problems = append(problems, p)
			d.failed[v.f.key] = true
		}
	}
	for _, p := range c.problems() {
		if !d.readsFailed(p) {
			d.idx.locate(p)
			problems = append(problems, p)
		}
	}
	if len(problems) == 0 {
		return c, nil
	}
	// In the order of the file; keys it left out (line 0) last.
	sort.SliceStable(problems, func(i, j int) bool {
		pi, pj := problems[i], problems[j]
		switch {
		case pi.Line == 0 || pj.Line == 0:
			return pi.Line != 0 && pj.Line == 0
		case pi.Line != pj.Line:
			return pi.Line < pj.Line
		}
		return pi.Column < pj.Column
	})
	for _, p := range problems {
		p.File = name
	}
	return nil, join(problems)
}

// readsFailed reports whether the problem p of Validate is about, or reads,
// a key whose value in the document was not used.
func (d *document) readsFailed(p *Error) bool {
	base, _, _ := strings.Cut(p.Key, "[")
	if d.failed[base] {
		return true
	}
	for _, k := range p.locate {
		if d.failed[k] {
			return true
		}
	}
	return false
}

// decode decodes the value v into its field of c with go-toml, and returns
// the problem if it does not decode.
//
// go-toml decodes a document "v=<value>" into a struct holding only the
// field, laid out so that the value keeps its line and column: the
// positions in go-toml's errors are those of the file.
func (d *document) decode(v value, c *Config) *Error {
	f := v.f
	if f.typ == durationType && v.kind != unstable.String {
		// go-toml would hand any scalar to UnmarshalText, whose error
		// would not say that the type is wrong.
		line, col := d.pos(v.keyOff)
		return &Error{Line: line, Column: col, Key: f.key, Kind: ErrType,
			Msg: fmt.Sprintf("%s: wrong type: expected %s (a bare number has no unit)%s; example%s: %s",
				f.key, typeName(f.typ), gotKind(v.kind), tableNote(f), keyDocs[f.key].example)}
	}
	line, col := d.pos(v.start)
	doc := make([]byte, 0, line-1+col-1+v.end-v.start)
	doc = append(doc, strings.Repeat("\n", line-1)...)
	doc = append(doc, "v="...)
	doc = append(doc, strings.Repeat(" ", max(col-3, 0))...) // col >= 3: "k=" precedes
	doc = append(doc, d.data[v.start:v.end]...)

	holder := reflect.New(reflect.StructOf([]reflect.StructField{
		{Name: "V", Type: f.typ, Tag: `toml:"v"`},
	}))
	dec := toml.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(holder.Interface()); err != nil {
		return valueProblem(err, f, line, col)
	}
	reflect.ValueOf(c).Elem().FieldByIndex(f.index).Set(holder.Elem().Field(0))
	return nil
}

var durationType = reflect.TypeFor[Duration]()

// valueProblem translates the error of go-toml's decoder on the value of
// the key f, which starts at line, col, into an *Error.
func valueProblem(err error, f field, line, col int) *Error {
	p := &Error{Line: line, Column: col, Key: f.key, Kind: ErrInvalid, Err: err}
	msg := err.Error()
	var de *toml.DecodeError
	if errors.As(err, &de) {
		msg = strings.TrimPrefix(de.Error(), "toml: ")
		// Within the value, e.g. at an entry of an array; go-toml puts
		// some errors at the key, "v", which is not in the file.
		if l, c := de.Position(); l > line || l == line && c >= col {
			p.Line, p.Column = l, c
		}
	}
	if strings.HasPrefix(msg, "cannot decode TOML ") || strings.HasPrefix(msg, "cannot store ") {
		p.Kind = ErrType
		p.Msg = fmt.Sprintf("%s: wrong type: expected %s%s; example%s: %s",
			f.key, typeName(f.typ), gotType(msg), tableNote(f), keyDocs[f.key].example)
		return p
	}
	// A duration time.ParseDuration refuses, an integer beyond 64 bits.
	p.Msg = fmt.Sprintf("%s: %s; allowed: %s", f.key, msg, keyDocs[f.key].allowed)
	return p
}

// syntaxProblem translates an error of go-toml's parser or decoder on the
// whole document into an ErrSyntax *Error. go-toml names a key without its
// table ("key level is already defined"); the key is the full name of the
// key written there.
func (d *document) syntaxProblem(err error, name string) *Error {
	p := &Error{File: name, Kind: ErrSyntax, Msg: err.Error(), Err: err}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		p.Line, p.Column = de.Position()
		p.Key = strings.Join(de.Key(), ".")
		p.Msg = strings.TrimPrefix(de.Error(), "toml: ")
		if full := d.nameAt(p.Line, p.Column); full != "" {
			p.Key = full
			p.Msg = full + ": " + p.Msg
		}
	}
	return p
}

// wrongType is the message for the key f holding got (a TOML type, "a
// table") instead of its own type.
func wrongType(f field, got string) string {
	return fmt.Sprintf("%s: wrong type: expected %s, got %s; example%s: %s",
		f.key, typeName(f.typ), got, tableNote(f), keyDocs[f.key].example)
}

// notATable is the message for key, a key below the key f, which is a
// value and not a table (network.x = 1).
func notATable(key string, f field) string {
	return fmt.Sprintf("%s: wrong type: %s is %s, not a table; example%s: %s",
		key, f.key, typeName(f.typ), tableNote(f), keyDocs[f.key].example)
}

// tableHint says how to write the table named name.
func tableHint(name string) string {
	return "write [" + name + "] on a line of its own with its keys below it"
}

// gotType extracts the TOML type go-toml found from its message "cannot
// decode TOML string into ...", as ", got a string"; "" if it is not there.
func gotType(msg string) string {
	rest, ok := strings.CutPrefix(msg, "cannot decode TOML ")
	if !ok {
		return ""
	}
	got, _, ok := strings.Cut(rest, " into ")
	if !ok || got == "" {
		return ""
	}
	if strings.ContainsRune("aeiou", rune(got[0])) {
		return ", got an " + got
	}
	return ", got a " + got
}

// tableNote returns " (in [table])" for a key inside a table, "" at the top.
func tableNote(f field) string {
	if f.table == "" {
		return ""
	}
	return " (in [" + f.table + "])"
}

// unknownKeyMessage says that key (a table if isTable) is unknown and what
// was probably meant: the nearest known key or table, or the keys and
// tables there are.
func unknownKeyMessage(key string, isTable bool) string {
	what := fmt.Sprintf("unknown key %q", key)
	if isTable {
		what = fmt.Sprintf("unknown table [%s]", key)
	}
	tableName, last := "", key
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		tableName, last = key[:i], key[i+1:]
	}
	if best := nearestKey(key, last); best != "" {
		note := ""
		if strings.EqualFold(key, best) {
			note = " (names are matched exactly, case included)"
		}
		if tableByName(best) != nil {
			return fmt.Sprintf("%s: did you mean [%s]?%s", what, best, note)
		}
		return fmt.Sprintf("%s: did you mean %q?%s", what, best, note)
	}
	tb := tableByName(tableName)
	if isTable {
		return fmt.Sprintf("%s: the tables are %s", what, strings.Join(tableNames(schema), ", "))
	}
	if tb == nil {
		return fmt.Sprintf("%s: there is no table [%s]; the tables are %s",
			what, tableName, strings.Join(tableNames(schema), ", "))
	}
	var names []string
	for _, f := range tb.keys {
		names = append(names, f.name)
	}
	where := "at the top level"
	if tb.name != "" {
		where = "in [" + tb.name + "]"
	}
	msg := fmt.Sprintf("%s: the keys %s are %s", what, where, strings.Join(names, ", "))
	if len(tb.tables) > 0 {
		msg += "; the tables are " + strings.Join(tableNames(tb), ", ")
	}
	return msg
}

// nearestKey returns the known key or table nearest to key, case ignored:
// the same but for case, else within an edit distance of 2, else the same
// last part in another table; or "".
func nearestKey(key, last string) string {
	key, last = strings.ToLower(key), strings.ToLower(last)
	best, bestDist := "", 3
	for _, name := range suggestions() {
		c := strings.ToLower(name)
		d := bestDist // the length alone tells when c cannot be nearer
		if abs(len(key)-len(c)) < bestDist {
			d = editDistance(key, c)
		}
		if _, cl, ok := strings.Cut(c, "."); ok && cl == last && d > 1 {
			d = 1 // the right key in the wrong table
		}
		if d < bestDist {
			best, bestDist = name, d
		}
	}
	return best
}

// suggestions lists the names nearestKey chooses from: every key and table,
// sorted (so that ties go the same way every time).
var suggestions = sync.OnceValue(func() []string {
	var names []string
	for k := range fields {
		names = append(names, k)
	}
	for _, t := range tableNames(schema) {
		names = append(names, strings.Trim(t, "[]"))
	}
	sort.Strings(names)
	return names
})

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// tableNames lists the sub-tables of tb, all levels, as "[name]".
func tableNames(tb *table) []string {
	var names []string
	for _, sub := range tb.tables {
		names = append(names, "["+sub.name+"]")
		names = append(names, tableNames(sub)...)
	}
	return names
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// gotKind names a TOML value kind for messages, as ", got an integer".
func gotKind(k unstable.Kind) string {
	switch k {
	case unstable.Integer:
		return ", got an integer"
	case unstable.Float:
		return ", got a float"
	case unstable.Bool:
		return ", got a bool"
	case unstable.Array:
		return ", got an array"
	case unstable.InlineTable:
		return ", got an inline table"
	case unstable.LocalDate, unstable.LocalTime, unstable.LocalDateTime, unstable.DateTime:
		return ", got a date or time"
	}
	return ""
}
