package schema_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/schema"
)

// The verdict's one rule: it says valid only when the library returns nil. For the schemas of
// the default catalog, which use only keywords it implements, it should also say valid whenever
// the library does; otherwise requests would not take the fast path.

const defaultCatalogFile = "../../../fixtures/catalog/default.yaml"

func loadDefaultCatalog(t testing.TB) *catalog.Catalog {
	t.Helper()
	data, err := os.ReadFile(defaultCatalogFile)
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Parse("default.yaml", data)
	if err != nil {
		t.Fatalf("Parse(default.yaml):\n%v", err)
	}
	return c
}

func mustModel(t testing.TB, c *catalog.Catalog, id string) *catalog.Model {
	t.Helper()
	m, ok := c.Model(id)
	if !ok {
		t.Fatalf("no model %q", id)
	}
	return m
}

// verdicts gives the fast verdict and the library's answer for an input, and whether the
// input reaches them at all (precheck refuses some first; the library must not see those).
func verdicts(s *schema.Schema, input any) (fast bool, lib error, reached bool) {
	if s.Refused(input) {
		return false, nil, false
	}
	return s.FastValid(input), s.Library().Validate(input), true
}

// compiled compiles a model's schema as the catalog does.
func compiled(t testing.TB, m *catalog.Model) *schema.Schema {
	t.Helper()
	s, err := schema.Compile(m.SchemaJSON)
	if err != nil {
		t.Fatalf("model %q: %v", m.ID, err)
	}
	return s
}

func decodeInput(t testing.TB, src string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(src))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %.80s: %v", src, err)
	}
	return v
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(b)
}

// TestVerdictDefaultCatalog validates every model's examples and many inputs mutated from them
// both ways: the verdict may never call valid what the library refuses, and for these schemas
// it must call valid everything the library accepts.
func TestVerdictDefaultCatalog(t *testing.T) {
	c := loadDefaultCatalog(t)
	var total, valid, fastValid int
	for _, m := range c.Models {
		s := compiled(t, m)
		if !s.HasFastPath() {
			t.Errorf("model %q: the schema has no verdict; every input would go to the library", m.ID)
			continue
		}
		if len(m.Examples) == 0 {
			t.Errorf("model %q has no examples", m.ID)
		}
		for i, raw := range m.Examples {
			ex := decodeInput(t, string(raw))
			if !s.FastValid(ex) {
				t.Errorf("model %q: example %d is valid, but the verdict is not sure: the fast path is not taken", m.ID, i)
			}
			for _, input := range mutations(ex, s.Library()) {
				fast, lib, reached := verdicts(s, input)
				if !reached {
					continue
				}
				total++
				if lib == nil {
					valid++
				}
				if fast {
					fastValid++
				}
				switch {
				case fast && lib != nil:
					t.Errorf("model %q: the verdict says valid, the library says %v\ninput: %s", m.ID, lib, jsonText(input))
				case !fast && lib == nil:
					t.Errorf("model %q: the library says valid, the verdict is not sure\ninput: %s", m.ID, jsonText(input))
				}
			}
		}
	}
	t.Logf("%d inputs, %d valid, %d decided valid by the verdict", total, valid, fastValid)
	if valid == 0 || valid == total {
		t.Errorf("the mutations are all valid or all invalid (%d of %d valid): they test nothing", valid, total)
	}
}

// mutations derives inputs from a valid example: each property (nested objects included)
// replaced by values of every kind and by values at the edges of its schema, removed, and
// joined by an unknown property.
func mutations(ex any, s *jsonschema.Schema) []any {
	obj, ok := ex.(map[string]any)
	if !ok {
		return nil
	}
	return mutateObject(obj, s, 0)
}

