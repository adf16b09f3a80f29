package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"

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
// Default() and validates the result. Decoding is strict (design §11):
// every key must be one of Config's. Keys the file omits keep their
// defaults.
//
// The error, if any, joins one *Error per problem (see Error), each naming
// the file, the line and column, and the key:
//   - ErrSyntax: not TOML, or a key defined twice;
//   - ErrUnknownKey: a key or table Config has no field for, with the
//     nearest known key or the list of the table's keys;
//   - ErrType: a value of the wrong TOML type;
//   - ErrInvalid: a value outside its range (see Validate), or a duration
//     that time.ParseDuration refuses.
//
// Decoding problems are reported alone; validation runs only on a file
// that decodes.
func Parse(data []byte, name string) (*Config, error) {
	idx, perr := indexKeys(data)
	if perr == nil {
		// Check the durations' TOML types first: go-toml hands any scalar
		// to UnmarshalText and its error would lose the position.
		if problems := idx.durationTypes(name); len(problems) > 0 {
			return nil, join(problems)
		}
	}

	c := Default()
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		return nil, join(decodeProblems(err, name))
	}

	problems := c.problems()
	for _, p := range problems {
		p.File = name
		idx.locate(p)
	}
	// In the order of the file; keys it left out (line 0) last.
	sort.SliceStable(problems, func(i, j int) bool {
		li, lj := problems[i].Line, problems[j].Line
		return li != 0 && (lj == 0 || li < lj)
	})
	if len(problems) > 0 {
		return nil, join(problems)
	}
	return c, nil
}

// decodeProblems translates an error of go-toml's Decoder into *Errors.
func decodeProblems(err error, name string) []*Error {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) {
		problems := make([]*Error, 0, len(strict.Errors))
		for i := range strict.Errors {
			de := &strict.Errors[i]
			line, col := de.Position()
			key := strings.Join(de.Key(), ".")
			problems = append(problems, &Error{
				File: name, Line: line, Column: col, Key: key,
				Kind: ErrUnknownKey, Err: de,
				Msg: unknownKeyMessage(key, strings.Contains(de.Error(), "table")),
			})
		}
		return problems
	}

	var de *toml.DecodeError
	if !errors.As(err, &de) {
		// Not located by go-toml: an UnmarshalText error without position
		// (durationTypes catches those it can) or an I/O error.
		kind := ErrSyntax
		var dur *durationError
		if errors.As(err, &dur) {
			kind = ErrInvalid
		}
		return []*Error{{File: name, Kind: kind, Msg: err.Error(), Err: err}}
	}
	line, col := de.Position()
	key := strings.Join(de.Key(), ".")
	p := &Error{File: name, Line: line, Column: col, Key: key, Err: de}
	msg := strings.TrimPrefix(de.Error(), "toml: ")
	f, known := fields[key]
	isType := strings.HasPrefix(msg, "cannot decode TOML ") || strings.HasPrefix(msg, "cannot store ")
	switch {
	case known && isType:
		p.Kind = ErrType
		p.Msg = fmt.Sprintf("%s: wrong type: expected %s%s; example%s: %s",
			key, typeName(f.typ), gotType(msg), tableNote(f), keyDocs[key].example)
	case known && (f.typ == reflect.TypeFor[Duration]() ||
		strings.Contains(msg, "too large") || strings.Contains(msg, "too small")):
		p.Kind = ErrInvalid
		p.Msg = fmt.Sprintf("%s: %s; allowed: %s", key, msg, keyDocs[key].allowed)
	case key != "" && tableByName(key) != nil && isType:
		p.Kind = ErrType
		p.Msg = fmt.Sprintf("%s: wrong type: %s is a table; write [%s] on a line of its own with its keys below it",
			key, key, key)
	case isType && leafPrefix(key).key != "":
		// network.x = 1: a key below a key that is not a table.
		lf := leafPrefix(key)
		p.Kind = ErrType
		p.Msg = fmt.Sprintf("%s: wrong type: %s is %s, not a table; example%s: %s",
			key, lf.key, typeName(lf.typ), tableNote(lf), keyDocs[lf.key].example)
	case isType:
		p.Kind = ErrType
		p.Msg = "wrong type: " + msg
	default:
		p.Kind = ErrSyntax
		p.Msg = msg
	}
	return []*Error{p}
}

