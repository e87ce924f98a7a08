package importer

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/schema"
)

func mustParse(t *testing.T, s string) *node {
	t.Helper()
	n, err := parseJSON([]byte(s))
	if err != nil {
		t.Fatalf("parse %s: %v", s, err)
	}
	return n
}

// An OpenAPI document in the style of hosted services: the body schema is a reference into
// components, which reference each other and themselves.
const componentsDoc = `{"openapi":"3.1.0","paths":{"/fal-ai/x":{"post":{"requestBody":{"content":{"application/json":{
  "schema":{"$ref":"#/components/schemas/Input"},
  "example":{"prompt":"a fox","size":"square"}}}}}}},
 "components":{"schemas":{
  "Input":{"type":"object","required":["prompt"],"properties":{
     "prompt":{"type":"string","examples":["a fox"]},
     "size":{"$ref":"#/components/schemas/Size"},
     "again":{"$ref":"#/components/schemas/Input/properties/size"},
     "loras":{"type":"array","items":{"$ref":"#/components/schemas/Lora"}},
     "meta":{"type":"object","examples":[{"$ref":"data, not a reference"}]}}},
  "Size":{"type":"string","enum":["square","wide"],"default":"square","$id":"https://x/size"},
  "Lora":{"type":"object","properties":{"scale":{"type":"number"},"next":{"$ref":"#/components/schemas/Lora"}}}}}}`

func TestExtractSchemaMakesReferencesLocal(t *testing.T) {
	t.Parallel()
	s, err := extractSchema(mustParse(t, componentsDoc))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","required":["prompt"],"properties":{` +
		`"prompt":{"type":"string","examples":["a fox"]},` +
		`"size":{"$ref":"#/$defs/Size"},` +
		`"again":{"$ref":"#/properties/size"},` +
		`"loras":{"type":"array","items":{"$ref":"#/$defs/Lora"}},` +
		`"meta":{"type":"object","examples":[{"$ref":"data, not a reference"}]}},` +
		`"$defs":{"Size":{"type":"string","enum":["square","wide"],"default":"square"},` +
		`"Lora":{"type":"object","properties":{"scale":{"type":"number"},"next":{"$ref":"#/$defs/Lora"}}}}}`
	if got := string(s.root.marshal()); got != want {
		t.Errorf("schema:\n got %s\nwant %s", got, want)
	}
	if len(s.bodyExamples) != 1 || string(s.bodyExamples[0].marshal()) != `{"prompt":"a fox","size":"square"}` {
		t.Errorf("body examples: %v", s.bodyExamples)
	}
	if _, err := schema.Compile(s.root.marshal()); err != nil {
		t.Errorf("the extracted schema does not compile: %v", err)
	}

	lm := &liveModel{schema: s}
	var warned []string
	if err := lm.settleExamples(mustParse(t, `{}`), func(f string, a ...any) { warned = append(warned, f) }); err != nil {
		t.Fatal(err)
	}
	if got := string(s.root.get("examples").marshal()); got != `[{"prompt":"a fox","size":"square"}]` || len(warned) != 0 {
		t.Errorf("examples %s, warnings %q: want the OpenAPI document's example", got, warned)
	}
}

