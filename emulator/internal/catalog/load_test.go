package catalog

import (
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalogtest"
)

// TestParseReportsEverything: problems of every kind, in several models and sections, come out
// in one pass, in line order; a problem in one part does not hide those in the others.
func TestParseReportsEverything(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/bad-everywhere.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const modelFields = "category, description, id, input_schema, inputs, mode, name, output, output_type, pricing, product, status, timing"
	want := []string{
		`x.yaml:2: unknown field "colour" (known: accounts, keys, models, products)`,
		`x.yaml:4: product "p" has no name`,
		`x.yaml:6: a model must be a mapping of its fields`,
		`x.yaml:7: model "m1": output_type "" must be image, video or audio`,
		`x.yaml:12: unknown field "ouput_type" (known: ` + modelFields + `)`,
		`x.yaml:13: cannot unmarshal seq into a string`,
		`x.yaml:27: model "m2": input_schema is not a valid JSON Schema: at /properties/prompt/minLength: must be >= 0 but found -1`,
		`x.yaml:29: model "m2": pricing.base must be >= 0`,
		"x.yaml:35: cannot unmarshal str `soon` into a duration such as 500ms or 2s",
		`x.yaml:36: unknown field "shape" in output (known: aspect_ratio_field, count, count_field, delivery, delivery_field, duration, duration_field, duration_from_text, format, format_field, height, height_field, resolution_field, size_field, sizes, width, width_field)`,
		`x.yaml:43: account "a": credits must be from 0 to 1000000000000000`,
		`x.yaml:44: keys must be a list`,
	}
	_, err = Parse("x.yaml", data)
	if got := problemLinesOf(t, err); !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestParseSplitReportsEverything: a large catalog, loaded in pieces, reports the problems of
// models in different pieces at their lines in the whole file, as a whole parse does.
func TestParseSplitReportsEverything(t *testing.T) {
	t.Parallel()
	src := string(catalogtest.Synthetic(2000))
	if len(src) < splitMinBytes {
		t.Fatalf("the synthetic catalog is %d bytes, too small to split", len(src))
	}
	src = strings.Replace(src, "    name: Synth photoreal 00000\n", "    nmae: Synth photoreal 00000\n", 1)
	src = strings.Replace(src, "    mode: mode-3\n", "    mode: mode-3\n    colour: red\n", 1)
	src = strings.Replace(src, "  - id: synth/anime/m-01994\n", "  - id: synth/watercolor/m-01993\n", 1)
	lineOf := func(s string) int { return strings.Count(src[:strings.Index(src, s)], "\n") + 1 }
	if _, ok := planSplit([]byte(src)); !ok {
		t.Fatal("the catalog is not split")
	}
	_, err := Parse("x.yaml", []byte(src))
	got := problemLinesOf(t, err)
	want := []string{
		"x.yaml:" + itoa(lineOf("  - id: synth/photoreal/m-00000")) + `: model "synth/photoreal/m-00000" has no name`,
		"x.yaml:" + itoa(lineOf("    nmae:")) + `: unknown field "nmae" (known: category, description, id, input_schema, inputs, mode, name, output, output_type, pricing, product, status, timing)`,
		"x.yaml:" + itoa(lineOf("    colour:")) + `: unknown field "colour" (known: category, description, id, input_schema, inputs, mode, name, output, output_type, pricing, product, status, timing)`,
		"x.yaml:" + itoa(lineOfLast(src, "  - id: synth/watercolor/m-01993")) + `: duplicate model id "synth/watercolor/m-01993"`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func lineOfLast(src, s string) int { return strings.Count(src[:strings.LastIndex(src, s)], "\n") + 1 }

func itoa(n int) string { return strconv.Itoa(n) }

// TestParseModelsOnly: a file of models alone is a catalog. Each model without a product is a
// product of its own (its id, name and description), its mode is its category and its status
// ready; the default accounts and keys apply.
func TestParseModelsOnly(t *testing.T) {
	t.Parallel()
	src := `models:
  - id: solo/draw
    name: Solo Draw
    description: Draws.
    category: text-to-image
    output_type: image
    input_schema:
      type: object
      properties: {prompt: {type: string}}
      examples: [{prompt: "a fox"}]
  - id: solo/speak
    name: Solo Speak
    description: Speaks.
    category: text-to-speech
    output_type: audio
    status: deprecated
    input_schema:
      type: object
      properties: {text: {type: string}}
      examples: [{text: "hi"}]
`
	c, err := Parse("x.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse:\n%v", err)
	}
	var products []Product
	for _, p := range c.Products {
		products = append(products, Product{ID: p.ID, Name: p.Name, Description: p.Description})
	}
	wantProducts := []Product{{ID: "solo/draw", Name: "Solo Draw", Description: "Draws."}, {ID: "solo/speak", Name: "Solo Speak", Description: "Speaks."}}
	if !reflect.DeepEqual(products, wantProducts) {
		t.Errorf("products = %+v; want %+v", products, wantProducts)
	}
	m, _ := c.Model("solo/draw")
	if m.Product != "solo/draw" || m.Mode != "text-to-image" || m.Status != StatusReady {
		t.Errorf("solo/draw: product %q, mode %q, status %q", m.Product, m.Mode, m.Status)
	}
	if want := `{"id":"solo/draw","name":"Solo Draw","description":"Draws.","category":"text-to-image","output_type":"image","status":"ready","product":"solo/draw","mode":"text-to-image"}`; string(m.ListItem) != want {
		t.Errorf("list item %s; want %s", m.ListItem, want)
	}
	if m, _ := c.Model("solo/speak"); m.Status != "deprecated" || m.Product != "solo/speak" {
		t.Errorf("solo/speak: status %q, product %q", m.Status, m.Product)
	}
	if groups, total := c.Group(c.Find("", ""), 0, 10); total != 1 || groups[0].Product.ID != "solo/draw" {
		t.Errorf("grouped listing: %d products, %+v", total, groups)
	}
	if _, ok := c.Key("mg_test_all"); !ok {
		t.Error("the default keys are missing")
	}

	clash := "products:\n  - {id: solo/draw, name: Taken, description: A product.}\n" + src
	_, err = Parse("x.yaml", []byte(clash))
	want := []string{`x.yaml:4: model "solo/draw" has no product, and a product already has its id; name its product`}
	if got := problemLinesOf(t, err); !reflect.DeepEqual(got, want) {
		t.Errorf("problems %q; want %q", got, want)
	}
}

// TestFindAgreesWithAPlainScan: whether Find answers from its index (rare queries) or by
// scanning (common ones), it finds exactly the ready models a plain scan finds, in order.
func TestFindAgreesWithAPlainScan(t *testing.T) {
	t.Parallel()
	c, err := Parse("x.yaml", catalogtest.Synthetic(300))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"a", "synth", "m-0029", "m-00299", "photoreal", "number 1", ".", "benchmarks.", "zebra", "s/m"} {
		for _, category := range []string{"", "text-to-video"} {
			var want []string
			for _, m := range c.Models {
				text := strings.ToLower(m.ID + "\x00" + m.Name + "\x00" + m.Description)
				if m.Ready() && strings.Contains(text, q) && (category == "" || m.Category == category) {
					want = append(want, m.ID)
				}
			}
			if got := ids(c.Find(q, category)); !reflect.DeepEqual(got, want) {
				t.Errorf("Find(%q, %q) = %d models; want %d", q, category, len(got), len(want))
			}
		}
	}
}

// TestOutputDelivery: delivery is url or inline, and delivery_field names a boolean member.
func TestOutputDelivery(t *testing.T) {
	t.Parallel()
	model := func(output string) string {
		return `models:
  - id: m
    name: M
    description: A model.
    category: text-to-image
    output_type: image
    status: ready
    input_schema:
      type: object
      properties:
        prompt: {type: string}
        sync_mode: {type: boolean}
      examples: [{prompt: a cat}]
    output: ` + output + "\n"
	}
	if _, err := Parse("ok.yaml", []byte(model("{delivery: inline, delivery_field: sync_mode}"))); err != nil {
		t.Errorf("inline delivery refused: %v", err)
	}
	for output, want := range map[string]string{
		"{delivery: email}":        `output.delivery "email" must be url or inline`,
		"{delivery_field: prompt}": `output.delivery_field "prompt" must name a boolean member`,
	} {
		_, err := Parse("bad.yaml", []byte(model(output)))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", output, err, want)
		}
	}
}

