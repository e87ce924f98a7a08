package schema

import "github.com/santhosh-tekuri/jsonschema/v5"

// Library is the library's compiled schema, for tests that compare the fast path with it.
func (s *Schema) Library() *jsonschema.Schema { return s.lib }

// FastValid is the fast path's answer alone: true only when the input is certainly valid.
func (s *Schema) FastValid(input any) bool { return s.fast.valid(input) }

// HasFastPath reports whether the schema has a fast path at all.
func (s *Schema) HasFastPath() bool { return s.fast != nil }

// Refused reports whether the checks before the schema refuse the input.
func (s *Schema) Refused(input any) bool { return len(precheck(s.lib, input)) > 0 }
