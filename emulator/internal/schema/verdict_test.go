package schema

import (
	"math/big"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// verdictCase is one schema and input whose answers are known.
type verdictCase struct {
	name   string
	schema string // JSON
	input  string // JSON, decoded with UseNumber; or use value
	value  any
	valid  bool // what the library says
	fast   bool // whether the verdict decides it valid (only ever when valid)
}

func (vc verdictCase) run(t *testing.T) {
	t.Helper()
	compiled, err := Compile([]byte(vc.schema))
	if err != nil {
		t.Fatalf("%s: compile: %v", vc.name, err)
	}
	s, vd := compiled.lib, compiled.fast
	input := vc.value
	if vc.input != "" {
		input = decodeInput(t, vc.input)
	}
	libErr := s.Validate(input)
	if (libErr == nil) != vc.valid {
		t.Fatalf("%s: the library says %v; the case expects valid=%v", vc.name, libErr, vc.valid)
	}
	got := vd.valid(input)
	if got && libErr != nil {
		t.Fatalf("%s: the verdict says valid, the library says %v", vc.name, libErr)
	}
	if got != vc.fast {
		t.Errorf("%s: verdict valid=%v; want %v", vc.name, got, vc.fast)
	}
}

// TestVerdictSemantics: each case names what it checks of the library's semantics.
func TestVerdictSemantics(t *testing.T) {
	const (
		integer   = `{"type": "integer"}`
		min01     = `{"type": "number", "minimum": 0.1}`
		max03     = `{"type": "number", "maximum": 0.3}`
		exclMin0  = `{"type": "number", "exclusiveMinimum": 0}`
		exclMax1  = `{"exclusiveMaximum": 1}`
		mult001   = `{"type": "number", "multipleOf": 0.01}`
		mult8     = `{"type": "integer", "multipleOf": 8}`
		len3      = `{"type": "string", "minLength": 1, "maxLength": 3}`
		numEnum   = `{"enum": [1, 2.5, "a", null, [1, "x"], {"k": 1}]}`
		constObj  = `{"const": {"a": [1, "x"]}}`
		closed    = `{"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false}`
		addlNum   = `{"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "number"}}`
		required  = `{"type": "object", "required": ["a", "b"]}`
		sizeAnyOf = `{"type": "object", "properties": {"size": {"anyOf": [{"$ref": "#/$defs/wh"}, {"type": "string", "enum": ["square", "wide"]}]}},
			"$defs": {"wh": {"type": "object", "required": ["w"], "additionalProperties": false, "properties": {"w": {"type": "integer", "minimum": 1}}}}}`
		tree      = `{"$ref": "#/$defs/node", "$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}}`
		oneOf     = `{"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 10}]}`
		allOfNot  = `{"allOf": [{"type": "string"}, {"not": {"enum": ["no"]}}]}`
		ifThen    = `{"if": {"properties": {"k": {"const": "img"}}}, "then": {"required": ["size"]}, "else": {"required": ["len"]}}`
		pattern   = `{"type": "string", "pattern": "[a-z]{2}"}`
		anchored  = `{"type": "string", "pattern": "^[a-z]+$"}`
		uri       = `{"format": "uri"}`
		dateTime  = `{"type": "string", "format": "date-time"}`
		unknownF  = `{"type": "string", "format": "not-a-registered-format"}`
		unique    = `{"type": "array", "uniqueItems": true}`
		tuple     = `{"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"}, "minItems": 1, "maxItems": 3}`
		contains  = `{"type": "array", "contains": {"const": 1}, "maxContains": 1}`
		patProps  = `{"type": "object", "patternProperties": {"^x-": {"type": "string"}}, "additionalProperties": false}`
		propNames = `{"type": "object", "propertyNames": {"maxLength": 2}}`
		depReq    = `{"type": "object", "dependentRequired": {"a": ["b"]}}`
		depSchema = `{"type": "object", "dependentSchemas": {"a": {"required": ["b"]}}}`
		unevalP   = `{"type": "object", "properties": {"a": {}}, "unevaluatedProperties": false}`
		boolItems = `{"type": "array", "items": false}`
		typeList  = `{"type": ["integer", "string"]}`
	)
	for _, vc := range []verdictCase{
		{name: "integer: 1.0 is an integer", schema: integer, input: `1.0`, valid: true, fast: true},
		{name: "integer: 1e2 is an integer", schema: integer, input: `1e2`, valid: true, fast: true},
		{name: "integer: 1.5e1 is an integer", schema: integer, input: `1.5e1`, valid: true, fast: true},
		{name: "integer: -0.0 is an integer", schema: integer, input: `-0.0`, valid: true, fast: true},
		{name: "integer: 100e-2 is an integer", schema: integer, input: `100e-2`, valid: true, fast: true},
		{name: "integer: 1.5 is not", schema: integer, input: `1.5`},
		{name: "integer: 1e-1 is not", schema: integer, input: `1e-1`},
		{name: "integer: 1.00000000000000000001 is not, though it is 1 as a float", schema: integer, input: `1.00000000000000000001`},
		{name: "integer: a 30-digit integer is one", schema: integer, input: `123456789012345678901234567890`, valid: true, fast: true},
		{name: "integer: a string is not", schema: integer, input: `"1"`},
		{name: "type list: string or integer takes a string", schema: typeList, input: `"1"`, valid: true, fast: true},
		{name: "type list: string or integer takes 2.0", schema: typeList, input: `2.0`, valid: true, fast: true},
		{name: "type list: string or integer refuses true", schema: typeList, input: `true`},
		{name: "minimum: the bound itself", schema: min01, input: `0.1`, valid: true, fast: true},
		{name: "minimum: 0.1 written long", schema: min01, input: `0.10000000000000000000`, valid: true, fast: true},
		{name: "minimum: just below, the same float64", schema: min01, input: `0.09999999999999999999`},
		{name: "minimum: just above, the same float64", schema: min01, input: `0.10000000000000000001`, valid: true, fast: true},
		{name: "maximum: 0.30000000000000000001 is past 0.3", schema: max03, input: `0.30000000000000000001`},
		{name: "maximum: 0.29999999999999999999 is within", schema: max03, input: `0.29999999999999999999`, valid: true, fast: true},
		{name: "maximum: 1e300 is past", schema: max03, input: `1e300`},
		{name: "maximum: 1e-400 is within", schema: max03, input: `1e-400`, valid: true, fast: true},
		{name: "maximum: -1e400 is within", schema: max03, input: `-1e400`, valid: true, fast: true},
		{name: "exclusiveMinimum: 0 is not above 0", schema: exclMin0, input: `0`},
		{name: "exclusiveMinimum: -0.0 is not above 0", schema: exclMin0, input: `-0.0`},
		{name: "exclusiveMinimum: 1e-400 is above 0", schema: exclMin0, input: `1e-400`, valid: true, fast: true},
		{name: "exclusiveMaximum: 1 is not below 1", schema: exclMax1, input: `1.000`},
		{name: "exclusiveMaximum: 0.99999999999999999999 is below 1", schema: exclMax1, input: `0.99999999999999999999`, valid: true, fast: true},
		{name: "exclusiveMaximum: a string is not a number to bound", schema: exclMax1, input: `"9"`, valid: true, fast: true},
		{name: "multipleOf 0.01: 0.07 (not a multiple in float64 arithmetic)", schema: mult001, input: `0.07`, valid: true, fast: true},
		{name: "multipleOf 0.01: 1.1 is one", schema: mult001, input: `1.1`, valid: true, fast: true},
		{name: "multipleOf 0.01: 0.075 is not", schema: mult001, input: `0.075`},
		{name: "multipleOf 0.01: 7e-2 is one", schema: mult001, input: `7e-2`, valid: true, fast: true},
		{name: "multipleOf 0.01: 0 is one", schema: mult001, input: `0.000`, valid: true, fast: true},
		{name: "multipleOf 0.01: 25 digits past the point", schema: mult001, input: `0.0100000000000000000000001`},
		{name: "multipleOf 8: 1024.0", schema: mult8, input: `1024.0`, valid: true, fast: true},
		{name: "multipleOf 8: 1.024e3", schema: mult8, input: `1.024e3`, valid: true, fast: true},
		{name: "multipleOf 8: -16", schema: mult8, input: `-16`, valid: true, fast: true},
		{name: "multipleOf 8: 8e300", schema: mult8, input: `8e300`, valid: true, fast: true},
		{name: "multipleOf 8: 1028 is not", schema: mult8, input: `1028`},
		{name: "multipleOf 8: 1e400 (a 401-digit integer) is one", schema: mult8, input: `1e400`, valid: true, fast: true},
		{name: "multipleOf 8: a 25-digit multiple", schema: mult8, input: `1000000000000000000000008`, valid: true, fast: true},
		{name: "multipleOf 8: a 25-digit non-multiple", schema: mult8, input: `1000000000000000000000004`},
		{name: "length: three two-byte runes", schema: len3, input: `"ééé"`, valid: true, fast: true},
		{name: "length: four two-byte runes", schema: len3, input: `"éééé"`},
		{name: "length: three four-byte runes", schema: len3, input: `"🦊🦊🦊"`, valid: true, fast: true},
		{name: "length: an empty string is under minLength", schema: len3, input: `""`},
		{name: "length: invalid UTF-8 counts a rune a byte", schema: len3, value: "\xff\xfe\xfd", valid: true, fast: true},
		{name: "length: four invalid bytes", schema: len3, value: "\xff\xfe\xfd\xfc"},
		{name: "enum: 1.0 equals 1", schema: numEnum, input: `1.0`, valid: true, fast: true},
		{name: "enum: 25e-1 equals 2.5", schema: numEnum, input: `25e-1`, valid: true, fast: true},
		{name: "enum: 2.50000000000000000001 does not equal 2.5", schema: numEnum, input: `2.50000000000000000001`},
		{name: "enum: the string", schema: numEnum, input: `"a"`, valid: true, fast: true},
		{name: "enum: null", schema: numEnum, input: `null`, valid: true, fast: true},
		{name: "enum: an array equal item by item", schema: numEnum, input: `[1.0, "x"]`, valid: true, fast: true},
		{name: "enum: an array in another order", schema: numEnum, input: `["x", 1]`},
		{name: "enum: an object", schema: numEnum, input: `{"k": 1e0}`, valid: true, fast: true},
		{name: "enum: a string that is a number", schema: numEnum, input: `"1"`},
		{name: "const: a deep object", schema: constObj, input: `{"a": [10e-1, "x"]}`, valid: true, fast: true},
		{name: "const: an extra member", schema: constObj, input: `{"a": [1, "x"], "b": 1}`},
		{name: "additionalProperties false: known only", schema: closed, input: `{"a": "x"}`, valid: true, fast: true},
		{name: "additionalProperties false: an unknown one", schema: closed, input: `{"a": "x", "b": 1}`},
		{name: "additionalProperties schema: an extra number", schema: addlNum, input: `{"a": "x", "b": 1}`, valid: true, fast: true},
		{name: "additionalProperties schema: an extra string", schema: addlNum, input: `{"b": "1"}`},
		{name: "required: both", schema: required, input: `{"a": null, "b": 0}`, valid: true, fast: true},
		{name: "required: one missing", schema: required, input: `{"a": 1}`},
		{name: "required: not an object, nothing to require", schema: required, input: `[]`},
		{name: "anyOf: the string branch after the object branch fails", schema: sizeAnyOf, input: `{"size": "wide"}`, valid: true, fast: true},
		{name: "anyOf: the $ref branch", schema: sizeAnyOf, input: `{"size": {"w": 2.0}}`, valid: true, fast: true},
		{name: "anyOf: no branch", schema: sizeAnyOf, input: `{"size": {"w": 0}}`},
		{name: "anyOf: an extra member in the $ref branch", schema: sizeAnyOf, input: `{"size": {"w": 1, "h": 1}}`},
		{name: "$ref: recursion through the input", schema: tree, input: `{"v": 1, "kids": [{"v": 2, "kids": [{"v": 3}]}]}`, valid: true, fast: true},
		{name: "$ref: a bad leaf deep down", schema: tree, input: `{"v": 1, "kids": [{"v": 2, "kids": [{"v": 3.5}]}]}`},
		{name: "oneOf: only the integer branch", schema: oneOf, input: `3`, valid: true, fast: true},
		{name: "oneOf: both branches", schema: oneOf, input: `12`},
		{name: "oneOf: only the second", schema: oneOf, input: `12.5`, valid: true, fast: true},
		{name: "oneOf: neither", schema: oneOf, input: `2.5`},
		{name: "allOf and not: allowed", schema: allOfNot, input: `"yes"`, valid: true, fast: true},
		{name: "allOf and not: refused", schema: allOfNot, input: `"no"`},
		{name: "if/then: then holds", schema: ifThen, input: `{"k": "img", "size": 1}`, valid: true, fast: true},
		{name: "if/then: then fails", schema: ifThen, input: `{"k": "img", "len": 1}`},
		{name: "if/else: else holds", schema: ifThen, input: `{"k": "vid", "len": 1}`, valid: true, fast: true},
		{name: "pattern: unanchored, matches inside", schema: pattern, input: `"12ab34"`, valid: true, fast: true},
		{name: "pattern: no match", schema: pattern, input: `"1a2"`},
		{name: "pattern: anchored", schema: anchored, input: `"abc"`, valid: true, fast: true},
		{name: "pattern: anchored, refused", schema: anchored, input: `"abc "`},
		{name: "format uri: an absolute URL", schema: uri, input: `"https://example.com/a.png"`, valid: true, fast: true},
		{name: "format uri: a relative reference", schema: uri, input: `"a.png"`},
		{name: "format uri: a number is not checked", schema: uri, input: `5`, valid: true, fast: true},
		{name: "format date-time: valid", schema: dateTime, input: `"2024-01-02T03:04:05Z"`, valid: true, fast: true},
		{name: "format date-time: no zone", schema: dateTime, input: `"2024-01-02T03:04:05"`},
		{name: "format: an unregistered name is not asserted", schema: unknownF, input: `"anything"`, valid: true, fast: true},
		{name: "uniqueItems: 1 and 1.0 are equal", schema: unique, input: `[1, 1.0]`},
		{name: "uniqueItems: distinct objects", schema: unique, input: `[{"a": 1}, {"a": 2}, 1, "1"]`, valid: true, fast: true},
		{name: "prefixItems and items: fits", schema: tuple, input: `["a", 1, 2.0]`, valid: true, fast: true},
		{name: "prefixItems: the first item wrong", schema: tuple, input: `[1, 1]`},
		{name: "items: the rest wrong", schema: tuple, input: `["a", "b"]`},
		{name: "maxItems: past it", schema: tuple, input: `["a", 1, 2, 3]`},
		{name: "minItems: under it", schema: tuple, input: `[]`},
		{name: "contains: one match", schema: contains, input: `[1, 2]`, valid: true, fast: true},
		{name: "contains: no match", schema: contains, input: `[2, 3]`},
		{name: "maxContains: two matches", schema: contains, input: `[1, 1.0]`},
		{name: "patternProperties: matched names are not additional", schema: patProps, input: `{"x-a": "s"}`, valid: true, fast: true},
		{name: "patternProperties: wrong value", schema: patProps, input: `{"x-a": 1}`},
		{name: "patternProperties: unmatched name is additional", schema: patProps, input: `{"y": "s"}`},
		{name: "propertyNames: short names", schema: propNames, input: `{"ab": 1}`, valid: true, fast: true},
		{name: "propertyNames: a long name", schema: propNames, input: `{"abc": 1}`},
		{name: "dependentRequired: satisfied", schema: depReq, input: `{"a": 1, "b": 2}`, valid: true, fast: true},
		{name: "dependentRequired: missing", schema: depReq, input: `{"a": 1}`},
		{name: "dependentSchemas: missing", schema: depSchema, input: `{"a": 1}`},
		{name: "dependentSchemas: absent trigger", schema: depSchema, input: `{"c": 1}`, valid: true, fast: true},
		{name: "unsupported keyword: unevaluatedProperties is left to the library", schema: unevalP, input: `{"a": 1}`, valid: true},
		{name: "boolean schema: items false takes an empty array", schema: boolItems, input: `[]`, valid: true, fast: true},
		{name: "boolean schema: items false refuses an item", schema: boolItems, input: `[1]`},
		{name: "Go types: a float64 is left to the library", schema: mult8, value: float64(16), valid: true},
		{name: "Go types: an int in an object is left to the library", schema: closed, value: map[string]any{"a": 3}},
	} {
		vc.run(t)
	}
}

// TestVerdictUnsupportedSubtree: a keyword the verdict does not implement makes only inputs
// that reach it go to the library.
func TestVerdictUnsupportedSubtree(t *testing.T) {
	schema := `{"type": "object", "properties": {"plain": {"type": "string"},
		"odd": {"type": "object", "unevaluatedProperties": false}}}`
	verdictCase{name: "the unsupported property absent", schema: schema, input: `{"plain": "x"}`, valid: true, fast: true}.run(t)
	verdictCase{name: "the unsupported property present", schema: schema, input: `{"plain": "x", "odd": {}}`, valid: true}.run(t)
}

// uses, on integrality, order, equality and multipleOf, over numbers written many ways.
func TestVerdictNumbers(t *testing.T) {
	var texts []string
	for _, mant := range []string{"0", "1", "-1", "8", "1.5", "0.25", "-0.1", "1024", "10.0", "0.07",
		"12345678901234567890", "1234567890123456789", "0.30000000000000000001", "99999999999999999999.9"} {
		for _, exp := range []string{"", "e0", "e1", "E+2", "e-1", "e-3", "e19", "e-20", "e300", "e-300"} {
			texts = append(texts, mant+exp)
		}
	}
	rat := func(s string) *big.Rat {
		r, ok := new(big.Rat).SetString(s)
		if !ok {
			t.Fatalf("big.Rat cannot read %q", s)
		}
		return r
	}
	c := &checker{budget: verdictBudget}
	for _, a := range texts {
		na, ok := parseNumber(a)
		if !ok {
			t.Fatalf("parseNumber(%q) failed", a)
		}
		ra := rat(a)
		if na.isInt() != ra.IsInt() {
			t.Errorf("isInt(%q) = %v; big.Rat says %v", a, na.isInt(), ra.IsInt())
		}
		for _, b := range texts {
			nb, _ := parseNumber(b)
			rb := rat(b)
			if na.fits && nb.fits {
				if got, want := compareNumbers(na, nb), ra.Cmp(rb); got != want {
					t.Errorf("compareNumbers(%q, %q) = %d; big.Rat says %d", a, b, got, want)
				}
			}
			if got, want := c.equalNumbers(a, b), ra.Cmp(rb) == 0; got != want {
				t.Errorf("equalNumbers(%q, %q) = %v; big.Rat says %v", a, b, got, want)
			}
			bnd, _ := newBound(rb)
			f, _ := ra.Float64()
			if got, want := c.compare(a, f, bnd), ra.Cmp(rb); got != want {
				t.Errorf("compare(%q, bound %q) = %d; big.Rat says %d", a, b, got, want)
			}
			if rb.Sign() > 0 {
				m, _ := newMultiple(rb)
				want := new(big.Rat).Quo(ra, rb).IsInt()
				if got := c.isMultiple(a, m); got != want {
					t.Errorf("isMultiple(%q, %q) = %v; big.Rat says %v", a, b, got, want)
				}
			}
		}
	}
	if c.unsure {
		t.Errorf("the checker gave up on a number")
	}
}

// TestVerdictKeywords: for every keyword the verdict implements, a schema and two inputs that
// differ only in what that keyword says. The verdict must take the first as valid (so the
// schema is one it checks) and must not take the second, which the library refuses: a verdict
// that ignored the keyword would accept it.
func TestVerdictKeywords(t *testing.T) {
	cases := []struct{ keyword, schema, valid, invalid string }{
		{"false schema", `{"properties": {"a": false}}`, `{}`, `{"a": 1}`},
		{"type", `{"type": "string"}`, `"x"`, `1`},
		{"type integer", `{"type": "integer"}`, `2.0`, `2.5`},
		{"const", `{"const": 1}`, `1.0`, `2`},
		{"enum", `{"enum": ["a", 1]}`, `"a"`, `"b"`},
		{"format", `{"format": "date"}`, `"2024-01-02"`, `"2024-13-02"`},
		{"minProperties", `{"minProperties": 2}`, `{"a": 1, "b": 2}`, `{"a": 1}`},
		{"maxProperties", `{"maxProperties": 1}`, `{"a": 1}`, `{"a": 1, "b": 2}`},
		{"required", `{"required": ["a"]}`, `{"a": 1}`, `{"b": 1}`},
		{"properties", `{"properties": {"a": {"type": "string"}}}`, `{"a": "x"}`, `{"a": 1}`},
		{"patternProperties", `{"patternProperties": {"^x-": {"type": "string"}}}`, `{"x-a": "s"}`, `{"x-a": 1}`},
		{"additionalProperties false", `{"properties": {"a": {}}, "additionalProperties": false}`, `{"a": 1}`, `{"a": 1, "b": 1}`},
		{"additionalProperties schema", `{"additionalProperties": {"type": "string"}}`, `{"b": "x"}`, `{"b": 1}`},
		{"propertyNames", `{"propertyNames": {"maxLength": 2}}`, `{"ab": 1}`, `{"abc": 1}`},
		{"dependentRequired", `{"dependentRequired": {"a": ["b"]}}`, `{"a": 1, "b": 1}`, `{"a": 1}`},
		{"dependentSchemas", `{"dependentSchemas": {"a": {"required": ["b"]}}}`, `{"a": 1, "b": 1}`, `{"a": 1}`},
		{"dependencies list", `{"dependencies": {"a": ["b"]}}`, `{"a": 1, "b": 1}`, `{"a": 1}`},
		{"dependencies schema", `{"dependencies": {"a": {"required": ["b"]}}}`, `{"a": 1, "b": 1}`, `{"a": 1}`},
		{"minItems", `{"minItems": 2}`, `[1, 2]`, `[1]`},
		{"maxItems", `{"maxItems": 1}`, `[1]`, `[1, 2]`},
		{"uniqueItems", `{"uniqueItems": true}`, `[1, 2]`, `[1, 1.0]`},
		{"prefixItems", `{"prefixItems": [{"type": "string"}]}`, `["a", 1]`, `[1, 1]`},
		{"items", `{"prefixItems": [{}], "items": {"type": "string"}}`, `[1, "a"]`, `[1, 2]`},
		{"contains", `{"contains": {"const": 1}}`, `[2, 1]`, `[2, 3]`},
		{"minContains", `{"contains": {"const": 1}, "minContains": 2}`, `[1, 1]`, `[1, 2]`},
		{"maxContains", `{"contains": {"const": 1}, "maxContains": 1}`, `[1, 2]`, `[1, 1]`},
		{"minLength", `{"minLength": 2}`, `"ab"`, `"a"`},
		{"maxLength", `{"maxLength": 2}`, `"ab"`, `"abc"`},
		{"pattern", `{"pattern": "^a"}`, `"ab"`, `"ba"`},
		{"minimum", `{"minimum": 1}`, `1`, `0.5`},
		{"exclusiveMinimum", `{"exclusiveMinimum": 1}`, `1.5`, `1`},
		{"maximum", `{"maximum": 1}`, `1`, `1.5`},
		{"exclusiveMaximum", `{"exclusiveMaximum": 1}`, `0.5`, `1`},
		{"multipleOf", `{"multipleOf": 0.5}`, `1.5`, `1.25`},
		{"$ref", `{"$ref": "#/$defs/s", "$defs": {"s": {"type": "string"}}}`, `"x"`, `1`},
		{"allOf", `{"allOf": [{"type": "string"}, {"minLength": 2}]}`, `"ab"`, `"a"`},
		{"anyOf", `{"anyOf": [{"type": "string"}, {"type": "boolean"}]}`, `true`, `1`},
		{"oneOf: none", `{"oneOf": [{"type": "string"}, {"type": "boolean"}]}`, `true`, `1`},
		{"oneOf: two", `{"oneOf": [{"type": "integer"}, {"minimum": 5}]}`, `3`, `6`},
		{"not", `{"not": {"const": "no"}}`, `"yes"`, `"no"`},
		{"if/then", `{"if": {"required": ["a"]}, "then": {"required": ["b"]}}`, `{"a": 1, "b": 1}`, `{"a": 1}`},
		{"if/else", `{"if": {"required": ["a"]}, "else": {"required": ["b"]}}`, `{"b": 1}`, `{"c": 1}`},
	}
	for _, c := range cases {
		verdictCase{name: c.keyword + ": allowed", schema: c.schema, input: c.valid, valid: true, fast: true}.run(t)
		verdictCase{name: c.keyword + ": refused", schema: c.schema, input: c.invalid}.run(t)
	}
}

// TestVerdictFormats: for every format the compiler asserts, the verdict checks it exactly as
// the library does, and some input of each is refused.
func TestVerdictFormats(t *testing.T) {
	values := []string{"", "x", "a b", "1", "-", "[", "{", "%zz", "/a", "a@b.c", "::1", "1.2.3.4",
		"P1D", "2024-01-02", "03:04:05Z", "2024-01-02T03:04:05Z", "http://a/b", "http://a/b c",
		"http://a/{b}", "c:\\d", "urn:x", "a|b", "123e4567-e89b-12d3-a456-426614174000"}
	names := []string{"not-a-registered-format"}
	for name := range jsonschema.Formats {
		names = append(names, name)
	}
	for name := range formats {
		names = append(names, name)
	}
	for _, name := range names {
		s := mustCompile(t, `{"format": "`+name+`"}`)
		refused := 0
		for _, v := range values {
			lib, fast := s.lib.Validate(v) == nil, s.fast.valid(v)
			if lib != fast {
				t.Errorf("format %q, %q: the library says valid=%v, the verdict %v", name, v, lib, fast)
			}
			if !lib {
				refused++
			}
		}
		if refused == 0 && name != "not-a-registered-format" {
			t.Errorf("format %q: no value is refused; the test says nothing of it", name)
		}
	}
}
