// Package adr0014 holds the test that keeps docs/design.md §15, the table
// of ADR 0014's numbers, equal to the code's: each number is defined once
// in the package that owns it, and the table names where.
package adr0014