func TestExtractSchemaRefusesWhatCannotBeCarried(t *testing.T) {
	t.Parallel()
	for doc, want := range map[string]string{
		`{}`: "no paths",
		`{"paths":{"/x":{"post":{"requestBody":{"content":{"text/plain":{"schema":{}}}}}}}}`:                                                                         "no JSON request body",
		`{"paths":{"/x":{"post":{"requestBody":{"content":{"application/json":{"schema":{"$ref":"#/nowhere/at/all"}}}}}}}}`:                                          "is not an object",
		`{"paths":{"/x":{"post":{"requestBody":{"content":{"application/json":{"schema":{"type":"object","properties":{"a":{"$ref":"#/components/missing"}}}}}}}}}}`: "does not resolve",
	} {
		if _, err := extractSchema(mustParse(t, doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want %q", doc, err, want)
		}
	}
}

func TestSettleExamplesMakesOneWhenNoneIsGiven(t *testing.T) {
	t.Parallel()
	root := mustParse(t, `{"properties":{"prompt":{"type":"string","minLength":40},"n":{"type":"integer","minimum":2},"url":{"type":"string","format":"uri"},"opt":{"type":"boolean"}},"required":["prompt","n","url"]}`)
	s := &inputSchema{root: root}
	lm := &liveModel{schema: s}
	var warned []string
	if err := lm.settleExamples(mustParse(t, `{}`), func(f string, a ...any) { warned = append(warned, f) }); err != nil {
		t.Fatal(err)
	}
	ex := lm.examples[0]
	if ex.get("n").text != "2" || ex.get("url").text != "https://example.com/input.png" || len(ex.get("prompt").text) < 40 || ex.get("opt") != nil {
		t.Errorf("made example %s", ex.marshal())
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "inferred") {
		t.Errorf("warnings %q", warned)
	}
}

// modelFor loads one model with a schema, for fitting prices against it.
func modelFor(t *testing.T, schema string) *catalog.Model {
	t.Helper()
	y := `products: [{id: p, name: P}]
models:
  - {id: m, name: M, description: D, category: text-to-image, product: p, mode: m, output_type: image, status: ready,
     input_schema: ` + schema + `}
`
	cat, err := catalog.Parse("t.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := cat.Model("m")
	return m
}

func obsOf(t *testing.T, inputs map[string]int64) []observation {
	t.Helper()
	var out []observation
	// The base input comes first: the one with the shortest text.
	keys := make([]string, 0, len(inputs))
	for k := range inputs {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && len(keys[j]) < len(keys[j-1]); j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	for _, k := range keys {
		n := mustParse(t, k)
		v, _ := n.value().(map[string]any)
		out = append(out, observation{label: k, input: n, value: v, credits: inputs[k]})
	}
	return out
}

func TestFitPriceWhenNoRuleFits(t *testing.T) {
	t.Parallel()
	m := modelFor(t, `{type: object, properties: {hd: {type: boolean}, n: {type: integer, minimum: 1, maximum: 4}}, examples: [{n: 1}]}`)
	// A price that a boolean doubles: the catalog format has no rule for booleans.
	obs := obsOf(t, map[string]int64{`{"n":1}`: 3, `{"n":2}`: 6, `{"n":1,"hd":true}`: 6, `{"n":4}`: 12})
	f := fitPrice(m, obs, []string{"hd", "n"})
	if len(f.bad) != 1 || obs[f.bad[0]].label != `{"n":1,"hd":true}` {
		t.Errorf("misses %v, want only the hd quote", f.bad)
	}
	if p := f.rule.pricing(); p.Base != 3 || len(p.MultiplyBy) != 1 {
		t.Errorf("closest rule %+v, want base 3 per n", p)
	}
}

func TestFitPriceFindsRoundNumbersBehindRounding(t *testing.T) {
	t.Parallel()
	m := modelFor(t, `{type: object, properties: {text: {type: string}}, examples: [{text: "hi"}]}`)
	// 0.004 credits a character with a floor of 2: most short texts cost the floor.
	obs := obsOf(t, map[string]int64{`{"text":"hi"}`: 2, `{"text":"` + filler(200) + `"}`: 2, `{"text":"` + filler(2000) + `"}`: 8, `{"text":"` + filler(3001) + `"}`: 13})
	f := fitPrice(m, obs, []string{"text"})
	p := f.rule.pricing()
	if len(f.bad) != 0 || len(p.PerUnit) != 1 || p.PerUnit[0].Credits != 0.004 || p.PerUnit[0].Measure != "length" || p.Minimum == nil || *p.Minimum != 2 {
		b, _ := json.Marshal(p)
		t.Errorf("rule %s (misses %v), want 0.004 a character with a minimum of 2", b, f.bad)
	}
}

func TestSimplest(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ lo, hi, near, want float64 }{
		{6.25, 6.5, 6.4, 6.5},
		{0.0015, 0.002, 0.0017, 0.002},
		{0, 0.9, 0.5, 0},
		{2.9, 3.1, 3, 3},
		{0.4286, 0.464, 0.45, 0.45},
	} {
		if got := simplest(c.lo, c.hi, c.near); got != c.want {
			t.Errorf("simplest(%v, %v] near %v = %v, want %v", c.lo, c.hi, c.near, got, c.want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for h, want := range map[string]time.Duration{
		"":      0,
		"7":     7 * time.Second,
		"0":     time.Millisecond,
		"1.5":   1500 * time.Millisecond,
		"99999": 24 * time.Hour,
		"1e300": 24 * time.Hour,
		"NaN":   time.Millisecond,
		"-3":    time.Millisecond,
		"soon":  time.Millisecond,
		now.Add(20 * time.Second).Format(http.TimeFormat): 20 * time.Second,
	} {
		if got := retryAfter(h, now); got != want {
			t.Errorf("Retry-After %q: %v, want %v", h, got, want)
		}
	}
}

// TestModelsSelect: --models globs are the one glob language, * within a segment, ** across.
func TestModelsSelect(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		pattern, id string
		want        bool
	}{
		{"**", "fal-ai/flux/dev", true},
		{"*", "fal-ai/flux/dev", false},
		{"fal-ai/flux**", "fal-ai/flux/dev", true},
		{"fal-ai/flux/*", "fal-ai/flux/pro/ultra", false},
		{"fal-ai/flux/**", "fal-ai/flux/pro/ultra", true},
		{"fal-ai/*/dev", "fal-ai/flux/dev", true},
		{"fal-ai/flux", "fal-ai/flux/dev", false},
		{"**schnell", "fal-ai/flux/dev", false},
	} {
		o := &Options{Models: []string{c.pattern}}
		if got := o.selected(c.id); got != c.want {
			t.Errorf("--models %q selects %q: %v, want %v", c.pattern, c.id, got, c.want)
		}
	}
}

func TestDiffJSONNamesPointers(t *testing.T) {
	t.Parallel()
	a := mustParse(t, `{"properties":{"a/b":{"maximum":4},"gone":{}},"required":["x"],"n":1.0}`)
	b := mustParse(t, `{"properties":{"a/b":{"maximum":8},"new~":true},"required":["x","y"],"n":1}`)
	var got []string
	for _, c := range diffJSON(a, b, "", 0) {
		got = append(got, c.What+" "+c.Pointer)
	}
	want := "changed /properties/a~1b/maximum|removed /properties/gone|added /properties/new~0|added /required/1"
	if strings.Join(got, "|") != want {
		t.Errorf("diff %q, want %q", strings.Join(got, "|"), want)
	}
}

func TestStrNodeQuotesWhatYAML11ReadsAsOtherTypes(t *testing.T) {
	t.Parallel()
	quoted := []string{"", "y", "Y", "n", "N", "yes", "Yes", "YES", "no", "NO", "on", "On", "ON", "off", "Off",
		"true", "False", "null", "NULL", "~", "<<", "=", "16:9", "190:20:30", "-1:30", "0755", "0o17", "0x1F",
		"0b101", "1_000", "+12", "12", "-3", ".5", "1.", "1e3", "6.02E+23", ".inf", "-.Inf", "+.INF", ".NaN",
		"2024-01-02", "2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10 -5", " lead", "trail ", "a\nb"}
	for _, s := range quoted {
		n := strNode(s)
		if n.Style != yaml.DoubleQuotedStyle {
			t.Errorf("%q is not quoted", s)
		}
		b, err := encodeYAML(n)
		var back string
		if err != nil || yaml.Unmarshal(b, &back) != nil || back != s {
			t.Errorf("%q reads back as %q (%v)", s, back, err)
		}
	}
	for _, s := range []string{"square_hd", "a fox", "text-to-image", "acme/pix/v1", "1024x1024", "720p", "4k", "yesterday", "online", "no-op", "v2"} {
		if n := strNode(s); n.Style != 0 {
			t.Errorf("%q is quoted though no reader misreads it", s)
		}
	}
	for in, want := range map[string]string{"1e5": "1.0e+5", "1E-3": "1.0e-3", "2.5e+3": "2.5e+3", "0.5": "0.5", "7": "7"} {
		if got := yaml11Float(in); got != want {
			t.Errorf("yaml11Float(%q) = %q, want %q", in, got, want)
		}
	}
}
