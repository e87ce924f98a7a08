package pricing_test

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalogtest"
	"github.com/mediagen/mediagen-emulator/emulator/internal/pricing"
)

// pricingCatalog holds one hand-made model per pricing rule, so each case below exercises the
// formula of the README in isolation:
//
//	credits = ceil(max(minimum, (base + Σ per_unit + Σ tables) × Π multipliers × Π multiply_by))
const pricingCatalog = `
products:
  - {id: p, name: P, description: Pricing test models.}
models:
  - id: t/base
    name: Base
    description: Only a base price.
    category: text-to-image
    product: p
    mode: base
    output_type: image
    status: ready
    input_schema:
      type: object
      properties:
        prompt: {type: string}
      examples: [{prompt: x}]
    pricing: {base: 7}

  - id: t/free
    name: Free
    description: Nothing to pay for, so the default minimum of 1 applies.
    category: text-to-image
    product: p
    mode: free
    output_type: image
    status: ready
    input_schema:
      type: object
      properties:
        prompt: {type: string}
      examples: [{prompt: x}]
    pricing: {}

  - id: t/zero
    name: Zero
    description: A minimum of 0 lets a quote cost nothing.
    category: text-to-image
    product: p
    mode: zero
    output_type: image
    status: ready
    input_schema:
      type: object
      properties:
        prompt: {type: string}
      examples: [{prompt: x}]
    pricing: {minimum: 0}

  - id: t/per-unit
    name: Per unit
    description: A base plus credits per second, with a schema default.
    category: text-to-video
    product: p
    mode: per-unit
    output_type: video
    status: ready
    input_schema:
      type: object
      properties:
        duration: {type: number, minimum: 0, maximum: 60, default: 5}
        steps: {type: integer, minimum: 0, maximum: 100}
      examples: [{duration: 3}]
    pricing:
      base: 2
      per_unit:
        - {field: duration, credits: 8}
        - {field: steps, credits: 0.5}

  - id: t/length
    name: Length
    description: Credits per character of a string and per item of an array.
    category: text-to-speech
    product: p
    mode: length
    output_type: audio
    status: ready
    input_schema:
      type: object
      properties:
        text: {type: string, default: "abcd"}
        tags: {type: array, items: {type: string}}
      examples: [{text: hello}]
    pricing:
      per_unit:
        - {field: text, measure: length, credits: 1}
        - {field: tags, measure: length, credits: 2}
      minimum: 0

  - id: t/tenth
    name: Tenth
    description: A tenth of a credit per character, to check rounding up without binary noise.
    category: text-to-speech
    product: p
    mode: tenth
    output_type: audio
    status: ready
    input_schema:
      type: object
      properties:
        text: {type: string}
      examples: [{text: hello}]
    pricing:
      per_unit: [{field: text, measure: length, credits: 0.1}]
      minimum: 0

  - id: t/numeric-strings
    name: Numeric strings
    description: Durations spelled as strings, with and without a unit.
    category: text-to-video
    product: p
    mode: numeric-strings
    output_type: video
    status: ready
    input_schema:
      type: object
      properties:
        duration: {type: string, enum: ["5", "10"], default: "5"}
        length: {type: string, enum: [4s, 6s, 8s]}
        count: {type: string, enum: ["1", "2", "3"]}
      examples: [{duration: "5"}]
    pricing:
      per_unit:
        - {field: duration, credits: 10}
        - {field: length, credits: 100}
      multiply_by: [count]
      minimum: 0

  - id: t/tables
    name: Tables
    description: Credits added by an enum's value, with and without a default.
    category: text-to-video
    product: p
    mode: tables
    output_type: video
    status: ready
    input_schema:
      type: object
      properties:
        resolution: {type: string, enum: [480p, 720p, 1080p], default: 720p}
        style: {type: string, enum: [plain, fancy]}
      examples: [{resolution: 480p}]
    pricing:
      base: 1
      tables:
        - {field: resolution, values: {480p: 0, 720p: 10, 1080p: 30}}
        - {field: style, values: {plain: 0, fancy: 5}}

  - id: t/multipliers
    name: Multipliers
    description: The subtotal multiplied by enum values, with and without a default.
    category: text-to-video
    product: p
    mode: multipliers
    output_type: video
    status: ready
    input_schema:
      type: object
      properties:
        quality: {type: string, enum: [draft, standard, hd], default: standard}
        speed: {type: string, enum: [slow, fast]}
      examples: [{quality: hd}]
    pricing:
      base: 10
      multipliers:
        - {field: quality, values: {draft: 0.5, standard: 1, hd: 2.25}}
        - {field: speed, values: {slow: 1, fast: 3}}

  - id: t/multiply-by
    name: Multiply by
    description: One price per image, and a second multiplier without a default.
    category: text-to-image
    product: p
    mode: multiply-by
    output_type: image
    status: ready
    input_schema:
      type: object
      properties:
        num_images: {type: integer, minimum: 1, maximum: 4, default: 2}
        scale: {type: number, minimum: 1, maximum: 4}
      examples: [{num_images: 1}]
    pricing:
      base: 3
      multiply_by: [num_images, scale]

  - id: t/minimum
    name: Minimum
    description: A minimum applied after the multipliers.
    category: text-to-image
    product: p
    mode: minimum
    output_type: image
    status: ready
    input_schema:
      type: object
      properties:
        num_images: {type: integer, minimum: 1, maximum: 4, default: 1}
      examples: [{num_images: 1}]
    pricing:
      base: 2
      multiply_by: [num_images]
      minimum: 5

  - id: t/fraction
    name: Fraction
    description: Fractional credits that must round up.
    category: text-to-image
    product: p
    mode: fraction
    output_type: image
    status: ready
    input_schema:
      type: object
      properties:
        num_images: {type: integer, minimum: 1, maximum: 4, default: 1}
        quality: {type: string, enum: [standard, hd], default: standard}
      examples: [{num_images: 1}]
    pricing:
      base: 1.01
      multipliers: [{field: quality, values: {standard: 1, hd: 1.5}}]
      multiply_by: [num_images]

  - id: t/numeric-enum
    name: Numeric enum
    description: A table and a multiplier keyed by an integer enum.
    category: text-to-video
    product: p
    mode: numeric-enum
    output_type: video
    status: ready
    input_schema:
      type: object
      properties:
        duration: {type: integer, enum: [5, 10], default: 5}
      examples: [{duration: 5}]
    pricing:
      tables: [{field: duration, values: {5: 20, 10: 40}}]
      multipliers: [{field: duration, values: {5: 1, 10: 2}}]
`

