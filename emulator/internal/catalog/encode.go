package catalog

import (
	"encoding/json"
	"strings"
)

// listItem is a model as it appears in GET /v1/models.
type listItem struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Category    string `json:"category"`
	OutputType  string `json:"output_type"`
	Status      string `json:"status"`
	Product     string `json:"product"`
	Mode        string `json:"mode"`
}

// encode builds the model's served bodies once, so requests only copy bytes.
func (m *Model) encode() error {
	item := listItem{m.ID, m.Name, m.Description, m.Category, m.OutputType, m.Status, m.Product, m.Mode}
	b, err := json.Marshal(item)
	if err != nil {
		return err
	}
	m.ListItem = b
	openapi, err := m.openAPI()
	if err != nil {
		return err
	}
	detail := struct {
		listItem
		InputSchema json.RawMessage   `json:"input_schema"`
		Examples    []json.RawMessage `json:"examples"`
		OpenAPI     json.RawMessage   `json:"openapi"`
	}{item, m.SchemaJSON, m.Examples, openapi}
	m.Detail, err = json.Marshal(detail)
	return err
}

// openAPI describes the model's input as an OpenAPI 3.1 document with exactly one operation and
// one request body, whose application/json schema is the input schema itself. Local references
// in the schema are rewritten to their place inside the document so tools resolve them.
func (m *Model) openAPI() (json.RawMessage, error) {
	path := "/" + m.ID
	schema := m.openAPISchema
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
	}{OpenAPI: "3.1.0", JSONSchemaDialect: draft202012}
	doc.Info.Title = m.Name
	doc.Info.Version = "1.0.0"
	doc.Info.Description = m.Description
	doc.Paths = map[string]map[string]any{path: {"post": map[string]any{
		"operationId": "generate_" + strings.NewReplacer("/", "_", "-", "_", ".", "_").Replace(m.ID),
		"summary":     "Generate with " + m.Name,
		"description": "The request body is the `input` of POST /v1/quotes and POST /v1/generate for model `" + m.ID + "`.",
		"tags":        []string{m.Category},
		"requestBody": map[string]any{
			"required": true,
			"content":  map[string]media{"application/json": {Schema: schema}},
		},
		"responses": map[string]response{
			"200": {Description: "The finished job."},
			"202": {Description: "The job was accepted and is not finished yet."},
			"422": {Description: "The input does not match the schema (code invalid_input)."},
		},
	}}}
	return json.Marshal(doc)
}
