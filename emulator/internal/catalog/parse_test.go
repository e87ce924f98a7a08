package catalog

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// catalogsDir holds the repository's test catalogs, shared with the emulator's and the CLI's
// tests.
const catalogsDir = "../../../testdata/catalogs"

func readCatalogFile(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(catalogsDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func parseSmall(t testing.TB) *Catalog {
	t.Helper()
	c, err := Parse("small.yaml", readCatalogFile(t, "small.yaml"))
	if err != nil {
		t.Fatalf("Parse(small.yaml):\n%v", err)
	}
	return c
}

// problemLines returns the FILE:LINE: message lines of a Parse error, failing when the error is
// not Problems.
func problemLinesOf(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		t.Fatal("Parse succeeded; want problems")
	}
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("Parse error is %T (%v); want Problems", err, err)
	}
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	if got := err.Error(); got != strings.Join(lines, "\n") {
		t.Errorf("Problems.Error() = %q; want the lines joined by newlines", got)
	}
	return lines
}

func TestParseSmall(t *testing.T) {
	t.Parallel()
	c := parseSmall(t)

	var ids []string
	for _, m := range c.Models {
		ids = append(ids, m.ID)
	}
	wantIDs := []string{"test/pixel", "test/pixel/edit", "test/reel", "test/voice", "test/legacy"}
	if !reflect.DeepEqual(ids, wantIDs) {
		t.Errorf("model ids = %q; want %q (file order)", ids, wantIDs)
	}
	var products []string
	for _, p := range c.Products {
		products = append(products, p.ID)
	}
	if want := []string{"pixel", "reel", "voice"}; !reflect.DeepEqual(products, want) {
		t.Errorf("products = %q; want %q", products, want)
	}
	if p, ok := c.Product("reel"); !ok || p.Name != "Reel" || p.Description != "A test video family." {
		t.Errorf("Product(reel) = %+v, %v", p, ok)
	}
	if _, ok := c.Product("nope"); ok {
		t.Error("Product(nope) found")
	}

	wantAccounts := []Account{{"acct_a", 1000}, {"acct_b", 1000}, {"acct_poor", 3}, {"acct_read", 0}}
	if !reflect.DeepEqual(c.Accounts, wantAccounts) {
		t.Errorf("accounts = %+v; want %+v", c.Accounts, wantAccounts)
	}
	for _, tc := range []struct {
		token    string
		account  string
		read     bool
		generate bool
	}{
		{"key_a", "acct_a", true, true},
		{"key_read", "acct_read", true, false},
		{"key_gen", "acct_a", false, true},
	} {
		k, ok := c.Key(tc.token)
		if !ok {
			t.Errorf("Key(%q) not found", tc.token)
			continue
		}
		if k.Account != tc.account || k.Can(PermModelsRead) != tc.read || k.Can(PermGenerate) != tc.generate {
			t.Errorf("Key(%q) = %+v; want account %s, models:read %v, generate %v", tc.token, k, tc.account, tc.read, tc.generate)
		}
	}
	if _, ok := c.Key("mg_test_all"); ok {
		t.Error("a catalog with its own keys still has the default key mg_test_all")
	}

	pixel, ok := c.Model("test/pixel")
	if !ok {
		t.Fatal("Model(test/pixel) not found")
	}
	if !pixel.Ready() || pixel.Category != "text-to-image" || pixel.Product != "pixel" || pixel.Mode != "text-to-image" || pixel.OutputType != OutputImage {
		t.Errorf("test/pixel = %+v", pixel)
	}
	// image_size is a $ref to $defs: its enum, type and default are still seen by pricing.
	size := pixel.Properties["image_size"]
	if size.Type != "string" || size.Default != "square" || len(size.Enum) != 3 {
		t.Errorf("test/pixel image_size property = %+v; want the $defs/size string enum with default square", size)
	}
	if got := pixel.Properties["num_images"]; got.Type != "integer" || got.Default != json.Number("1") {
		t.Errorf("num_images property = %+v", got)
	}
	if len(pixel.Examples) != 1 || string(pixel.Examples[0]) != `{"image_size":"landscape_16_9","num_images":2,"prompt":"a red fox in snow"}` {
		t.Errorf("test/pixel examples = %s", pixel.Examples)
	}
	if err := pixel.Validate(map[string]any{"prompt": "x", "image_size": "huge"}); err == nil {
		t.Error("test/pixel schema accepts image_size huge")
	}
	if want := (Timing{Queue: 100 * time.Millisecond, Run: 900 * time.Millisecond, QueueTimeout: time.Minute}); pixel.Timing != want {
		t.Errorf("test/pixel timing = %+v; want %+v", pixel.Timing, want)
	}
	if pixel.Output.Format != "png" || pixel.Output.Count != 1 || pixel.Output.Width != 1024 || pixel.Output.Height != 1024 {
		t.Errorf("test/pixel output defaults = %+v", pixel.Output)
	}
	if w, h, ok := pixel.Output.SizeNamed("landscape_16_9"); !ok || w != 1344 || h != 768 {
		t.Errorf("SizeNamed(landscape_16_9) = %d, %d, %v", w, h, ok)
	}
	if _, _, ok := pixel.Output.SizeNamed("huge"); ok {
		t.Error("SizeNamed(huge) found")
	}
	if min := pixel.Pricing.Minimum; min == nil || *min != 1 || len(pixel.Pricing.Tables) != 1 || pixel.Pricing.Tables[0].Values["landscape_16_9"] != 3 {
		t.Errorf("test/pixel pricing = %+v", pixel.Pricing)
	}

	reel, _ := c.Model("test/reel")
	if reel.Output.Format != "mp4" || reel.Output.Width != 1280 || reel.Output.Height != 720 || reel.Output.Duration != 5 {
		t.Errorf("test/reel output defaults = %+v; want mp4 1280x720 5 s", reel.Output)
	}
	voice, _ := c.Model("test/voice")
	if voice.Output.Format != "wav" || voice.Timing.QueueTimeout != 10*time.Minute || voice.Timing.Run != time.Second {
		t.Errorf("test/voice defaults: output %+v timing %+v", voice.Output, voice.Timing)
	}
	edit, _ := c.Model("test/pixel/edit")
	if edit.Timing.Run != time.Second || edit.Timing.QueueTimeout != 10*time.Minute || edit.Timing.Queue != 0 {
		t.Errorf("test/pixel/edit default timing = %+v", edit.Timing)
	}
	legacy, _ := c.Model("test/legacy")
	if legacy.Ready() || legacy.Status != "deprecated" {
		t.Errorf("test/legacy: Ready %v, status %q", legacy.Ready(), legacy.Status)
	}
	if _, ok := c.Model("test"); ok {
		t.Error("Model(test) found")
	}

	wantCategories := []Category{
		{ID: "text-to-image", OutputType: "image", ModelCount: 1}, {ID: "image-edit", OutputType: "image", ModelCount: 1}, {ID: "text-to-video", OutputType: "video", ModelCount: 1}, {ID: "text-to-speech", OutputType: "audio", ModelCount: 1},
	}
	if got := c.Categories(); !reflect.DeepEqual(got, wantCategories) {
		t.Errorf("Categories() = %+v; want %+v (ready models only, first-appearance order)", got, wantCategories)
	}
}