func parsePricingCatalog(t testing.TB) *catalog.Catalog {
	t.Helper()
	c, err := catalog.Parse("pricing.yaml", []byte(pricingCatalog))
	if err != nil {
		t.Fatalf("Parse(pricing.yaml):\n%v", err)
	}
	return c
}

func TestCredits(t *testing.T) {
	t.Parallel()
	c := parsePricingCatalog(t)
	for _, tc := range []struct {
		name  string
		model string
		input string
		want  int64
	}{
		{"base only", "t/base", `{"prompt": "x"}`, 7},
		{"base only ignores other fields", "t/base", `{}`, 7},
		{"nothing priced costs the default minimum", "t/free", `{}`, 1},
		{"minimum 0 allows a free quote", "t/zero", `{}`, 0},

		{"per_unit value", "t/per-unit", `{"duration": 3}`, 2 + 8*3},
		{"per_unit fractional value", "t/per-unit", `{"duration": 2.5}`, 2 + 20},
		{"per_unit value zero", "t/per-unit", `{"duration": 0}`, 2},
		{"per_unit absent field uses schema default", "t/per-unit", `{}`, 2 + 8*5},
		{"per_unit absent field without default adds 0", "t/per-unit", `{"duration": 1}`, 2 + 8},
		{"per_unit second rule", "t/per-unit", `{"duration": 1, "steps": 10}`, 2 + 8 + 5},
		{"per_unit number spelling", "t/per-unit", `{"duration": 3e0, "steps": 1.0e1}`, 2 + 24 + 5},

		{"length of ASCII string", "t/length", `{"text": "hello"}`, 5},
		{"length counts characters not bytes", "t/length", `{"text": "日本語のテキスト"}`, 8},
		{"length of accented text", "t/length", `{"text": "héllo wörld"}`, 11},
		{"length of emoji (one code point, four bytes)", "t/length", `{"text": "🦊🦊"}`, 2},
		{"length of escaped non-ASCII", "t/length", `{"text": "\u00e9\u00e9\u00e9"}`, 3},
		{"length of empty string", "t/length", `{"text": ""}`, 0},
		{"length absent string uses schema default", "t/length", `{}`, 4},
		{"length of array", "t/length", `{"text": "", "tags": ["a", "b", "c"]}`, 6},
		{"length of array counts items not characters", "t/length", `{"text": "", "tags": ["日本語", "longer text"]}`, 4},
		{"length of empty array", "t/length", `{"text": "ab", "tags": []}`, 2},

		{"numeric string", "t/numeric-strings", `{"duration": "10"}`, 100},
		{"numeric string default", "t/numeric-strings", `{}`, 50},
		{"numeric string with unit", "t/numeric-strings", `{"duration": "5", "length": "6s"}`, 50 + 600},
		{"numeric string in multiply_by", "t/numeric-strings", `{"duration": "10", "count": "3"}`, 300},

		{"table value", "t/tables", `{"resolution": "1080p"}`, 1 + 30},
		{"table zero value", "t/tables", `{"resolution": "480p"}`, 1},
		{"table absent field uses schema default", "t/tables", `{}`, 1 + 10},
		{"table absent field without default adds 0", "t/tables", `{"resolution": "480p"}`, 1},
		{"two tables", "t/tables", `{"resolution": "720p", "style": "fancy"}`, 1 + 10 + 5},

		{"multiplier", "t/multipliers", `{"quality": "hd"}`, 23}, // 10 × 2.25 = 22.5
		{"multiplier below one", "t/multipliers", `{"quality": "draft"}`, 5},
		{"multiplier absent field uses schema default", "t/multipliers", `{}`, 10},
		{"multiplier absent field without default is 1", "t/multipliers", `{"quality": "standard"}`, 10},
		{"two multipliers", "t/multipliers", `{"quality": "hd", "speed": "fast"}`, 68}, // 10 × 2.25 × 3 = 67.5

		{"multiply_by", "t/multiply-by", `{"num_images": 4}`, 12},
		{"multiply_by absent field uses schema default", "t/multiply-by", `{}`, 6},
		{"multiply_by absent field without default is 1", "t/multiply-by", `{"num_images": 1}`, 3},
		{"multiply_by two fields", "t/multiply-by", `{"num_images": 3, "scale": 1.5}`, 14}, // 3 × 3 × 1.5 = 13.5

		{"minimum wins", "t/minimum", `{"num_images": 2}`, 5},
		{"minimum applies after multiply_by", "t/minimum", `{"num_images": 3}`, 6},

		{"rounds up a hundredth", "t/fraction", `{}`, 2},                          // 1.01
		{"rounds up after multipliers", "t/fraction", `{"quality": "hd"}`, 2},     // 1.515
		{"rounds up after multiply_by", "t/fraction", `{"num_images": 4}`, 5},     // 4.04
		{"rounds up both", "t/fraction", `{"num_images": 4, "quality": "hd"}`, 7}, // 6.06
		{"0.1 × 30 characters is 3, not 4", "t/tenth", `{"text": "` + strings.Repeat("a", 30) + `"}`, 3},
		{"0.1 × 30 non-ASCII characters is 3", "t/tenth", `{"text": "` + strings.Repeat("é", 30) + `"}`, 3},
		{"0.1 × 31 characters is 4", "t/tenth", `{"text": "` + strings.Repeat("a", 31) + `"}`, 4},
		{"0.1 × 10 characters is 1", "t/tenth", `{"text": "` + strings.Repeat("a", 10) + `"}`, 1},
		{"0.1 × 70 characters is 7", "t/tenth", `{"text": "` + strings.Repeat("a", 70) + `"}`, 7},
		{"0.1 × 1 character is 1", "t/tenth", `{"text": "a"}`, 1},

		{"numeric enum table and multiplier", "t/numeric-enum", `{"duration": 10}`, 80},
		{"numeric enum default", "t/numeric-enum", `{}`, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, ok := c.Model(tc.model)
			if !ok {
				t.Fatalf("no model %q", tc.model)
			}
			input := catalogtest.Input(t, tc.input)
			if err := m.Validate(input); err != nil {
				t.Fatalf("the test input %s is not valid for %s: %v", tc.input, tc.model, err)
			}
			if got := pricing.Credits(m, input); got != tc.want {
				t.Errorf("Credits(%s, %s) = %d; want %d", tc.model, tc.input, got, tc.want)
			}
		})
	}
}

