package catalog

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalogtest"
	"github.com/mediagen/mediagen-emulator/emulator/internal/schema"
)

// referenceDetail is a model's detail body as encoding/json writes it, the way encode wrote it
// before it assembled the bytes itself; encode must match it byte for byte.
func referenceDetail(t *testing.T, m *Model) []byte {
	t.Helper()
	type media struct {
		Schema json.RawMessage `json:"schema"`
	}
	type response struct {
		Description string `json:"description"`
	}
	doc := struct {
		OpenAPI           string `json:"openapi"`
		JSONSchemaDialect string `json:"jsonSchemaDialect"`
		Info              struct {
			Title       string `json:"title"`
			Version     string `json:"version"`
			Description string `json:"description"`
		} `json:"info"`
		Paths map[string]map[string]any `json:"paths"`
	}{OpenAPI: "3.1.0", JSONSchemaDialect: schema.Draft202012}
	doc.Info.Title, doc.Info.Version, doc.Info.Description = m.Name, "1.0.0", m.Description
	doc.Paths = map[string]map[string]any{"/" + m.ID: {"post": map[string]any{
		"operationId": "generate_" + strings.NewReplacer("/", "_", "-", "_", ".", "_").Replace(m.ID),
		"summary":     "Generate with " + m.Name,
		"description": "The request body is the `input` of POST /v1/quotes and POST /v1/generate for model `" + m.ID + "`.",
		"tags":        []string{m.Category},
		"requestBody": map[string]any{
			"required": true,
			"content":  map[string]media{"application/json": {Schema: m.openAPISchema}},
		},
		"responses": map[string]response{
			"200": {Description: "The finished job."},
			"202": {Description: "The job was accepted and is not finished yet."},
			"422": {Description: "The input does not match the schema (code invalid_input)."},
		},
	}}}
	openapi, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	detail, err := json.Marshal(struct {
		listItem
		InputSchema json.RawMessage   `json:"input_schema"`
		Examples    []json.RawMessage `json:"examples"`
		OpenAPI     json.RawMessage   `json:"openapi"`
	}{listItem{m.ID, m.Name, m.Description, m.Category, m.OutputType, m.Status, m.Product, m.Mode}, m.SchemaJSON, m.Examples, openapi})
	if err != nil {
		t.Fatal(err)
	}
	return append(detail, '\n') // as served
}

// TestEncodeMatchesEncodingJSON: the hand-assembled bodies are what encoding/json would write,
// for every model of the default, small and synthetic catalogs and for text that needs escaping.
func TestEncodeMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	def, err := os.ReadFile("../../../fixtures/catalog/default.yaml")
	if err != nil {
		t.Fatal(err)
	}
	escapes := strings.NewReplacer("name: M\n", "name: \"M <&> \\u2028 \\\" \\\\ \\t é\"\n",
		"description: A model.", `description: "Draws <b> & \"more\"\u2029"`,
		"prompt: {type: string}", `prompt: {type: string, description: "<script>&amp;", pattern: "^[<>&]+$"}`,
		`examples: [{prompt: "hi"}]`, `examples: [{prompt: "<&>"}]`).Replace(modelYAML)
	for name, data := range map[string][]byte{
		"default":   def,
		"small":     readCatalogFile(t, "small.yaml"),
		"synthetic": catalogtest.Synthetic(30),
		"escapes":   []byte(escapes),
	} {
		c, err := Parse(name, data)
		if err != nil {
			t.Fatalf("%s:\n%v", name, err)
		}
		for _, m := range c.Models {
			if want := referenceDetail(t, m); !bytes.Equal(m.Detail, want) {
				t.Errorf("%s %s: detail\n%s\nwant\n%s", name, m.ID, m.Detail, want)
			}
		}
	}
}
