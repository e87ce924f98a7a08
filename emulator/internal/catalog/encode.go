package catalog

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/mediagen/mediagen-emulator/emulator/internal/schema"
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

// encode builds the model's served bodies once, so requests only copy bytes. The bodies are
// written piece by piece, byte for byte what encoding/json makes of them (its HTML escaping
// included), because a large catalog spends much of its load time re-reading the schema JSON
// inside json.Marshal.
func (m *Model) encode() error {
	item, err := json.Marshal(listItem{m.ID, m.Name, m.Description, m.Category, m.OutputType, m.Status, m.Product, m.Mode})
	if err != nil {
		return err
	}
	m.ListItem = item
	var b bytes.Buffer
	b.Grow(len(item) + 2*len(m.SchemaJSON) + 1024)
	b.Write(item[:len(item)-1])
	b.WriteString(`,"input_schema":`)
	json.HTMLEscape(&b, m.SchemaJSON)
	b.WriteString(`,"examples":`)
	if m.Examples == nil {
		b.WriteString("null")
	} else {
		b.WriteByte('[')
		for i, ex := range m.Examples {
			if i > 0 {
				b.WriteByte(',')
			}
			json.HTMLEscape(&b, ex)
		}
		b.WriteByte(']')
	}
	b.WriteString(`,"openapi":`)
	m.writeOpenAPI(&b)
	b.WriteString("}\n")
	m.Detail = b.Bytes()
	return nil
}

// writeOpenAPI describes the model's input as an OpenAPI 3.1 document with exactly one operation
// and one request body, whose application/json schema is the input schema itself. Local
// references in the schema are rewritten to their place inside the document so tools resolve
// them. Keys are in the order encoding/json gives maps: sorted.
func (m *Model) writeOpenAPI(b *bytes.Buffer) {
	str := func(s string) {
		enc, _ := json.Marshal(s) // a string always encodes
		b.Write(enc)
	}
	b.WriteString(`{"openapi":"3.1.0","jsonSchemaDialect":"` + schema.Draft202012 + `","info":{"title":`)
	str(m.Name)
	b.WriteString(`,"version":"1.0.0","description":`)
	str(m.Description)
	b.WriteString(`},"paths":{`)
	str("/" + m.ID)
	b.WriteString(`:{"post":{"description":`)
	str("The request body is the `input` of POST /v1/quotes and POST /v1/generate for model `" + m.ID + "`.")
	b.WriteString(`,"operationId":`)
	str("generate_" + strings.NewReplacer("/", "_", "-", "_", ".", "_").Replace(m.ID))
	b.WriteString(`,"requestBody":{"content":{"application/json":{"schema":`)
	json.HTMLEscape(b, m.openAPISchema)
	b.WriteString(`}},"required":true},"responses":{` +
		`"200":{"description":"The finished job."},` +
		`"202":{"description":"The job was accepted and is not finished yet."},` +
		`"422":{"description":"The input does not match the schema (code invalid_input)."}},"summary":`)
	str("Generate with " + m.Name)
	b.WriteString(`,"tags":[`)
	str(m.Category)
	b.WriteString(`]}}}}`)
}