// TestCreditsNumberSpelling: the contract compares inputs as JSON values (a quote for
// {"duration": 10} pays for a generation with {"duration": 10.0}), and promises the same credits
// for the same input. So every spelling of one number must price alike, wherever the number is
// used: per_unit, multiply_by, and the tables and multipliers keyed by a numeric enum.
func TestCreditsNumberSpelling(t *testing.T) {
	t.Parallel()
	c := parsePricingCatalog(t)
	for _, tc := range []struct {
		model     string
		spellings []string
	}{
		{"t/per-unit", []string{`{"duration": 3}`, `{"duration": 3.0}`, `{"duration": 3e0}`, `{"duration": 30e-1}`, `{"duration": 0.3e1}`}},
		{"t/multiply-by", []string{`{"num_images": 2}`, `{"num_images": 2.0}`, `{"num_images": 2e0}`, `{"num_images": 20e-1}`}},
		// A numeric enum used as a table or multiplier key: the input 10.0 is the enum value 10
		// (the schema accepts it), so it must find the same table entry.
		{"t/numeric-enum", []string{`{"duration": 10}`, `{"duration": 10.0}`, `{"duration": 1e1}`, `{"duration": 100e-1}`}},
	} {
		t.Run(tc.model, func(t *testing.T) {
			t.Parallel()
			m, _ := c.Model(tc.model)
			want := int64(-1)
			for _, src := range tc.spellings {
				input := catalogtest.Input(t, src)
				if err := m.Validate(input); err != nil {
					t.Fatalf("the test input %s is not valid: %v", src, err)
				}
				got := pricing.Credits(m, input)
				if want < 0 {
					want = got
					continue
				}
				if got != want {
					t.Errorf("a number's spelling changed the price: Credits(%s, %s) = %d; want %d as for %s",
						tc.model, src, got, want, tc.spellings[0])
				}
			}
		})
	}
}

