package catalog

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func convertForTest(t *testing.T, src string) (*jsonDoc, Problems) {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(src), &n); err != nil {
		t.Fatalf("YAML %q: %v", src, err)
	}
	r := &Reporter{File: "x.yaml"}
	doc := yamlToJSON(r, &n)
	if doc != nil && !json.Valid(doc.Raw) {
		t.Errorf("yamlToJSON(%q) = %s, which is not JSON", src, doc.Raw)
	}
	return doc, r.Problems
}

func TestYAMLToJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
		json string
	}{
		{"key order kept", "b: 1\na: 2\nc: {z: 1, y: 2, x: 3}\n", `{"b":1,"a":2,"c":{"z":1,"y":2,"x":3}}`},
		{"nested order kept", "properties:\n  zeta: {type: string}\n  alpha: {type: integer}\n", `{"properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"}}}`},
		{"date stays text", "d: 2026-01-01\n", `{"d":"2026-01-01"}`},
		{"timestamp stays text", "t: 2026-01-01T10:00:00Z\n", `{"t":"2026-01-01T10:00:00Z"}`},
		{"timestamp with offset stays text", "t: 2026-01-01 10:00:00 +02:00\n", `{"t":"2026-01-01 10:00:00 +02:00"}`},
		{"quoted yes", `v: "yes"` + "\n", `{"v":"yes"}`},
		{"plain yes", "v: yes\n", `{"v":"yes"}`},
		{"quoted true", `v: "true"` + "\n", `{"v":"true"}`},
		{"on and off", "a: on\nb: off\nc: No\n", `{"a":"on","b":"off","c":"No"}`},
		{"booleans", "a: true\nb: false\nc: True\n", `{"a":true,"b":false,"c":true}`},
		{"quoted number", `v: "10"` + "\n", `{"v":"10"}`},
		{"null spellings", "a: ~\nb: null\nc:\n", `{"a":null,"b":null,"c":null}`},
		{"integers exact", "a: 2147483647\nb: 9007199254740993\nc: -9223372036854775808\nd: 0\n", `{"a":2147483647,"b":9007199254740993,"c":-9223372036854775808,"d":0}`},
		{"integer spellings", "a: 0x1F\nb: 0o17\nc: +5\n", `{"a":31,"b":15,"c":5}`},
		{"decimals exact", "a: 0.1\nb: 1.5\nc: 0.30000000000000004\nd: -2.25\n", `{"a":0.1,"b":1.5,"c":0.30000000000000004,"d":-2.25}`},
		{"exponents", "a: 1e3\nb: 2.5e-7\n", `{"a":1000,"b":2.5e-07}`},
		{"whole float", "a: 1.0\n", `{"a":1}`},
		{"strings escaped", "a: 'say \"hi\"'\nb: \"tab\\there\"\nc: é\n", `{"a":"say \"hi\"","b":"tab\there","c":"é"}`},
		{"html kept as written", "a: <b>&\n", `{"a":"<b>&"}`},
		{"control characters escaped", "a: \"q\\\"\\\\ \\t\\x01\"\n", `{"a":"q\"\\ \t\u0001"}`},
		{"block scalar", "a: |\n  one\n  two\n", `{"a":"one\ntwo\n"}`},
		{"sequences", "a: [1, two, [3]]\nb:\n  - x\n  - {y: 1}\n", `{"a":[1,"two",[3]],"b":["x",{"y":1}]}`},
		{"empty collections", "a: []\nb: {}\n", `{"a":[],"b":{}}`},
		{"aliases expanded", "a: &v {k: 1}\nb: *v\n", `{"a":{"k":1},"b":{"k":1}}`},
		{"custom tag is text", "a: !thing value\n", `{"a":"value"}`},
		{"quoted key that looks like a number", "'1': one\n", `{"1":"one"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc, problems := convertForTest(t, tc.yaml)
			if len(problems) > 0 {
				t.Fatalf("problems: %v", problems)
			}
			if string(doc.Raw) != tc.json {
				t.Errorf("yamlToJSON(%q) =\n%s\nwant\n%s", tc.yaml, doc.Raw, tc.json)
			}
		})
	}
}

func TestYAMLToJSONProblems(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"integer key", "a: 1\n2: two\n", []string{`x.yaml:2: keys must be strings; quote "2"`}},
		{"boolean key", "true: 1\n", []string{`x.yaml:1: keys must be strings; quote "true"`}},
		{"null key", "~: 1\n", []string{`x.yaml:1: keys must be strings; quote "~"`}},
		{"mapping key", "? {a: 1}\n: 2\n", []string{`x.yaml:1: keys must be strings; quote ""`}},
		{"merge key", "base: &b {x: 1}\nchild:\n  <<: *b\n", []string{`x.yaml:3: keys must be strings; quote "<<"`}},
		{"duplicate key", "a: 1\nb: 2\na: 3\n", []string{`x.yaml:3: duplicate key "a"`}},
		{"infinity", "a: .inf\n", []string{`x.yaml:1: number ".inf" has no JSON form`}},
		{"not a number", "a: .nan\n", []string{`x.yaml:1: number ".nan" has no JSON form`}},
		{"integer out of range", "a: 12345678901234567890\n", []string{`x.yaml:1: integer "12345678901234567890" is out of range`}},
		{"every problem", "1: a\nb: .inf\nb: 2\n", []string{
			`x.yaml:1: keys must be strings; quote "1"`,
			`x.yaml:2: number ".inf" has no JSON form`,
			`x.yaml:3: duplicate key "b"`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc, problems := convertForTest(t, tc.yaml)
			if doc != nil {
				t.Errorf("yamlToJSON returned %s along with problems", doc.Raw)
			}
			var got []string
			for _, p := range problems {
				got = append(got, p.String())
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// aliasBomb is YAML whose aliases double at each of levels levels: a few hundred bytes that
// expand to 2^(levels+1) values.
func aliasBomb(levels int) string {
	var b strings.Builder
	b.WriteString("l0: &l0 [x, x]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [*l%d, *l%d]\n", i, i, i-1, i-1)
	}
	return b.String()
}

// TestYAMLToJSONAliasBomb: the converter's own comment promises that a hostile file cannot
// make a schema explode. Depth alone does not bound it: 14 levels of doubling stay under the
// depth limit of 32 yet expand ~300 bytes into 2^15 values (20 levels take ~50 s and 2.4 GB in
// Parse; 25 would exhaust memory). Excessive expansion must be refused, as yaml.v3 itself does
// when decoding into Go values ("excessive aliasing").
func TestYAMLToJSONAliasBomb(t *testing.T) {
	t.Parallel()
	src := aliasBomb(14)
	doc, problems := convertForTest(t, src)
	if doc != nil && len(doc.Raw) > 100*len(src) {
		t.Errorf("%d bytes of YAML converted to %d bytes of JSON without a problem; want excessive aliasing refused", len(src), len(doc.Raw))
	}
	if doc == nil && len(problems) == 0 {
		t.Error("no JSON and no problem")
	}
}

func TestJSONDocLineOf(t *testing.T) {
	t.Parallel()
	doc, problems := convertForTest(t, "type: object\nproperties:\n  a/b:\n    type: string\n  list:\n    items:\n      - x\n      - y\n")
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	for _, tc := range []struct {
		ptr  string
		line int
	}{
		{"", 1},
		{"/type", 1},
		{"/properties", 2},
		{"/properties/a~1b", 3},
		{"/properties/a~1b/type", 4},
		{"/properties/a~1b/type/deeper", 4}, // falls back to the nearest known node
		{"/properties/list/items/1", 8},
		{"/properties/nope", 2},
		{"/nope/at/all", 1},
	} {
		if got := doc.LineOf(tc.ptr); got != tc.line {
			t.Errorf("LineOf(%q) = %d; want %d", tc.ptr, got, tc.line)
		}
	}
}

// TestSyntaxErrorLines: yaml.v3's parser errors count lines from zero; the problems name the
// line of the broken construct itself.
func TestSyntaxErrorLines(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		src  string
		line int
	}{
		{"products: []\nmodels: [unclosed\naccounts: []\n", 2},
		{"products: []\nkeys:\n  - {key: k\n", 3},
		{"products: []\nmodels:\n  - a\n - b\n", 4},
		{"products: []\nmodels:\n\t- a\n", 3},
		{"products: []\n  models: 1\n", 2},
	} {
		r := &Reporter{File: "s.yaml"}
		ParseDocument(r, []byte(c.src))
		if len(r.Problems) != 1 || r.Problems[0].Line != c.line {
			t.Errorf("%q: %v, want one problem at line %d", c.src, r.Problems, c.line)
		}
	}
}