func TestFindMatches(t *testing.T) {
	t.Parallel()
	c := parseSmall(t)
	for _, tc := range []struct {
		query string
		want  bool
	}{
		{"", true},
		{"pixel", true},             // id and name
		{"test/pix", true},          // id with its slash
		{"text-to-image", true},     // name
		{"picture from", true},      // description
		{"a picture from a", true},  // description, across words
		{"video", false},            // nothing
		{"draws a picture!", false}, // longer than the description
		{"prompt.\x00", false},      // a match cannot run past the end of a field
	} {
		found := false
		for _, m := range c.Find(tc.query, "") {
			found = found || m.ID == "test/pixel"
		}
		if found != tc.want {
			t.Errorf("Find(%q) has test/pixel: %v; want %v", tc.query, found, tc.want)
		}
	}
}

func TestParseEncodesBodies(t *testing.T) {
	t.Parallel()
	c := parseSmall(t)
	for _, m := range c.Models {
		var item map[string]any
		if err := json.Unmarshal(m.ListItem, &item); err != nil {
			t.Fatalf("%s ListItem: %v", m.ID, err)
		}
		for _, k := range []string{"id", "name", "description", "category", "output_type", "status", "product", "mode"} {
			if _, ok := item[k].(string); !ok {
				t.Errorf("%s ListItem has no string %q: %s", m.ID, k, m.ListItem)
			}
		}
		var detail struct {
			ID          string            `json:"id"`
			Status      string            `json:"status"`
			InputSchema json.RawMessage   `json:"input_schema"`
			Examples    []json.RawMessage `json:"examples"`
			OpenAPI     json.RawMessage   `json:"openapi"`
		}
		if err := json.Unmarshal(m.Detail, &detail); err != nil {
			t.Fatalf("%s Detail: %v", m.ID, err)
		}
		if detail.ID != m.ID || detail.Status != m.Status || string(detail.InputSchema) != string(m.SchemaJSON) || len(detail.Examples) == 0 || len(detail.OpenAPI) == 0 {
			t.Errorf("%s Detail = %s", m.ID, m.Detail)
		}
	}
}