// TestCreditsFloat64Input: an input decoded without UseNumber (float64 numbers) prices the same
// as one decoded with it, so callers outside the HTTP layer cannot get another price.
func TestCreditsFloat64Input(t *testing.T) {
	t.Parallel()
	c := parsePricingCatalog(t)
	for _, tc := range []struct{ model, input string }{
		{"t/per-unit", `{"duration": 2.5, "steps": 7}`},
		{"t/multiply-by", `{"num_images": 3, "scale": 1.5}`},
		{"t/length", `{"text": "日本語", "tags": ["a"]}`},
		{"t/tables", `{"resolution": "1080p", "style": "fancy"}`},
	} {
		m, _ := c.Model(tc.model)
		var plain map[string]any
		if err := json.Unmarshal([]byte(tc.input), &plain); err != nil {
			t.Fatal(err)
		}
		if got, want := pricing.Credits(m, plain), pricing.Credits(m, catalogtest.Input(t, tc.input)); got != want {
			t.Errorf("Credits(%s, %s) with float64 numbers = %d; with json.Number = %d", tc.model, tc.input, got, want)
		}
	}
}

// TestCreditsDoesNotModifyInput: pricing reads the input and fills defaults without writing them
// back, so the job keeps the input as the client sent it.
func TestCreditsDoesNotModifyInput(t *testing.T) {
	t.Parallel()
	c := parsePricingCatalog(t)
	for _, m := range c.Models {
		for _, ex := range m.Examples {
			input := catalogtest.Input(t, ex)
			pricing.Credits(m, input)
			after, err := json.Marshal(input)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(after, ex) {
				t.Errorf("%s: Credits changed the input %s into %s", m.ID, ex, after)
			}
		}
	}
}

