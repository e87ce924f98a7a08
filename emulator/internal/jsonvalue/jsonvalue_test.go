package jsonvalue_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/mediagen/mediagen-emulator/emulator/internal/jsonvalue"
)

// decode reads JSON the way the server does: numbers stay json.Number, exact.
func decode(t *testing.T, src string) any {
	t.Helper()
	var v any
	if err := jsonvalue.Decode([]byte(src), &v); err != nil {
		t.Fatalf("decode %s: %v", src, err)
	}
	return v
}

// TestDecode: numbers keep their spelling, white space may follow the value, anything else that
// follows it is refused.
func TestDecode(t *testing.T) {
	t.Parallel()
	var v map[string]any
	if err := jsonvalue.Decode([]byte(" {\"n\": 1.50, \"big\": 12345678901234567890}\n\t"), &v); err != nil {
		t.Fatal(err)
	}
	if v["n"] != json.Number("1.50") || v["big"] != json.Number("12345678901234567890") {
		t.Errorf("numbers decoded as %#v, %#v; want json.Number with their text", v["n"], v["big"])
	}
	for _, src := range []string{"", "{", `{} {}`, `{}x`, `{}]`, `1 2`, `"a" "b"`} {
		var v any
		if err := jsonvalue.Decode([]byte(src), &v); err == nil {
			t.Errorf("Decode(%q) = %v, want an error", src, v)
		}
	}
}

// TestType: every kind of value Decode makes has its JSON type's name.
func TestType(t *testing.T) {
	for doc, want := range map[string]string{`null`: "null", `true`: "boolean", `1.5`: "number", `"x"`: "string", `[]`: "array", `{}`: "object"} {
		if got := jsonvalue.Type(decode(t, doc)); got != want {
			t.Errorf("Type(%s) = %q, want %q", doc, got, want)
		}
	}
}

func TestEqual(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{`{"a": 1, "b": 2}`, `{"b": 2, "a": 1}`, true},
		{`{"a": 1, "b": 2}`, "{\n  \"a\":1,\n\t\"b\" : 2 }", true},
		{`{"a": {"x": 1, "y": [1, 2]}, "b": true}`, `{"b": true, "a": {"y": [1, 2], "x": 1}}`, true},
		{`1`, `1.0`, true},
		{`1`, `1e0`, true},
		{`1`, `10e-1`, true},
		{`1.0`, `1E0`, true},
		{`1`, `0.1e1`, true},
		{`100`, `1e2`, true},
		{`0.5`, `5e-1`, true},
		{`-2`, `-2.000`, true},
		{`0`, `-0`, true},
		{`0`, `0.0e5`, true},
		{`{"n": 1}`, `{"n": 1.0}`, true},
		{`[1, 2.50]`, `[1e0, 2.5]`, true},
		{`1`, `2`, false},
		{`1`, `1.0000000000000001`, false}, // exact, not float64 (where they are equal)
		{`0.1`, `0.10000000000000001`, false},
		{`9007199254740993`, `9007199254740992`, false}, // 2^53 + 1 and 2^53: one float64
		{`9007199254740993`, `9007199254740993.0`, true},
		{`12345678901234567890123`, `12345678901234567890124`, false},
		{`12345678901234567890123`, `1.2345678901234567890123e22`, true},
		{`{"seed": 18446744073709551615}`, `{"seed": 18446744073709551614}`, false},
		{`[1, [2, 3]]`, `[1, [2, 3]]`, true},
		{`[1, [2, 3]]`, `[1, [3, 2]]`, false},
		{`[[1], [2]]`, `[[2], [1]]`, false},
		{`[1, 2]`, `[1, 2, 2]`, false},
		{`[]`, `{}`, false},
		{`[]`, `null`, false},
		{`"1"`, `1`, false},
		{`"a"`, `"a"`, true},
		{`"é"`, `"\u00e9"`, true},
		{`"a\"b"`, `"a\u0022b"`, true},
		{`"ab"`, `"a b"`, false},
		{`true`, `true`, true},
		{`true`, `false`, false},
		{`true`, `1`, false},
		{`null`, `null`, true},
		{`null`, `0`, false},
		{`null`, `"null"`, false},
		{`{"a": null}`, `{}`, false},
		{`{"a": 1}`, `{"a": 1, "b": 1}`, false},
		{`{"a": "x"}`, `{"A": "x"}`, false},
		// Keys and strings that could collide if the canonical form were careless.
		{`{"a,b": 1}`, `{"a": 1, "b": 1}`, false},
		{`{"a": "1,\"b\":1"}`, `{"a": "1", "b": 1}`, false},
		{`["a,b"]`, `["a", "b"]`, false},
	} {
		a, b := decode(t, tc.a), decode(t, tc.b)
		if got := jsonvalue.Equal(a, b); got != tc.want {
			t.Errorf("Equal(%s, %s) = %v; want %v (canonical %s and %s)", tc.a, tc.b, got, tc.want,
				jsonvalue.Canonical(a), jsonvalue.Canonical(b))
		}
		if got := jsonvalue.Equal(b, a); got != tc.want {
			t.Errorf("Equal(%s, %s) = %v; want %v (not symmetric)", tc.b, tc.a, got, tc.want)
		}
	}
}

