package catalog

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator/internal/schema"
)

// refsOf lists every "$ref" string in a decoded JSON document with the pointer it sits at.
func collectTestRefs(v any, at string, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			if s, ok := child.(string); ok && k == "$ref" {
				out[at] = s
			}
			collectTestRefs(child, at+"/"+schema.EscapePointer(k), out)
		}
	case []any:
		for i, child := range x {
			collectTestRefs(child, at+"/"+strconv.Itoa(i), out)
		}
	}
}

// resolveTestPointer follows a "#/..." JSON Pointer inside doc.
func resolveTestPointer(doc any, ref string) (any, error) {
	if !strings.HasPrefix(ref, "#/") {
		return nil, fmt.Errorf("%q is not a JSON Pointer fragment", ref)
	}
	return schema.Lookup(doc, ref[1:])
}

// checkOpenAPI checks a model's OpenAPI document: 3.1, one path with one operation whose
// request body's application/json schema is the input schema, every $ref resolving inside it.
func checkModelOpenAPI(t *testing.T, m *Model) {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(mustOpenAPI(t, m), &doc); err != nil {
		t.Fatalf("%s: openapi is not JSON: %v", m.ID, err)
	}
	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.1") {
		t.Errorf("%s: openapi = %q; want 3.1.x", m.ID, v)
	}
	if info, _ := doc["info"].(map[string]any); info["title"] != m.Name {
		t.Errorf("%s: info.title = %v; want %q", m.ID, info["title"], m.Name)
	}
	paths, _ := doc["paths"].(map[string]any)
	if len(paths) != 1 {
		t.Fatalf("%s: %d paths; want 1", m.ID, len(paths))
	}
	for _, item := range paths {
		ops, _ := item.(map[string]any)
		if len(ops) != 1 {
			t.Fatalf("%s: %d operations; want 1", m.ID, len(ops))
		}
		for _, op := range ops {
			body, _ := op.(map[string]any)["requestBody"].(map[string]any)
			content, _ := body["content"].(map[string]any)
			schema, _ := content["application/json"].(map[string]any)["schema"].(map[string]any)
			if schema["type"] != "object" {
				t.Errorf("%s: request body schema = %v; want the object input schema", m.ID, schema)
			}
		}
	}
	refs := map[string]string{}
	collectTestRefs(doc, "", refs)
	for at, ref := range refs {
		if _, err := resolveTestPointer(doc, ref); err != nil {
			t.Errorf("%s: $ref at %s does not resolve in the OpenAPI document: %v", m.ID, at, err)
		}
	}
}

func mustOpenAPI(t *testing.T, m *Model) json.RawMessage {
	t.Helper()
	var detail struct {
		OpenAPI json.RawMessage `json:"openapi"`
	}
	if err := json.Unmarshal(m.Detail, &detail); err != nil {
		t.Fatal(err)
	}
	return detail.OpenAPI
}

func TestOpenAPISmall(t *testing.T) {
	t.Parallel()
	c := parseSmall(t)
	for _, m := range c.Models {
		checkModelOpenAPI(t, m)
	}
	// test/pixel refers to $defs: the reference is rewritten to the schema's place.
	pixel, _ := c.Model("test/pixel")
	const want = `"$ref":"#/paths/~1test~1pixel/post/requestBody/content/application~1json/schema/$defs/size"`
	if !strings.Contains(string(mustOpenAPI(t, pixel)), want) {
		t.Errorf("test/pixel openapi lacks %s:\n%s", want, mustOpenAPI(t, pixel))
	}
	if !strings.Contains(string(pixel.SchemaJSON), `"$ref":"#/$defs/size"`) {
		t.Errorf("the input schema itself must keep its own reference: %s", pixel.SchemaJSON)
	}
}

