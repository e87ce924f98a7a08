package schema

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalogtest"
)

// boundsSchema has integer, number, array and nested fields, with maxItems written directly,
// behind a $ref and nowhere, so the checks before schema validation meet each shape.
const boundsSchema = `{"type": "object",
	"properties": {
		"prompt": {"type": "string"},
		"num_images": {"type": "integer", "minimum": 1, "maximum": 4},
		"guidance": {"type": "number", "minimum": 0, "maximum": 20},
		"tags": {"type": "array", "maxItems": 4, "items": {"type": "number"}},
		"refs": {"$ref": "#/$defs/short"},
		"scores": {"type": "array", "items": {"type": "number", "maximum": 1}},
		"nested": {"type": "object", "properties": {
			"sizes": {"type": "array", "maxItems": 2, "items": {"type": "object", "properties": {"w": {"type": "integer"}}}}}}
	},
	"$defs": {"short": {"type": "array", "maxItems": 2, "items": {"type": "integer"}}}}`

func mustCompile(t testing.TB, src string) *Schema {
	t.Helper()
	s, err := Compile([]byte(src))
	if err != nil {
		t.Fatalf("Compile(%.80s): %v", src, err)
	}
	return s
}

// TestValidateHostileNumbers: numbers the schema library cannot hold, or holds only at great
// cost, are violations at their own pointer, never a panic; arrays past their maxItems are
// refused at the array without their items being validated.
func TestValidateHostileNumbers(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, boundsSchema)
	many := "[" + strings.TrimSuffix(strings.Repeat("1e999999,", 1000), ",") + "]"
	tests := []struct {
		name, input string
		want        []Violation
	}{
		{"huge exponent in an integer", `{"num_images": 1e1000001}`, []Violation{{"/num_images", numberMessage}}},
		{"huge negative in an integer", `{"num_images": -1e1000001}`, []Violation{{"/num_images", numberMessage}}},
		{"huge exponent in a number", `{"guidance": 1E+1000001}`, []Violation{{"/guidance", numberMessage}}},
		{"slow exponent", `{"guidance": 1e999999}`, []Violation{{"/guidance", numberMessage}}},
		{"tiny exponent", `{"guidance": 1e-1000001}`, []Violation{{"/guidance", numberMessage}}},
		{"zero with a huge exponent", `{"guidance": 0e99999999999999999999}`, []Violation{{"/guidance", numberMessage}}},
		{"too many digits", `{"guidance": 1` + strings.Repeat("0", 1000) + `}`, []Violation{{"/guidance", numberMessage}}},
		{"in an unknown property", `{"other": 1e1000001}`, []Violation{{"/other", numberMessage}}},
		{"nested in arrays and objects", `{"nested": {"sizes": [{"w": 1e1000001}]}}`, []Violation{{"/nested/sizes/0/w", numberMessage}}},
		{"many slow items past maxItems", `{"tags": ` + many + `}`, []Violation{{"/tags", "has 1000 items; at most 4 are allowed"}}},
		{"past maxItems behind a $ref", `{"refs": [1, 2, 3]}`, []Violation{{"/refs", "has 3 items; at most 2 are allowed"}}},
		{"within the bounds, the schema decides", `{"num_images": 1e400}`, []Violation{{"/num_images", "must be <= 4 but found 1e400"}}},
		{"an integer written with an exponent", `{"num_images": 2e0, "guidance": -0.5e1}`, []Violation{{"/guidance", "must be >= 0 but found -0.5e1"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := m.Validate(catalogtest.Input(t, tc.input))
			if err == nil {
				t.Fatal("Validate accepted the input")
			}
			if got := Violations(err); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("violations = %q; want %q", got, tc.want)
			}
		})
	}
	if err := m.Validate(catalogtest.Input(t, `{"prompt": "x", "num_images": 4e0, "guidance": 1e1, "tags": [1e400, 2]}`)); err != nil {
		t.Errorf("a valid input with exponents is refused: %v", err)
	}
}

// TestViolationsAreCapped: an input built to fail in many places reports MaxViolations of them.
func TestViolationsAreCapped(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, boundsSchema)
	items := strings.TrimSuffix(strings.Repeat("5,", 3*MaxViolations), ",")
	if got := len(Violations(m.Validate(catalogtest.Input(t, `{"scores": [`+items+`]}`)))); got != MaxViolations {
		t.Errorf("%d violations reported; want %d", got, MaxViolations)
	}
	huge := strings.TrimSuffix(strings.Repeat("1e1000001,", 3*MaxViolations), ",")
	if got := len(Violations(m.Validate(catalogtest.Input(t, `{"scores": [`+huge+`]}`)))); got != MaxViolations {
		t.Errorf("%d violations for huge numbers; want %d", got, MaxViolations)
	}
}

// TestValidateTooManyValues: an input past MaxInputValues is refused whole, at the root.
func TestValidateTooManyValues(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, boundsSchema)
	items := strings.TrimSuffix(strings.Repeat("0.5,", MaxInputValues), ",")
	want := []Violation{{"", tooManyValues}}
	if got := Violations(m.Validate(catalogtest.Input(t, `{"scores": [`+items+`]}`))); !reflect.DeepEqual(got, want) {
		t.Errorf("violations = %q; want %q", got, want)
	}
	items = strings.TrimSuffix(strings.Repeat("0.5,", MaxInputValues-2), ",")
	if err := m.Validate(catalogtest.Input(t, `{"scores": [`+items+`]}`)); err != nil {
		t.Errorf("an input of exactly %d values is refused: %v", MaxInputValues, err)
	}
}

func TestAcceptableNumber(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"0": true, "-1.5": true, "1e400": true, "1E-400": true, "1e+0400": true, "1e401": false,
		"1e-401": false, "1e0000000000000000000000001": true, "1e99999999999999999999": false,
		strings.Repeat("9", 400): true, strings.Repeat("9", 401): false,
	} {
		if got := acceptableNumber(s); got != want {
			t.Errorf("acceptableNumber(%.20q) = %v; want %v", s, got, want)
		}
	}
}

// FuzzValidate: any JSON input validates or yields between one and MaxViolations violations,
// each with a message; it never panics. Seeds: testdata/fuzz/FuzzValidate.
//
//	go test ./emulator/internal/schema -run '^$' -fuzz FuzzValidate -fuzztime 1m
func FuzzValidate(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("../../../testdata/fuzz/FuzzValidate", "*"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	m := mustCompile(f, boundsSchema)
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var input map[string]any
		if dec.Decode(&input) != nil {
			return
		}
		err := m.Validate(input)
		if err == nil {
			return
		}
		vs := Violations(err)
		if len(vs) == 0 || len(vs) > MaxViolations {
			t.Fatalf("%d violations", len(vs))
		}
		for _, v := range vs {
			if v.Message == "" {
				t.Fatalf("violation without a message at %q", v.Pointer)
			}
		}
	})
}

// BenchmarkValidateWorstCase validates an input of as many values as it may hold, numbers at the
// bound in an array with no maxItems, each failing its maximum: the most one input can cost.
func BenchmarkValidateWorstCase(b *testing.B) {
	m := mustCompile(b, boundsSchema)
	items := strings.TrimSuffix(strings.Repeat("9e400,", MaxInputValues-2), ",")
	input := catalogtest.Input(b, `{"scores": [`+items+`]}`)
	b.ReportAllocs()
	for b.Loop() {
		if m.Validate(input) == nil {
			b.Fatal("valid")
		}
	}
}