func TestParseDefaultsAccountsAndKeys(t *testing.T) {
	t.Parallel()
	const src = `products:
  - {id: p, name: P}
models:
  - id: m
    name: M
    description: A model.
    category: text-to-image
    product: p
    mode: text-to-image
    output_type: image
    status: ready
    input_schema:
      type: object
      properties: {prompt: {type: string}}
      examples: [{prompt: hi}]
`
	c, err := Parse("models-only.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.Accounts, DefaultAccounts()) || !reflect.DeepEqual(c.Keys, DefaultKeys()) {
		t.Errorf("a catalog of models alone has accounts %+v and keys %+v; want the defaults", c.Accounts, c.Keys)
	}
	for _, k := range []string{"mg_test_all", "mg_test_read", "mg_test_generate", "mg_test_poor"} {
		if _, ok := c.Key(k); !ok {
			t.Errorf("default key %s missing", k)
		}
	}
}

// TestParseBadFiles checks the exact FILE:LINE: message lines for each bad catalog under
// testdata/catalogs. The emulator's validate command prints these same lines.
func TestParseBadFiles(t *testing.T) {
	t.Parallel()
	const modelFields = "category, description, id, input_schema, inputs, mode, name, output, output_type, pricing, product, status, timing"
	tests := []struct {
		file string
		want []string
	}{
		{"bad-syntax.yaml", []string{
			"bad-syntax.yaml:5: mapping values are not allowed in this context",
		}},
		{"bad-empty.yaml", []string{
			"bad-empty.yaml: the file is empty",
		}},
		{"bad-top-field.yaml", []string{
			`bad-top-field.yaml:17: unknown field "scenarios" (known: accounts, keys, models, products)`,
		}},
		{"bad-model-field.yaml", []string{
			`bad-model-field.yaml:12: unknown field "price" (known: ` + modelFields + `)`,
		}},
		{"bad-duplicate-model.yaml", []string{
			`bad-duplicate-model.yaml:17: duplicate model id "m"`,
		}},
		{"bad-unknown-product.yaml", []string{
			`bad-unknown-product.yaml:4: model "m" names unknown product "nope"`,
		}},
		{"bad-output-type.yaml", []string{
			`bad-output-type.yaml:4: model "m": output_type "mesh" must be image, video or audio`,
		}},
		{"bad-schema-minimum.yaml", []string{
			`bad-schema-minimum.yaml:18: model "m": input_schema is not a valid JSON Schema: at /properties/steps/minimum: expected number, but got string`,
		}},
		{"bad-schema-type.yaml", []string{
			`bad-schema-type.yaml:16: model "m": input_schema is not a valid JSON Schema: at /properties/style/type: value must be one of "array", "boolean", "integer", "null", "number", "object", "string"`,
			`bad-schema-type.yaml:16: model "m": input_schema is not a valid JSON Schema: at /properties/style/type: expected array, but got string`,
		}},
		{"bad-ref-url.yaml", []string{
			`bad-ref-url.yaml:17: model "m": $ref "https://example.com/schemas/size.json" leaves the schema; only local references (#/...) are allowed`,
		}},
		{"bad-ref-file.yaml", []string{
			`bad-ref-file.yaml:16: model "m": $ref "common.yaml#/$defs/size" leaves the schema; only local references (#/...) are allowed`,
		}},
		{"bad-id.yaml", []string{
			`bad-id.yaml:13: model "m": $id is not allowed in input schemas; references are local to the model`,
		}},
		{"bad-example.yaml", []string{
			`bad-example.yaml:20: model "m": example 1 is not valid: /num_images: must be <= 4 but found 9`,
		}},
		{"bad-pricing-field.yaml", []string{
			`bad-pricing-field.yaml:17: model "m": pricing.multiply_by names "num_images", which is not a top-level property of input_schema`,
		}},
		{"bad-table-missing.yaml", []string{
			`bad-table-missing.yaml:18: model "m": pricing.tables for "quality" gives no value for "ultra"`,
		}},
		{"bad-multiplier-extra.yaml", []string{
			`bad-multiplier-extra.yaml:18: model "m": pricing.multipliers for "quality" names "ultra", which is not in the field's enum`,
		}},
		{"bad-permission.yaml", []string{
			`bad-permission.yaml:21: key "k2": unknown permission "models:write" (known: models:read, generate)`,
		}},
		{"bad-key-account.yaml", []string{
			`bad-key-account.yaml:21: key "k2" names unknown account "someone"`,
		}},
		{"bad-duplicate-key.yaml", []string{
			`bad-duplicate-key.yaml:21: duplicate key "k1"`,
		}},
		{"bad-schema-keys.yaml", []string{
			`bad-schema-keys.yaml:19: keys must be strings; quote "1"`,
			`bad-schema-keys.yaml:20: keys must be strings; quote "true"`,
		}},
		{"bad-multidoc.yaml", []string{
			"bad-multidoc.yaml:17: the file holds more than one YAML document",
		}},
		// Every problem at once, sorted by line, whichever pass found it.
		{"bad-many.yaml", []string{
			`bad-many.yaml:4: duplicate product id "p"`,
			`bad-many.yaml:6: model "m1" names unknown product "nope"`,
			`bad-many.yaml:30: model "m2": input_schema is not a valid JSON Schema: at /properties/prompt/minLength: expected integer, but got string`,
			`bad-many.yaml:40: unknown field "colour" (known: ` + modelFields + `)`,
			`bad-many.yaml:46: model "m4": output_type "picture" must be image, video or audio`,
			`bad-many.yaml:59: model "m4": example 0 is not valid: (the input): missing properties: 'prompt'`,
			`bad-many.yaml:60: model "m4": pricing.per_unit names "steps", which is not a top-level property of input_schema`,
			`bad-many.yaml:65: key "k1": unknown permission "admin" (known: models:read, generate)`,
			`bad-many.yaml:66: key "k2" names unknown account "ghost"`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			c, err := Parse(tc.file, readCatalogFile(t, tc.file))
			if c != nil {
				t.Errorf("Parse returned a catalog along with its problems")
			}
			got := problemLinesOf(t, err)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestEveryBadFileIsTested keeps TestParseBadFiles in step with testdata/catalogs.
func TestEveryBadFileIsTested(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(catalogsDir, "bad-*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 22 {
		t.Errorf("found %d bad catalogs; want at least 22", len(files))
	}
	for _, f := range files {
		if _, err := Parse(filepath.Base(f), readCatalogFile(t, filepath.Base(f))); err == nil {
			t.Errorf("%s parses without problems", f)
		}
	}
}

// modelYAML is a valid one-model catalog; tests append or replace parts of it.
const modelYAML = `products:
  - {id: p, name: P, description: A product.}
models:
  - id: m
    name: M
    description: A model.
    category: text-to-image
    product: p
    mode: text-to-image
    output_type: image
    status: ready
    input_schema:
      type: object
      properties:
        prompt: {type: string}
      examples: [{prompt: "hi"}]
`

// TestParseInlineProblems covers smaller rules with catalogs written in place.
func TestParseInlineProblems(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"comments only", "# nothing here\n", []string{"x.yaml: the file is empty"}},
		{"blank lines", "\n  \n\n", []string{"x.yaml: the file is empty"}},
		{"top level is a list", "- a\n- b\n", []string{"x.yaml:1: the top level must be a mapping"}},
		{"top level is a scalar", "hello\n", []string{"x.yaml:1: the top level must be a mapping"}},
		{"no models", "products: []\n", []string{"x.yaml:1: the catalog defines no models"}},
		{"duplicate top-level field", modelYAML + "models: []\n", []string{`x.yaml:17: duplicate field "models"`}},
		{"models is not a list", "models: {a: 1}\n", nil},
		{"model id with dot-dot", strings.Replace(modelYAML, "id: m\n", "id: a/../b\n", 1),
			[]string{`x.yaml:4: model id "a/../b" may hold only letters, digits, '.', '_', '-' and single '/' between segments`}},
		{"model id with double slash", strings.Replace(modelYAML, "id: m\n", "id: a//b\n", 1),
			[]string{`x.yaml:4: model id "a//b" may hold only letters, digits, '.', '_', '-' and single '/' between segments`}},
		{"model id with trailing slash", strings.Replace(modelYAML, "id: m\n", "id: a/b/\n", 1),
			[]string{`x.yaml:4: model id "a/b/" may hold only letters, digits, '.', '_', '-' and single '/' between segments`}},
		{"model without name", strings.Replace(modelYAML, "    name: M\n", "", 1), []string{`x.yaml:4: model "m" has no name`}},
		{"category not a word", strings.Replace(modelYAML, "category: text-to-image", "category: Text To Image", 1),
			[]string{`x.yaml:4: model "m": category "Text To Image" must be lower-case words joined by '-'`}},
		{"no input_schema", strings.Replace(modelYAML, "    input_schema:\n      type: object\n      properties:\n        prompt: {type: string}\n      examples: [{prompt: \"hi\"}]\n", "", 1),
			[]string{`x.yaml:4: model "m" has no input_schema`}},
		{"schema not an object", strings.Replace(modelYAML, "type: object", "type: string", 1),
			[]string{`x.yaml:13: model "m": input_schema must have type: object (an input is a JSON object)`}},
		{"schema without examples", strings.Replace(modelYAML, "      examples: [{prompt: \"hi\"}]\n", "", 1),
			[]string{`x.yaml:13: model "m": input_schema has no examples; give at least one whole valid input`}},
		{"other $schema", strings.Replace(modelYAML, "      type: object\n", "      $schema: http://json-schema.org/draft-07/schema#\n      type: object\n", 1),
			[]string{`x.yaml:13: model "m": $schema must be https://json-schema.org/draft/2020-12/schema or absent`}},
		{"infinite number in schema", strings.Replace(modelYAML, "{type: string}", "{type: string, maxLength: .inf}", 1),
			[]string{`x.yaml:15: number ".inf" has no JSON form`}},
		{"duplicate schema key", strings.Replace(modelYAML, "{type: string}", "{type: string, type: integer}", 1),
			[]string{`x.yaml:15: duplicate key "type"`}},
		{"bad duration", modelYAML + "    timing: {run: soon}\n",
			[]string{"x.yaml:17: cannot unmarshal str `soon` into a duration such as 500ms or 2s"}},
		{"negative duration", modelYAML + "    timing: {run: -1s}\n",
			[]string{`x.yaml:17: model "m": timing durations must not be negative`}},
		{"bad output format", modelYAML + "    output: {format: gif}\n",
			[]string{`x.yaml:17: model "m": output.format "gif" must be one of png, jpeg for image`}},
		{"bad size", modelYAML + "    output: {sizes: {big: huge}}\n",
			[]string{`x.yaml:17: model "m": output.sizes "big": "huge" must be WIDTHxHEIGHT`}},
		{"per_unit on text without length", modelYAML + "    pricing: {per_unit: [{field: prompt, credits: 1}]}\n",
			[]string{`x.yaml:17: model "m": pricing.per_unit field "prompt" is not numeric; use measure: length for text or lists`}},
		{"negative credits", modelYAML + "accounts:\n  - {id: a, credits: -5}\n",
			[]string{`x.yaml:18: account "a": credits must be from 0 to 1000000000000000`}},
		{"credits not a number", modelYAML + "accounts:\n  - {id: a, credits: lots}\n",
			[]string{"x.yaml:18: cannot unmarshal str `lots` into an integer"}},
		{"key with white space", modelYAML + "accounts:\n  - {id: a}\nkeys:\n  - {key: \"k 1\", account: a, permissions: [generate]}\n",
			[]string{`x.yaml:20: key "k 1" holds white space, which a bearer token cannot`}},
		{"unknown key field", modelYAML + "accounts:\n  - {id: a}\nkeys:\n  - {key: k, account: a, scopes: [generate]}\n",
			[]string{`x.yaml:20: unknown field "scopes" (known: account, key, permissions)`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("x.yaml", []byte(tc.src))
			got := problemLinesOf(t, err)
			if tc.want == nil { // only that it fails, with located problems
				for _, l := range got {
					if !strings.HasPrefix(l, "x.yaml:") {
						t.Errorf("problem %q has no file prefix", l)
					}
				}
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestParseRejectsBrokenSecondDocument: a file whose second YAML document does not even parse
// is still more than one document (and broken); it must not load as if the rest were absent.
func TestParseRejectsBrokenSecondDocument(t *testing.T) {
	t.Parallel()
	src := modelYAML + "---\nproducts: [\n"
	if _, err := Parse("x.yaml", []byte(src)); err == nil {
		t.Error("Parse accepted a file whose second document is a YAML syntax error; want a problem")
	}
}

// TestParseAllowsRefKeysInData: examples, defaults, enums and consts are data, not schemas; an
// object in them may have keys named $ref or $id.
func TestParseAllowsRefKeysInData(t *testing.T) {
	t.Parallel()
	src := strings.Replace(modelYAML, "        prompt: {type: string}\n      examples: [{prompt: \"hi\"}]\n",
		"        prompt: {type: string}\n        doc: {type: object}\n      examples: [{prompt: \"hi\", doc: {$ref: \"https://example.com/x\", $id: \"y\"}}]\n", 1)
	if _, err := Parse("x.yaml", []byte(src)); err != nil {
		t.Errorf("an example holding a $ref key was refused:\n%v", err)
	}
}

// TestParseRefInPropertyNamedProperties: a property literally called "properties" is still a
// schema, and a $ref in it that leaves the schema is reported at its own line.
func TestParseRefInPropertyNamedProperties(t *testing.T) {
	t.Parallel()
	src := strings.Replace(modelYAML, "        prompt: {type: string}\n",
		"        prompt: {type: string}\n        properties:\n          $ref: \"https://example.com/x.json\"\n", 1)
	_, err := Parse("x.yaml", []byte(src))
	got := problemLinesOf(t, err)
	want := []string{`x.yaml:17: model "m": $ref "https://example.com/x.json" leaves the schema; only local references (#/...) are allowed`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestProblemsSorted(t *testing.T) {
	t.Parallel()
	ps := Problems{{"b", 1, "x"}, {"a", 9, "y"}, {"a", 2, "z"}, {"a", 2, "w"}, {"a", 0, "v"}}
	got := ps.Sorted()
	want := Problems{{"a", 0, "v"}, {"a", 2, "z"}, {"a", 2, "w"}, {"a", 9, "y"}, {"b", 1, "x"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Sorted() = %v; want %v (stable within a line)", got, want)
	}
	if ps[0].File != "b" {
		t.Error("Sorted changed its receiver")
	}
	if s := (Problem{File: "f", Message: "m"}).String(); s != "f: m" {
		t.Errorf("a problem without a line prints %q", s)
	}
}

func TestNumberOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   any
		want float64
		ok   bool
	}{
		{json.Number("2.5"), 2.5, true},
		{"10s", 10, true},
		{" 5 ", 5, true},
		{"5", 5, true},
		{float64(3), 3, true},
		{7, 7, true},
		{int64(8), 8, true},
		{"ten", 0, false},
		{true, 0, false},
		{nil, 0, false},
	} {
		got, ok := NumberOf(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("NumberOf(%#v) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestParseProblemOrderIsStable: several problems on one line (a model missing three fields)
// must come out in the same order on every run, so validate's output can be diffed and tested.
func TestParseProblemOrderIsStable(t *testing.T) {
	t.Parallel()
	src := strings.NewReplacer("    name: M\n", "", "    description: A model.\n", "", "    category: text-to-image\n", "").Replace(modelYAML)
	_, err := Parse("x.yaml", []byte(src))
	first := problemLinesOf(t, err)
	if len(first) != 3 {
		t.Fatalf("problems = %q; want three (no name, description, category)", first)
	}
	for range 30 {
		_, err := Parse("x.yaml", []byte(src))
		if got := problemLinesOf(t, err); !reflect.DeepEqual(got, first) {
			t.Fatalf("problem order changed between runs:\n%s\nthen:\n%s", strings.Join(first, "\n"), strings.Join(got, "\n"))
		}
	}
}
