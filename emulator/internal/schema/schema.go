// Package schema validates an input against a model's JSON Schema: the one way the emulator
// compiles a schema, the bounds that keep any input cheap to check, and the mapping of the
// library's errors to JSON Pointers.
package schema

import (
	"bytes"
	"errors"
	"io"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Draft202012 is the JSON Schema dialect of every input schema: the only $schema a catalog
// accepts.
const Draft202012 = "https://json-schema.org/draft/2020-12/schema"

// errNoRemoteRefs is what every attempt of a schema to load a URL or file gets.
var errNoRemoteRefs = errors.New("schemas may not load files or URLs; only local references (#/...) are allowed")

// NewCompiler returns a JSON Schema compiler set up the one way the emulator uses: draft
// 2020-12, formats asserted (with the stricter checks of formats, below), and no loading of
// anything outside the schema itself.
func NewCompiler() *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	for name, fn := range formats {
		c.Formats[name] = fn
	}
	c.LoadURL = func(string) (io.ReadCloser, error) { return nil, errNoRemoteRefs }
	return c
}

// schemaURL names every input schema while it compiles; each has a compiler of its own, and a
// name that cannot resolve keeps references from reaching anything real.
const schemaURL = "https://mediagen-emulator.invalid/schemas/input.json"

// Schema is one compiled input schema; it is safe for concurrent use.
type Schema struct {
	lib *jsonschema.Schema
}

// Compile compiles a schema's JSON the one way the emulator does.
func Compile(raw []byte) (*Schema, error) {
	c := NewCompiler()
	if err := c.AddResource(schemaURL, bytes.NewReader(raw)); err != nil {
		return nil, err
	}
	lib, err := c.Compile(schemaURL)
	if err != nil {
		return nil, err
	}
	return &Schema{lib: lib}, nil
}

// Validate checks an input (as decoded with json.Decoder.UseNumber); Violations lists what is
// wrong. Its cost is bounded whatever the input: numbers past what the service accepts and
// arrays longer than their maxItems are refused before the schema looks at them.
func (s *Schema) Validate(input any) error {
	if vl := precheck(s.lib, input); len(vl) > 0 {
		return vl
	}
	return s.lib.Validate(input)
}

// Violation is one reason an input fails its schema, located by a JSON Pointer into the input.
type Violation struct {
	Pointer string
	Message string
}

// Violations lists the leaf causes of a validation error, each once, in a stable order, and at
// most MaxViolations of them.
func Violations(err error) []Violation {
	var vl violationList
	if errors.As(err, &vl) {
		return vl[:min(len(vl), MaxViolations)]
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Violation{{Message: "is not valid"}}
	}
	var out []Violation
	seen := map[Violation]bool{}
	for _, leaf := range Leaves(ve) {
		v := Violation{Pointer: leaf.InstanceLocation, Message: leaf.Message}
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
			if len(out) == MaxViolations {
				break
			}
		}
	}
	return out
}

// CompileProblems says why a schema did not compile: where it breaks the JSON Schema
// meta-schema, each at a JSON Pointer into the schema; or, for any other failure, the library's
// message without its prefixes and the schema's invented URL.
func CompileProblems(err error) (invalid []Violation, message string) {
	var se *jsonschema.SchemaError
	if errors.As(err, &se) {
		var ve *jsonschema.ValidationError
		if errors.As(se.Err, &ve) {
			for _, leaf := range Leaves(ve) {
				invalid = append(invalid, Violation{Pointer: leaf.InstanceLocation, Message: leaf.Message})
			}
			return invalid, ""
		}
	}
	msg := strings.ReplaceAll(err.Error(), "jsonschema: ", "")
	if i := strings.Index(msg, "compilation failed: "); i >= 0 {
		msg = msg[i+len("compilation failed: "):]
	}
	for {
		i := strings.Index(msg, "https://mediagen-emulator.invalid/schemas/")
		if i < 0 {
			break
		}
		j := strings.IndexAny(msg[i:], "#' \"")
		if j < 0 {
			j = len(msg) - i
		}
		msg = msg[:i] + msg[i+j:]
	}
	return nil, msg
}

// Leaves lists the innermost causes of a validation error, the ones that say what is wrong.
func Leaves(ve *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(ve.Causes) == 0 {
		return []*jsonschema.ValidationError{ve}
	}
	var out []*jsonschema.ValidationError
	for _, c := range ve.Causes {
		out = append(out, Leaves(c)...)
	}
	return out
}

// OrRoot names a JSON Pointer for a message: the pointer, or "(the input)" for the root.
func OrRoot(ptr string) string {
	if ptr == "" {
		return "(the input)"
	}
	return ptr
}

// Holding says what a schema keyword's value holds, for walks that must visit subschemas and
// nothing else (in data such as examples, enum or default, "$ref" is just a key).
type Holding int

// What a keyword's value may hold.
const (
	HoldsData       Holding = iota // examples, enum, const, default, ...
	HoldsSchema                    // one subschema (items, not, additionalProperties, ...)
	HoldsSchemaList                // a list of them (allOf, anyOf, oneOf, prefixItems)
	HoldsSchemaMap                 // a map of names to them (properties, $defs, ...)
)

var keywordHolds = map[string]Holding{
	"additionalProperties": HoldsSchema, "items": HoldsSchema, "contains": HoldsSchema, "propertyNames": HoldsSchema,
	"if": HoldsSchema, "then": HoldsSchema, "else": HoldsSchema, "not": HoldsSchema, "unevaluatedItems": HoldsSchema,
	"unevaluatedProperties": HoldsSchema, "additionalItems": HoldsSchema, "contentSchema": HoldsSchema,
	"allOf": HoldsSchemaList, "anyOf": HoldsSchemaList, "oneOf": HoldsSchemaList, "prefixItems": HoldsSchemaList,
	"properties": HoldsSchemaMap, "patternProperties": HoldsSchemaMap, "$defs": HoldsSchemaMap, "definitions": HoldsSchemaMap,
	"dependentSchemas": HoldsSchemaMap,
}

// KeywordHolds says what the value of a schema keyword holds.
func KeywordHolds(keyword string) Holding { return keywordHolds[keyword] }
