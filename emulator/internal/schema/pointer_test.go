package schema

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// rfc6901Doc is the example document of RFC 6901, section 5.
const rfc6901Doc = `{
	"foo": ["bar", "baz"],
	"": 0,
	"a/b": 1,
	"c%d": 2,
	"e^f": 3,
	"g|h": 4,
	"i\\j": 5,
	"k\"l": 6,
	" ": 7,
	"m~n": 8
}`

func decodeDoc(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestResolveRFC6901: every pointer of the RFC's section 5 finds the value the RFC gives.
func TestResolveRFC6901(t *testing.T) {
	t.Parallel()
	doc := decodeDoc(t, rfc6901Doc)
	for ptr, want := range map[string]any{
		"":       doc,
		"/foo":   []any{"bar", "baz"},
		"/foo/0": "bar",
		"/":      0.0,
		"/a~1b":  1.0,
		"/c%d":   2.0,
		"/e^f":   3.0,
		"/g|h":   4.0,
		"/i\\j":  5.0,
		"/k\"l":  6.0,
		"/ ":     7.0,
		"/m~0n":  8.0,
	} {
		got, err := Lookup(doc, ptr)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("Lookup(%q) = %v, %v; want %v", ptr, got, err, want)
		}
	}
}

// TestResolveNamesNothing: an index with a leading zero, a sign or past the end, "-", a member
// that is absent and a step into a scalar name nothing; a member present with null is found.
func TestResolveNamesNothing(t *testing.T) {
	t.Parallel()
	doc := decodeDoc(t, `{"list": [10, 11, 12], "null": null, "s": "text", "01": "key", "~1": "tilde"}`)
	for _, c := range []struct {
		ptr   string
		want  any
		found bool
	}{
		{"/list/0", 10.0, true},
		{"/list/2", 12.0, true},
		{"/list/3", nil, false},
		{"/list/01", nil, false},
		{"/list/00", nil, false},
		{"/list/+1", nil, false},
		{"/list/-0", nil, false},
		{"/list/-", nil, false},
		{"/list/", nil, false},
		{"/list/1e0", nil, false},
		{"/list/99999999999999999999", nil, false},
		{"/null", nil, true},
		{"/absent", nil, false},
		{"/null/x", nil, false},
		{"/s/0", nil, false},
		{"/01", "key", true},
		{"/~01", "tilde", true},
	} {
		tokens, err := ParsePointer(c.ptr)
		if err != nil {
			t.Fatalf("ParsePointer(%q): %v", c.ptr, err)
		}
		got, found := Resolve(doc, tokens)
		if found != c.found || !reflect.DeepEqual(got, c.want) {
			t.Errorf("Resolve(%q) = %v, %v; want %v, %v", c.ptr, got, found, c.want, c.found)
		}
		if _, err := Lookup(doc, c.ptr); (err == nil) != c.found {
			t.Errorf("Lookup(%q): error %v, want one only when nothing is found", c.ptr, err)
		}
	}
}

// TestParsePointer: tokens are unescaped "~1" before "~0"; a pointer that does not start with
// "/" or has a "~" not followed by 0 or 1 is refused.
func TestParsePointer(t *testing.T) {
	t.Parallel()
	for ptr, want := range map[string][]string{
		"":          nil,
		"/":         {""},
		"//":        {"", ""},
		"/a~1b/m~0": {"a/b", "m~"},
		"/~01":      {"~1"},
		"/~10":      {"/0"},
	} {
		got, err := ParsePointer(ptr)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ParsePointer(%q) = %q, %v; want %q", ptr, got, err, want)
		}
	}
	for _, ptr := range []string{"a", "#/a", "/a~", "/a~2", "/~/b"} {
		if got, err := ParsePointer(ptr); err == nil {
			t.Errorf("ParsePointer(%q) = %q, want an error", ptr, got)
		}
		if _, err := Lookup(map[string]any{}, ptr); err == nil || !strings.Contains(err.Error(), "is not a JSON Pointer") {
			t.Errorf("Lookup(%q): error %v, want one that says it is not a JSON Pointer", ptr, err)
		}
	}
}

// TestLookupNamesWhereItStopped: the error names the shortest prefix that names nothing.
func TestLookupNamesWhereItStopped(t *testing.T) {
	t.Parallel()
	doc := decodeDoc(t, `{"a": {"b~c": [1]}}`)
	_, err := Lookup(doc, "/a/b~0c/4/d")
	if err == nil || err.Error() != "/a/b~0c/4/d: nothing at /a/b~0c/4" {
		t.Errorf("Lookup: error %v", err)
	}
}