func mutateObject(obj map[string]any, s *jsonschema.Schema, depth int) []any {
	with := func(k string, v any, drop bool) map[string]any {
		out := make(map[string]any, len(obj)+1)
		for key, val := range obj {
			out[key] = val
		}
		if drop {
			delete(out, k)
		} else {
			out[k] = v
		}
		return out
	}
	var out []any
	props := map[string][]*jsonschema.Schema{}
	for _, os := range reachable(s) {
		for name, ps := range os.Properties {
			props[name] = append(props[name], ps)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(props)) {
		for _, ps := range props[name] {
			for _, v := range candidates(ps, depth) {
				out = append(out, with(name, v, false))
			}
			if sub, ok := obj[name].(map[string]any); ok && depth < 2 {
				for _, v := range mutateObject(sub, ps, depth+1) {
					out = append(out, with(name, v, false))
				}
			}
		}
	}
	for name := range obj {
		out = append(out, with(name, nil, true))
	}
	out = append(out, with("unknown_property", "x", false), with("", json.Number("1"), false))
	return out
}

// reachable lists s and the schemas that apply to the same value through $ref and applicators.
func reachable(s *jsonschema.Schema) []*jsonschema.Schema {
	seen := map[*jsonschema.Schema]bool{}
	var out []*jsonschema.Schema
	var walk func(s *jsonschema.Schema)
	walk = func(s *jsonschema.Schema) {
		if s == nil || seen[s] {
			return
		}
		seen[s] = true
		out = append(out, s)
		walk(s.Ref)
		for _, list := range [][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf} {
			for _, sub := range list {
				walk(sub)
			}
		}
	}
	walk(s)
	return out
}

// genericValues are values of every JSON kind, numbers that are integers only in some
// notations, and strings of multibyte runes.
var genericValues = []any{
	nil, true, false, "", "x", "é", "漢字🦊", "\xff",
	json.Number("0"), json.Number("-0"), json.Number("1"), json.Number("-1"), json.Number("1.0"),
	json.Number("1e2"), json.Number("1E+2"), json.Number("1.5"), json.Number("0.30000000000000000001"),
	json.Number("1e-400"), json.Number("1e300"), json.Number("123456789012345678901234567890"),
	[]any{}, []any{"a"}, []any{json.Number("1"), nil}, map[string]any{}, map[string]any{"a": json.Number("1")},
}

// candidates lists values for a property of schema s: the generic ones and those at the edges
// of everything s (and what it refers to) says.
func candidates(s *jsonschema.Schema, depth int) []any {
	out := append([]any(nil), genericValues...)
	for _, rs := range reachable(s) {
		out = append(out, rs.Enum...)
		if len(rs.Constant) > 0 {
			out = append(out, rs.Constant[0])
		}
		for _, r := range []*big.Rat{rs.Minimum, rs.Maximum, rs.ExclusiveMinimum, rs.ExclusiveMaximum} {
			if r != nil {
				out = append(out, numbersAround(r)...)
			}
		}
		if rs.MultipleOf != nil {
			for _, k := range []int64{0, 1, 2, 3, 7, 32, 128, 255, 256, -1} {
				m := new(big.Rat).Mul(rs.MultipleOf, big.NewRat(k, 1))
				out = append(out, numbersAround(m)...)
			}
		}
		for _, n := range []int{rs.MinLength, rs.MaxLength} {
			if n < 0 || n > 10000 {
				continue
			}
			for _, l := range []int{n - 1, n, n + 1} {
				if l >= 0 {
					out = append(out, strings.Repeat("é", l), strings.Repeat("🦊", l), strings.Repeat("a", l))
				}
			}
		}
		if rs.Items2020 != nil && depth < 2 {
			items := candidates(rs.Items2020, depth+1)
			for _, n := range []int{0, 1, rs.MinItems - 1, rs.MinItems, rs.MaxItems - 1, rs.MaxItems, rs.MaxItems + 1} {
				if n < 0 || n > 64 {
					continue
				}
				for _, pick := range []int{0, len(genericValues), len(items) - 1} {
					if pick >= len(items) {
						continue
					}
					arr := make([]any, n)
					for i := range arr {
						arr[i] = items[(pick+i)%len(items)]
					}
					out = append(out, arr)
				}
			}
		}
		if len(rs.Properties) > 0 && depth < 2 {
			// An object with each property at its first edge value, then each in turn varied.
			base := map[string]any{}
			for name, ps := range rs.Properties {
				if c := candidates(ps, depth+1); len(c) > len(genericValues) {
					base[name] = c[len(genericValues)]
				}
			}
			out = append(out, base)
			out = append(out, mutateObject(base, rs, depth+1)...)
		}
	}
	return out
}

// numbersAround writes numbers at r and just either side of it, in several notations.
func numbersAround(r *big.Rat) []any {
	tiny := new(big.Rat).SetFrac64(1, 1)
	tiny.SetString("1e-20")
	var out []any
	for _, x := range []*big.Rat{
		r,
		new(big.Rat).Add(r, tiny), new(big.Rat).Sub(r, tiny),
		new(big.Rat).Add(r, big.NewRat(1, 2)), new(big.Rat).Sub(r, big.NewRat(1, 2)),
		new(big.Rat).Add(r, big.NewRat(1, 1)), new(big.Rat).Sub(r, big.NewRat(1, 1)),
	} {
		s := strings.TrimRight(strings.TrimRight(x.FloatString(30), "0"), ".")
		out = append(out, json.Number(s))
		if x.IsInt() {
			out = append(out, json.Number(s+".0"), json.Number(s+"e0"), json.Number(s+"0e-1"))
		}
		f, _ := x.Float64()
		out = append(out, json.Number(fmt.Sprint(f)))
	}
	return out
}

// fuzzSchemas are the schemas FuzzFastVerdict checks against: a default-catalog model with
// anyOf and $ref, and models written here for numbers and for patterns and formats.
const fuzzModelsYAML = `models:
  - id: numbers
    name: Numbers
    description: A model with many kinds of numbers.
    category: text-to-image
    output_type: image
    status: ready
    input_schema:
      type: object
      additionalProperties: false
      properties:
        steps: {type: integer, minimum: 1, maximum: 50}
        scale: {type: number, exclusiveMinimum: 0, maximum: 20, multipleOf: 0.25}
        strength: {type: number, minimum: 0.01, exclusiveMaximum: 1}
        price: {type: number, multipleOf: 0.01, minimum: -1e3}
        size: {type: integer, multipleOf: 8, minimum: 256, maximum: 2048}
        ratio: {enum: [1, 1.5, "1:1", null]}
        weights: {type: array, minItems: 1, maxItems: 4, uniqueItems: true, items: {type: number, minimum: -1, maximum: 1}}
        pick: {oneOf: [{type: integer}, {type: number, minimum: 100}]}
        fixed: {const: {a: [1, 2.5]}}
      examples:
        - {steps: 28, scale: 3.5, strength: 0.5, price: 1.25, size: 1024, ratio: 1.5, weights: [0.5, -0.5], pick: 3, fixed: {a: [1, 2.5]}}
  - id: strings
    name: Strings
    description: A model with patterns and formats.
    category: text-to-image
    output_type: image
    status: ready
    input_schema:
      type: object
      required: [prompt]
      additionalProperties: {type: string, maxLength: 8}
      properties:
        prompt: {type: string, minLength: 1, maxLength: 12}
        code: {type: string, pattern: "^[A-Z]{2}-[0-9]{3}$"}
        slug: {type: string, pattern: "[a-z]"}
        url: {type: string, format: uri}
        email: {type: string, format: email}
        when: {type: string, format: date-time}
        tags: {type: array, items: {type: string, maxLength: 3}, maxItems: 3}
      patternProperties:
        "^x-": {type: integer}
      examples:
        - {prompt: "a fox", code: "AB-123", slug: "fox", url: "https://example.com/a.png", email: "a@example.com", when: "2024-01-02T03:04:05Z", tags: ["a", "é漢"], x-n: 3}
`

func fuzzModels(t testing.TB) []*catalog.Model {
	c, err := catalog.Parse("fuzz.yaml", []byte(fuzzModelsYAML))
	if err != nil {
		t.Fatalf("Parse:\n%v", err)
	}
	return []*catalog.Model{
		mustModel(t, loadDefaultCatalog(t), "fal-ai/flux/dev"),
		mustModel(t, c, "numbers"),
		mustModel(t, c, "strings"),
	}
}

// FuzzFastVerdict: for any JSON input and any of the fuzz schemas, the verdict says valid only
// when the library returns nil. Seeds: the schemas' examples and their mutations.
//
//	go test ./emulator/internal/schema -run '^$' -fuzz FuzzFastVerdict -fuzztime 1m
func FuzzFastVerdict(f *testing.F) {
	models := fuzzModels(f)
	schemas := make([]*schema.Schema, len(models))
	for i, m := range models {
		schemas[i] = compiled(f, m)
		for _, raw := range m.Examples {
			f.Add(uint8(i), []byte(raw))
			for j, mut := range mutations(decodeInput(f, string(raw)), schemas[i].Library()) {
				if j%7 == 0 { // a sample keeps the seed corpus quick to run
					b, err := json.Marshal(mut)
					if err == nil {
						f.Add(uint8(i), b)
					}
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		i := int(which) % len(models)
		m := models[i]
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var input any
		if dec.Decode(&input) != nil {
			return
		}
		fast, lib, reached := verdicts(schemas[i], input)
		if reached && fast && lib != nil {
			t.Fatalf("model %q: the verdict says valid, the library says %v\ninput: %s", m.ID, lib, data)
		}
	})
}

// BenchmarkValidate validates fal-ai/flux/dev's first example: "library" is Validate as it was
// (the checks before the schema, then the library), "fast" is Validate, "verdict" the verdict
// alone.
func BenchmarkValidate(b *testing.B) {
	m := mustModel(b, loadDefaultCatalog(b), "fal-ai/flux/dev")
	input := decodeInput(b, string(m.Examples[0]))
	s := compiled(b, m)
	b.Run("library", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if s.Refused(input) || s.Library().Validate(input) != nil {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if m.Validate(input) != nil {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("verdict", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !s.FastValid(input) {
				b.Fatal("not sure")
			}
		}
	})
}

// TestVerdictNumbers: reading numbers without big.Rat agrees with big.Rat, which the library