// leafPrefix returns the key that is a proper prefix of the dotted key, or
// the zero field.
func leafPrefix(key string) field {
	for i := strings.LastIndexByte(key, '.'); i > 0; i = strings.LastIndexByte(key[:i], '.') {
		if f, ok := fields[key[:i]]; ok {
			return f
		}
	}
	return field{}
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
		if tableByName(best) != nil {
			return fmt.Sprintf("%s: did you mean [%s]?", what, best)
		}
		return fmt.Sprintf("%s: did you mean %q?", what, best)
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

// nearestKey returns the known key or table nearest to key (edit distance
// at most 2, or the same last part in another table), or "".
func nearestKey(key, last string) string {
	var candidates []string
	for k := range fields {
		candidates = append(candidates, k)
	}
	candidates = append(candidates, tableNames(schema)...)
	sort.Strings(candidates)
	best, bestDist := "", 3
	for _, c := range candidates {
		c = strings.Trim(c, "[]")
		d := editDistance(key, c)
		if _, cl, ok := strings.Cut(c, "."); ok && cl == last && d > 1 {
			d = 1 // the right key in the wrong table
		}
		if d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
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

// keyIndex maps the keys of a document, and the entries of its arrays
// ("p2p.listen[1]"), to where they are and what TOML kind their value is.
type keyIndex map[string]keyPos

type keyPos struct {
	line, col int
	kind      unstable.Kind
}

// indexKeys parses data with go-toml's parser (only for positions; the
// decoder does the decoding) and returns the position of every key. The
// error is the parser's; the decoder reports it again, with its position.
func indexKeys(data []byte) (keyIndex, error) {
	idx := keyIndex{}
	var p unstable.Parser
	p.Reset(data)
	var tablePath []string
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			tablePath = keyParts(e.Key())
		case unstable.KeyValue:
			idx.addKeyValue(&p, tablePath, e)
		}
	}
	return idx, p.Error()
}

// addKeyValue records the key-value e found under the table path prefix,
// and, for an inline table or an array, what it holds.
func (idx keyIndex) addKeyValue(p *unstable.Parser, prefix []string, e *unstable.Node) {
	it := e.Key()
	it.Next()
	start := p.Shape(it.Node().Raw).Start
	path := append(append([]string(nil), prefix...), keyParts(e.Key())...)
	key := strings.Join(path, ".")
	v := e.Value()
	idx[key] = keyPos{line: start.Line, col: start.Column, kind: v.Kind}
	switch v.Kind {
	case unstable.InlineTable:
		for c := v.Children(); c.Next(); {
			if c.Node().Kind == unstable.KeyValue {
				idx.addKeyValue(p, path, c.Node())
			}
		}
	case unstable.Array:
		i := 0
		for c := v.Children(); c.Next(); i++ {
			pos := keyPos{line: start.Line, col: start.Column, kind: c.Node().Kind}
			if r := c.Node().Raw; r.Length > 0 {
				s := p.Shape(r).Start
				pos.line, pos.col = s.Line, s.Column
			}
			idx[key+"["+strconv.Itoa(i)+"]"] = pos
		}
	}
}

// keyParts returns the parts of a (possibly dotted) key.
func keyParts(it unstable.Iterator) []string {
	var parts []string
	for it.Next() {
		parts = append(parts, string(it.Node().Data))
	}
	return parts
}

// durationTypes reports, as ErrType, each Duration key of the document
// whose value is not a TOML string.
func (idx keyIndex) durationTypes(name string) []*Error {
	var problems []*Error
	for key, pos := range idx {
		f, ok := fields[key]
		if !ok || f.typ != reflect.TypeFor[Duration]() || pos.kind == unstable.String {
			continue
		}
		problems = append(problems, &Error{
			File: name, Line: pos.line, Column: pos.col, Key: key, Kind: ErrType,
			Msg: fmt.Sprintf("%s: wrong type: expected %s (a bare number has no unit)%s; example%s: %s",
				key, typeName(f.typ), gotKind(pos.kind), tableNote(f), keyDocs[key].example),
		})
	}
	sort.Slice(problems, func(i, j int) bool { return problems[i].Line < problems[j].Line })
	return problems
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

// locate sets p's position to that of its key in the document, or of the
// first of its locate keys that is there; for an entry of a list that is
// not, to the list's.
func (idx keyIndex) locate(p *Error) {
	keys := append([]string{p.Key}, p.locate...)
	if base, _, ok := strings.Cut(p.Key, "["); ok {
		keys = append(keys, base)
	}
	for _, k := range keys {
		if pos, ok := idx[k]; ok {
			p.Line, p.Column = pos.line, pos.col
			return
		}
	}
}