// TestOpenAPIReferences builds schemas with nested and escaped references; each must still
// resolve inside the OpenAPI document.
func TestOpenAPIReferences(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		schema string
	}{
		{"nested $defs", `
      type: object
      properties:
        a: {$ref: "#/$defs/outer"}
      $defs:
        outer: {type: object, properties: {b: {$ref: "#/$defs/inner"}}}
        inner: {type: string}
      examples: [{a: {b: x}}]`},
		{"escaped pointer", `
      type: object
      properties:
        a: {$ref: "#/$defs/a~1b"}
      $defs:
        a/b: {type: string}
      examples: [{a: x}]`},
		{"root recursion", `
      type: object
      properties:
        child: {$ref: "#"}
      examples: [{child: {}}]`},
		{"items by pointer", `
      type: object
      properties:
        list: {type: array, items: {$ref: "#/properties/name"}}
        name: {type: string}
      examples: [{list: [a], name: b}]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := strings.Replace(modelYAML, `
      type: object
      properties:
        prompt: {type: string}
      examples: [{prompt: "hi"}]`, tc.schema, 1)
			c, err := Parse("x.yaml", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			m, _ := c.Model("m")
			checkModelOpenAPI(t, m)
			if tc.name == "root recursion" {
				refs := map[string]string{}
				var doc any
				_ = json.Unmarshal(mustOpenAPI(t, m), &doc)
				collectTestRefs(doc, "", refs)
				for _, ref := range refs {
					target, _ := resolveTestPointer(doc, ref)
					if !reflect.DeepEqual(target.(map[string]any)["type"], "object") {
						t.Errorf("$ref %q does not lead to the input schema", ref)
					}
				}
			}
		})
	}
}

// TestOpenAPIAnchorReference: "#name" references an $anchor (allowed by draft 2020-12 and
// accepted by the loader); rewriting it as if it were a JSON Pointer breaks it.
func TestOpenAPIAnchorReference(t *testing.T) {
	t.Parallel()
	src := strings.Replace(modelYAML, `
      type: object
      properties:
        prompt: {type: string}
      examples: [{prompt: "hi"}]`, `
      type: object
      properties:
        size: {$ref: "#size"}
      $defs:
        s: {$anchor: size, type: string, enum: [a, b]}
      examples: [{size: a}]`, 1)
	c, err := Parse("x.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := c.Model("m")
	if err := m.Validate(map[string]any{"size": "c"}); err == nil {
		t.Fatal("the anchor reference is not applied by the compiled schema")
	}
	openapi := string(mustOpenAPI(t, m))
	if !strings.Contains(openapi, `"$ref":"#size"`) {
		t.Errorf("an $anchor reference must stay \"#size\" in the OpenAPI document (anchors are document-wide); got:\n%s", openapi)
	}
}

// openAPISchema returns the request body schema of a model's OpenAPI document.
func openAPISchema(t *testing.T, m *Model) map[string]any {
	t.Helper()
	var doc struct {
		Paths map[string]struct {
			Post struct {
				RequestBody struct {
					Content map[string]struct {
						Schema map[string]any `json:"schema"`
					} `json:"content"`
				} `json:"requestBody"`
			} `json:"post"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(mustOpenAPI(t, m), &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Paths["/"+m.ID].Post.RequestBody.Content["application/json"].Schema
}

// TestOpenAPIKeepsData: only references are rewritten when the schema moves into the OpenAPI
// document; examples, defaults and consts are data and keep their exact values, even when an
// object in them has a "$ref" key.
func TestOpenAPIKeepsData(t *testing.T) {
	t.Parallel()
	src := strings.Replace(modelYAML, `
      type: object
      properties:
        prompt: {type: string}
      examples: [{prompt: "hi"}]`, `
      type: object
      properties:
        doc: {type: object, default: {$ref: "#/components/x"}}
        pointer: {type: string, const: "#/a"}
      examples: [{doc: {$ref: "#/defs/y"}, pointer: "#/a"}]`, 1)
	c, err := Parse("x.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := c.Model("m")
	var input map[string]any
	if err := json.Unmarshal(m.SchemaJSON, &input); err != nil {
		t.Fatal(err)
	}
	got := openAPISchema(t, m)
	if !reflect.DeepEqual(got["examples"], input["examples"]) {
		t.Errorf("OpenAPI schema examples = %v; want the input schema's %v", got["examples"], input["examples"])
	}
	if !reflect.DeepEqual(got["properties"], input["properties"]) {
		t.Errorf("OpenAPI schema properties = %v; want the input schema's %v (defaults and consts are data)", got["properties"], input["properties"])
	}
}

// TestOpenAPIDynamicRef: a $dynamicRef written as a JSON Pointer (allowed by the loader) must
// resolve inside the OpenAPI document just as a $ref does.
func TestOpenAPIDynamicRef(t *testing.T) {
	t.Parallel()
	src := strings.Replace(modelYAML, `
      type: object
      properties:
        prompt: {type: string}
      examples: [{prompt: "hi"}]`, `
      type: object
      properties:
        size: {$dynamicRef: "#/$defs/size"}
      $defs:
        size: {type: string, enum: [a, b]}
      examples: [{size: a}]`, 1)
	c, err := Parse("x.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := c.Model("m")
	if err := m.Validate(map[string]any{"size": "c"}); err == nil {
		t.Fatal("the $dynamicRef is not applied by the compiled schema")
	}
	var doc any
	_ = json.Unmarshal(mustOpenAPI(t, m), &doc)
	ref, _ := openAPISchema(t, m)["properties"].(map[string]any)["size"].(map[string]any)["$dynamicRef"].(string)
	if _, err := resolveTestPointer(doc, ref); err != nil {
		t.Errorf("$dynamicRef %q does not resolve in the OpenAPI document: %v", ref, err)
	}
}