// modelInputsYAML is a catalog of one image-to-image model with the given inputs: mapping (the
// catalog's line 17).
func modelInputsYAML(inputs string) string {
	return `models:
  - id: m
    name: M
    description: A model.
    category: image-to-image
    output_type: image
    input_schema:
      type: object
      properties:
        prompt: {type: string}
        reference: {type: string, format: uri}
        references: {type: array, items: {type: string, format: uri}}
        image_size: {type: string}
        image_url: {type: string, format: uri}
      examples: [{prompt: a cat}]
    output: {format: png}
    inputs: ` + inputs + "\n"
}

// validInputs are catalog inputs with every member set.
const validInputs = "{https_only: false, host_names: false, max_redirects: 2, limits: {image: {inline: 1024, url: 2048}, audio: {url: 4096}}, media: {reference: image, references: mask}}"

// TestModelInputs: a model's inputs change the rules and mark its media members; what the
// checker cannot see is reported at the inputs line.
func TestModelInputs(t *testing.T) {
	t.Parallel()
	c, err := Parse("ok.yaml", []byte(modelInputsYAML(validInputs)))
	if err != nil {
		t.Fatalf("valid inputs refused: %v", err)
	}
	m, _ := c.Model("m")
	if m.Inputs == nil || *m.Inputs.HTTPSOnly || *m.Inputs.MaxRedirects != 2 || m.MediaMarks()["references"] != "mask" {
		t.Fatalf("inputs = %+v", m.Inputs)
	}
	plain, _ := Parse("plain.yaml", []byte(strings.Replace(modelInputsYAML(""), "    inputs: \n", "", 1)))
	if pm, _ := plain.Model("m"); pm.Inputs != nil || pm.MediaMarks() != nil {
		t.Errorf("a model without inputs has %+v", pm.Inputs)
	}
	for in, want := range map[string]string{
		"{max_redirects: 11}":            `bad.yaml:17: model "m": inputs.max_redirects must be 0 to 10`,
		"{limits: {picture: {url: 5}}}":  `bad.yaml:17: model "m": inputs.limits: "picture" must be image, audio or video`,
		"{limits: {image: {url: 0}}}":    `bad.yaml:17: model "m": inputs.limits.image.url must be 1 to 1073741824 bytes`,
		"{limits: {image: {upload: 5}}}": `bad.yaml:17: model "m": inputs.limits.image.upload: an upload belongs to no model`,
		"{media: {reference: picture}}":  `bad.yaml:17: model "m": inputs.media.reference "picture" must be one of image, mask, audio, video`,
		"{media: {image_size: image}}":   `bad.yaml:17: model "m": inputs.media names "image_size", which is not a top-level format: uri member`,
		"{media: {nowhere: audio}}":      `bad.yaml:17: model "m": inputs.media names "nowhere"`,
		"{upload_ttl: 1h}":               `bad.yaml:17: unknown field "upload_ttl" in inputs`,
		"{https_only: yes please}":       `bad.yaml:17`,
	} {
		_, err := Parse("bad.yaml", []byte(modelInputsYAML(in)))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}
