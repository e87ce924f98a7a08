package emulator_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"gopkg.in/yaml.v3"

	"github.com/mediagen/mediagen-emulator/emulator"
	"github.com/mediagen/mediagen-emulator/emulator/cli"
	"github.com/mediagen/mediagen-emulator/emulator/internal/schema"
)

// defaultModelIDs reads every model id of the embedded default catalog from its source file,
// ready or not (GET /v1/models lists only the ready ones).
func defaultModelIDs(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../fixtures/catalog/default.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Models []struct {
			ID string `yaml:"id"`
		} `yaml:"models"`
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(file.Models))
	for i, m := range file.Models {
		ids[i] = m.ID
	}
	return ids
}

// newDefaultServer serves the embedded default catalog. The emulator loads it in the
// background and trusts it ("checked by the emulator's own tests"): this is that check, so a
// catalog that does not load fails here, with its problems.
func newDefaultServer(t *testing.T) *emulator.Server {
	t.Helper()
	s, err := emulator.NewServer(emulator.Config{ManualClock: true, Seeded: true, Seed: 1})
	if err != nil {
		t.Fatalf("NewServer with the default catalog: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	<-s.Ready()
	if rec := send(t, s, http.MethodGet, "/_emulator/health", ""); rec.Code != http.StatusOK {
		t.Fatalf("the default catalog does not load (health answers %d); problems:\n%s",
			rec.Code, strings.Join(cli.ValidateFile("../fixtures/catalog/default.yaml"), "\n"))
	}
	return s
}

// TestDefaultCatalogLoads: the embedded default catalog validates without a problem.
func TestDefaultCatalogLoads(t *testing.T) {
	t.Parallel()
	if problems := cli.ValidateFile("../fixtures/catalog/default.yaml"); len(problems) > 0 {
		t.Fatalf("the default catalog has problems:\n%s", strings.Join(problems, "\n"))
	}
}

// TestDefaultCatalogModels checks every model of the default catalog: its detail answers, its
// OpenAPI document is a 3.1 document with one operation whose request body is the input
// schema, every $ref resolves inside the document, and every example validates.
func TestDefaultCatalogModels(t *testing.T) {
	t.Parallel()
	h := newDefaultServer(t)
	ids := defaultModelIDs(t)
	if len(ids) == 0 {
		t.Fatal("the default catalog has no models")
	}

	listed := map[string]bool{}
	for offset := 0; ; offset += 500 {
		rec := send(t, h, http.MethodGet, "/v1/models?limit=500&offset="+strconv.Itoa(offset), "mg_test_read")
		page := decodeJSON[listBody[modelItem]](t, rec)
		for _, m := range page.Data {
			listed[m.ID] = true
		}
		if !page.HasMore {
			break
		}
	}

	for _, id := range ids {
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			rec := send(t, h, http.MethodGet, "/v1/models/"+id, "mg_test_all")
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d:\n%s", rec.Code, rec.Body)
			}
			// The id escaped as one path segment names the same model.
			if esc := send(t, h, http.MethodGet, "/v1/models/"+url.PathEscape(id), "mg_test_all"); esc.Body.String() != rec.Body.String() {
				t.Errorf("/v1/models/%s answers differently", url.PathEscape(id))
			}
			var detail struct {
				ID          string            `json:"id"`
				Status      string            `json:"status"`
				InputSchema json.RawMessage   `json:"input_schema"`
				Examples    []json.RawMessage `json:"examples"`
				OpenAPI     json.RawMessage   `json:"openapi"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &detail); err != nil {
				t.Fatal(err)
			}
			if detail.ID != id {
				t.Errorf("id = %q", detail.ID)
			}
			if (detail.Status == "ready") != listed[id] {
				t.Errorf("status %q but listed = %v: GET /v1/models must list exactly the ready models", detail.Status, listed[id])
			}
			checkOpenAPIDocument(t, detail.OpenAPI, detail.InputSchema)
			checkExamples(t, detail.InputSchema, detail.Examples)
		})
	}
}

func checkOpenAPIDocument(t *testing.T, raw, inputSchema json.RawMessage) {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("openapi is not JSON: %v", err)
	}
	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.1") {
		t.Errorf("openapi = %q; want 3.1.x", v)
	}
	if info, _ := doc["info"].(map[string]any); info == nil || info["title"] == "" || info["title"] == nil || info["version"] == nil {
		t.Errorf("info = %v; want a title and a version", doc["info"])
	}
	paths, _ := doc["paths"].(map[string]any)
	if len(paths) != 1 {
		t.Fatalf("%d paths; want exactly 1", len(paths))
	}
	var schemaPtr string
	for path, item := range paths {
		ops, _ := item.(map[string]any)
		if len(ops) != 1 {
			t.Fatalf("path %s has %d operations; want exactly 1", path, len(ops))
		}
		for method, op := range ops {
			body, _ := op.(map[string]any)["requestBody"].(map[string]any)
			content, _ := body["content"].(map[string]any)
			media, _ := content["application/json"].(map[string]any)
			bodySchema, _ := media["schema"].(map[string]any)
			if bodySchema["type"] != "object" {
				t.Errorf("%s %s: requestBody.content[application/json].schema = %v; want type object", method, path, bodySchema)
			}
			if _, ok := op.(map[string]any)["responses"].(map[string]any); !ok {
				t.Errorf("%s %s has no responses (required by OpenAPI)", method, path)
			}
			schemaPtr = "#/paths/" + schema.EscapePointer(path) + "/" + method + "/requestBody/content/application~1json/schema"
			// The request body schema is the input schema, its local references moved with it.
			var input any
			_ = json.Unmarshal(bytes.ReplaceAll(inputSchema, []byte(`"$ref":"#`), []byte(`"$ref":"`+schemaPtr)), &input)
			if !jsonEqual(bodySchema, input) {
				t.Errorf("the request body schema is not the model's input schema")
			}
		}
	}
	refs := map[string]string{}
	collectRefs(doc, "", refs)
	for at, ref := range refs {
		if err := resolvePointer(doc, ref); err != nil {
			t.Errorf("$ref at %s: %v", at, err)
		}
	}
}

// checkExamples compiles the input schema as a client would (draft 2020-12, formats asserted,
// nothing loaded from outside) and validates the detail's examples and the schema's own.
func checkExamples(t *testing.T, inputSchema json.RawMessage, examples []json.RawMessage) {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	c.LoadURL = func(u string) (io.ReadCloser, error) { return nil, fmt.Errorf("refusing to load %s", u) }
	if err := c.AddResource("https://example.test/input.json", bytes.NewReader(inputSchema)); err != nil {
		t.Fatal(err)
	}
	compiled, err := c.Compile("https://example.test/input.json")
	if err != nil {
		t.Fatalf("the input schema does not compile: %v", err)
	}
	var own struct {
		Examples []json.RawMessage `json:"examples"`
	}
	_ = json.Unmarshal(inputSchema, &own)
	if len(examples) == 0 || len(own.Examples) == 0 {
		t.Errorf("no examples (detail %d, schema %d)", len(examples), len(own.Examples))
	}
	for i, ex := range append(append([]json.RawMessage(nil), examples...), own.Examples...) {
		dec := json.NewDecoder(bytes.NewReader(ex))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		if err := compiled.Validate(v); err != nil {
			t.Errorf("example %d %s does not validate: %v", i, ex, err)
		}
	}
}

func collectRefs(v any, at string, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			if s, ok := child.(string); ok && k == "$ref" {
				out[at] = s
			}
			collectRefs(child, at+"/"+schema.EscapePointer(k), out)
		}
	case []any:
		for i, child := range x {
			collectRefs(child, at+"/"+strconv.Itoa(i), out)
		}
	}
}

// resolvePointer follows a "#/..." JSON Pointer inside doc.
func resolvePointer(doc any, ref string) error {
	ptr, local := strings.CutPrefix(ref, "#")
	if !local {
		return fmt.Errorf("%q is not a JSON Pointer inside the document", ref)
	}
	_, err := schema.Lookup(doc, ptr)
	return err
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// TestDefaultCatalogListing pages through the default catalog's listing and categories.
func TestDefaultCatalogListing(t *testing.T) {
	t.Parallel()
	h := newDefaultServer(t)
	all := decodeJSON[listBody[modelItem]](t, send(t, h, http.MethodGet, "/v1/models?limit=500", "mg_test_all"))
	if all.Total == 0 || len(all.Data) != all.Total {
		t.Fatalf("total %d, %d items", all.Total, len(all.Data))
	}
	var paged []string
	for offset := 0; ; offset += 7 {
		page := decodeJSON[listBody[modelItem]](t, send(t, h, http.MethodGet, "/v1/models?limit=7&offset="+strconv.Itoa(offset), "mg_test_all"))
		for _, m := range page.Data {
			paged = append(paged, m.ID)
		}
		if page.Total != all.Total || page.HasMore != (offset+len(page.Data) < all.Total) {
			t.Fatalf("offset %d: total %d has_more %v", offset, page.Total, page.HasMore)
		}
		if !page.HasMore {
			break
		}
	}
	for i, m := range all.Data {
		if i >= len(paged) || paged[i] != m.ID {
			t.Fatalf("paging by 7 gives a different order or set than one page of 500")
		}
	}

	type category struct {
		ID         string `json:"id"`
		OutputType string `json:"output_type"`
		ModelCount int    `json:"model_count"`
	}
	cats := decodeJSON[struct{ Data []category }](t, send(t, h, http.MethodGet, "/v1/models/categories", "mg_test_read"))
	sum := 0
	for _, c := range cats.Data {
		sum += c.ModelCount
		got := decodeJSON[listBody[modelItem]](t, send(t, h, http.MethodGet, "/v1/models?limit=500&category="+url.QueryEscape(c.ID), "mg_test_read"))
		if got.Total != c.ModelCount {
			t.Errorf("category %s: model_count %d but the listing has %d", c.ID, c.ModelCount, got.Total)
		}
		for _, m := range got.Data {
			if m.OutputType != c.OutputType {
				t.Errorf("category %s is %s but %s is %s", c.ID, c.OutputType, m.ID, m.OutputType)
			}
		}
	}
	if sum != all.Total {
		t.Errorf("categories count %d models; the listing %d", sum, all.Total)
	}
	grouped := decodeJSON[listBody[productItem]](t, send(t, h, http.MethodGet, "/v1/models?grouped=true&limit=500", "mg_test_all"))
	modes := 0
	for _, p := range grouped.Data {
		modes += len(p.Modes)
	}
	if modes != all.Total || grouped.Total != len(grouped.Data) {
		t.Errorf("grouped listing: %d products with %d modes; want the %d ready models", grouped.Total, modes, all.Total)
	}
}

// TestDefaultKeys: the contract's four keys and their permissions.
func TestDefaultKeys(t *testing.T) {
	t.Parallel()
	h := newDefaultServer(t)
	for key, status := range map[string]int{"mg_test_all": 200, "mg_test_read": 200, "mg_test_poor": 200, "mg_test_generate": 403, "mg_test_nope": 401} {
		if rec := send(t, h, http.MethodGet, "/v1/models?limit=1", key); rec.Code != status {
			t.Errorf("%s: status %d; want %d", key, rec.Code, status)
		}
	}
}