// TestCreditsRepeatable: the same model and input give the same credits on every call, from
// many goroutines at once (Credits shares the model, which must stay read-only).
func TestCreditsRepeatable(t *testing.T) {
	t.Parallel()
	c := parsePricingCatalog(t)
	m, _ := c.Model("t/multipliers")
	src := `{"quality": "hd", "speed": "fast"}`
	want := pricing.Credits(m, catalogtest.Input(t, src))
	done := make(chan int64)
	for range 16 {
		go func() {
			var last int64
			for range 200 {
				last = pricing.Credits(m, catalogtest.Input(t, src))
				if last != want {
					break
				}
			}
			done <- last
		}()
	}
	for range 16 {
		if got := <-done; got != want {
			t.Errorf("Credits = %d in a concurrent call; want %d", got, want)
		}
	}
}

// unboundedCatalog prices a number the schema does not bound.
const unboundedCatalog = `
products:
  - {id: p, name: P, description: Pricing test models.}
models:
  - id: t/unbounded
    name: Unbounded
    description: A priced number without a maximum.
    category: text-to-video
    product: p
    mode: unbounded
    output_type: video
    status: ready
    input_schema:
      type: object
      properties:
        duration: {type: number, minimum: 0}
      examples: [{duration: 1}]
    pricing:
      per_unit: [{field: duration, credits: 8}]
`

// TestCreditsHugeValues: a catalog may leave a priced number unbounded (the loader allows it).
// A huge valid input must then cost pricing.MaxCredits: never a negative price (int64
// overflow) nor the minimum (a number beyond float64's range must still count).
func TestCreditsHugeValues(t *testing.T) {
	t.Parallel()
	c, err := catalog.Parse("unbounded.yaml", []byte(unboundedCatalog))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := c.Model("t/unbounded")
	if got := pricing.Credits(m, catalogtest.Input(t, `{"duration": 1e9}`)); got != 8e9 {
		t.Fatalf("Credits(duration 1e9) = %d; want 8e9", got)
	}
	floor := int64(pricing.MaxCredits)
	for _, src := range []string{`{"duration": 1.5e18}`, `{"duration": 1e30}`, `{"duration": 1e400}`} {
		input := catalogtest.Input(t, src)
		if err := m.Validate(input); err != nil {
			t.Fatalf("%s is not valid: %v", src, err)
		}
		if got := pricing.Credits(m, input); got != floor {
			t.Errorf("Credits(%s) = %d; want the cap %d", src, got, floor)
		}
	}
}

// BenchmarkCredits prices the first example of one default-catalog model that uses per_unit on
// a numeric string and a multiplier table.
func BenchmarkCredits(b *testing.B) {
	data, err := os.ReadFile("../../../fixtures/catalog/default.yaml")
	if err != nil {
		b.Fatal(err)
	}
	c, err := catalog.Parse("default.yaml", data)
	if err != nil {
		b.Fatal(err)
	}
	const id = "fal-ai/kling-video/v2.1/master/text-to-video"
	m, ok := c.Model(id)
	if !ok || len(m.Examples) == 0 {
		b.Fatalf("no model %s with examples in the default catalog", id)
	}
	input := catalogtest.Input(b, m.Examples[1])
	b.ReportAllocs()
	for b.Loop() {
		pricing.Credits(m, input)
	}
}