// TestCanonicalStable: the canonical form does not depend on map iteration order.
func TestCanonicalStable(t *testing.T) {
	t.Parallel()
	v := decode(t, `{"z": 1, "y": {"b": [1, {"d": 2, "c": 3}], "a": 0.5}, "x": "s", "w": null, "v": false}`)
	first := string(jsonvalue.Canonical(v))
	if want := `{"v":false,"w":null,"x":"s","y":{"a":5e-1,"b":[1e0,{"c":3e0,"d":2e0}]},"z":1e0}`; first != want {
		t.Errorf("Canonical = %s; want %s", first, want)
	}
	for range 50 {
		if again := string(jsonvalue.Canonical(v)); again != first {
			t.Fatalf("Canonical changed between calls: %s, then %s", first, again)
		}
	}
}

// TestEqualFloat64: values decoded without UseNumber (float64) compare by value too.
func TestEqualFloat64(t *testing.T) {
	t.Parallel()
	var a, b any
	if err := json.Unmarshal([]byte(`{"n": 1.5, "m": [2]}`), &a); err != nil {
		t.Fatal(err)
	}
	b = decode(t, `{"m": [2.0], "n": 15e-1}`)
	if !jsonvalue.Equal(a, b) {
		t.Errorf("float64 and json.Number decodings of one value differ: %s vs %s", jsonvalue.Canonical(a), jsonvalue.Canonical(b))
	}
}

// TestRead: Read makes what Decode makes, numbers exact, and refuses a value nested deeper
// than its limit, counted from the decoder's top.
func TestRead(t *testing.T) {
	t.Parallel()
	const doc = ` {"n": 1.50, "big": 12345678901234567890, "a": [true, null, "s", {}], "o": {"x": -0}} `
	got, err := jsonvalue.Read(jsontext.NewDecoder(strings.NewReader(doc)), 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := decode(t, doc); !reflect.DeepEqual(got, want) {
		t.Errorf("Read made %#v; Decode makes %#v", got, want)
	}
	for doc, limit := range map[string]int{`[[1]]`: 1, `{"a":{"b":{}}}`: 2, `[{"a":[]}]`: 2} {
		if _, err := jsonvalue.Read(jsontext.NewDecoder(strings.NewReader(doc)), limit); !errors.Is(err, jsonvalue.ErrTooDeep) {
			t.Errorf("Read(%s, %d): %v; want ErrTooDeep", doc, limit, err)
		}
		if _, err := jsonvalue.Read(jsontext.NewDecoder(strings.NewReader(doc)), limit+1); err != nil {
			t.Errorf("Read(%s, %d): %v; want it read", doc, limit+1, err)
		}
	}
	dec := jsontext.NewDecoder(strings.NewReader(`{"a":1,"a":2}`), jsontext.AllowDuplicateNames(true))
	if got, err := jsonvalue.Read(dec, 1); err != nil || got.(map[string]any)["a"] != json.Number("2") {
		t.Errorf("a name given twice, allowed: %v, %v; want the last value", got, err)
	}
	if _, err := jsonvalue.Read(jsontext.NewDecoder(strings.NewReader(`{"a":1,"a":2}`)), 1); !errors.Is(err, jsontext.ErrDuplicateName) {
		t.Errorf("a name given twice, refused: %v; want ErrDuplicateName", err)
	}
}
