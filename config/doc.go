// Package config is the node's configuration: the file <repo>/config.toml
// (docs/design.md §11), its defaults, its strict decoding and its validation.
//
// # Use
//
// The daemon loads the file with Load and gets a *Config whose every field
// is set and valid; `wats init` writes Template(config.Default()), a
// config.toml that lists every key with its value and a comment; `wats
// config show` prints Config.TOML.
//
//	c, err := config.Load(filepath.Join(dir, "config.toml"))
//	if err != nil {
//		return err // says which file, line, key and what would be right
//	}
//
// # Rules
//
//   - Strict decoding: an unknown key or table is an error (ErrUnknownKey)
//     that names its full dotted key ("p2p.listn"), the file and the line,
//     and suggests the nearest known key. Names are matched exactly, case
//     included (docs/design.md §4, §11): `Network` and `[Log]` are unknown, with
//     "did you mean" the right name.
//   - A key left out of the file keeps its default (Parse decodes over
//     Default()); an array in the file replaces the default, it is not
//     appended to.
//   - Durations are TOML strings read by time.ParseDuration ("30s"); a bare
//     number has no unit and is a type error.
//   - Validate checks every key against its range and reports every problem
//     at once (errors.Join), each an *Error naming the key, the bad value,
//     what is allowed and an example. The bounds are the constants of
//     config.go, each with the reason it exists.
//   - Parse reports the unknown keys, the wrong types and the values out of
//     range of a file together, in the order of the file; only a syntax
//     error (or a file of more than MaxKeys keys) is reported alone.
//   - Every problem is an *Error; errors.Is tells its kind: ErrSyntax,
//     ErrUnknownKey, ErrType or ErrInvalid.
//
// # Files
//
//   - config.go: Config and its tables, Default, and the bounds.
//   - keys.go: the documentation of every key and table (what it does, what
//     it allows, an example), shared by Template and the error messages, and
//     the reflection walk over Config that lists the keys.
//   - parse.go: Load and Parse: the syntax checked by go-toml/v2's decoder,
//     each known key's value decoded on its own by it, and the translation
//     of its errors into *Error with key, line and column; the unknown-key
//     messages and their suggestions.
//   - scan.go: the walk over the parsed document (go-toml's parser) that
//     matches every table and key name exactly against Config, finds the
//     value of each known key and the position of every key.
//   - validate.go: Validate and the rule of each key.
//   - template.go: Template and Config.TOML; format.go renders TOML values.
//   - duration.go: Duration, a time.Duration written as "30s".
//   - errors.go: Error and the sentinel errors.
//
// # Adding a table
//
// A new table (as [events] was, with the keys of ADR 0031) is a struct
// with toml tags, a field of Config with its default in Default, an entry
// per key in keyDocs and one for the table in tableDocs, and a validate
// method called from Config.problems. Template, TOML, the strict decoder
// and the unknown-key suggestions pick it up by reflection;
// TestTemplateCoversEveryKey and TestNonDefaultDiffersEverywhere fail until
// its keys are documented and round-tripped.
package config
