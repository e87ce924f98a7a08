package conformance

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/mediagen/mediagen-emulator/emulator/internal/jsonvalue"
	"github.com/mediagen/mediagen-emulator/emulator/internal/schema"
)

// oas31 holds the OpenAPI Initiative's JSON Schemas of OpenAPI 3.1 documents (see its README).
//
//go:embed oas31/*.json
var oas31 embed.FS

// The schemas of oas31, by the URL each is published under.
var oas31Files = map[string]string{
	"https://spec.openapis.org/oas/3.1/schema/2022-10-07":      "oas31/schema.json",
	"https://spec.openapis.org/oas/3.1/schema-base/2022-10-07": "oas31/schema-base.json",
	"https://spec.openapis.org/oas/3.1/dialect/base":           "oas31/dialect-base.schema.json",
	"https://spec.openapis.org/oas/3.1/meta/base":              "oas31/meta-base.schema.json",
}

// CheckDocument lists what is wrong with an OpenAPI document: whether it is valid OpenAPI 3.1
// (against the official schema, with every Schema Object checked against the OpenAPI dialect
// of JSON Schema 2020-12), whether every $ref resolves, every path template parameter is
// declared (and no undeclared one), and every operationId is unique.
func CheckDocument(doc []byte) []error {
	var root map[string]any
	if err := jsonvalue.Decode(doc, &root); err != nil {
		return []error{fmt.Errorf("the document is not a JSON object: %v", err)}
	}
	var errs []error
	if err := validOpenAPI(root); err != nil {
		errs = append(errs, err)
	}
	refs := map[string][]string{}
	collectRefs(root, "", refs)
	for _, ref := range sortedKeys(refs) {
		ptr, ok := strings.CutPrefix(ref, "#")
		if !ok {
			errs = append(errs, fmt.Errorf("$ref %q at %s leaves the document", ref, refs[ref][0]))
			continue
		}
		if _, err := schema.Lookup(root, ptr); err != nil {
			errs = append(errs, fmt.Errorf("$ref %q at %s does not resolve: %v", ref, refs[ref][0], err))
		}
	}
	errs = append(errs, checkOperations(root)...)
	return errs
}

func validOpenAPI(root map[string]any) error {
	c := schema.NewCompiler()
	for u, name := range oas31Files {
		data, err := oas31.ReadFile(name)
		if err != nil {
			return err
		}
		if name == "oas31/meta-base.schema.json" {
			// jsonschema/v5 refuses to compile a schema that requires a vocabulary it does not
			// implement, and meta/base requires its own. That vocabulary only gives meaning to
			// annotations (discriminator, xml, externalDocs, example) whose shape meta/base's
			// ordinary keywords check anyway, so it is dropped in memory; the file stays as
			// published.
			var m map[string]any
			if err := json.Unmarshal(data, &m); err != nil {
				return fmt.Errorf("%s: %v", name, err)
			}
			delete(m, "$vocabulary")
			data, _ = json.Marshal(m)
		}
		if err := c.AddResource(u, bytes.NewReader(data)); err != nil {
			return fmt.Errorf("%s: %v", name, err)
		}
	}
	sch, err := c.Compile("https://spec.openapis.org/oas/3.1/schema-base/2022-10-07")
	if err != nil {
		return fmt.Errorf("the OpenAPI 3.1 schema does not compile: %v", err)
	}
	return conforms(sch, any(root), "not valid OpenAPI 3.1")
}

// collectRefs finds every $ref string, by where it first occurs.
func collectRefs(v any, at string, out map[string][]string) {
	switch n := v.(type) {
	case map[string]any:
		for k, x := range n {
			if s, ok := x.(string); ok && k == "$ref" {
				out[s] = append(out[s], at)
				continue
			}
			collectRefs(x, at+"/"+schema.EscapePointer(k), out)
		}
	case []any:
		for i, x := range n {
			collectRefs(x, fmt.Sprintf("%s/%d", at, i), out)
		}
	}
}

var templateParam = regexp.MustCompile(`\{([^{}]+)\}`)

// checkOperations checks each operation's path parameters against its template, and that
// operationIds are unique.
func checkOperations(root map[string]any) []error {
	var errs []error
	ids := map[string]string{}
	paths, _ := root["paths"].(map[string]any)
	for _, template := range sortedKeys(paths) {
		item, _ := paths[template].(map[string]any)
		var want []string
		for _, m := range templateParam.FindAllStringSubmatch(template, -1) {
			want = append(want, m[1])
		}
		slices.Sort(want)
		shared, err := pathParams(root, item["parameters"])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %v", template, err))
		}
		for _, method := range []string{"get", "head", "post", "put", "patch", "delete", "options", "trace"} {
			op, ok := item[method].(map[string]any)
			if !ok {
				continue
			}
			where := strings.ToUpper(method) + " " + template
			id, _ := op["operationId"].(string)
			if id == "" {
				errs = append(errs, fmt.Errorf("%s has no operationId", where))
			} else if other, dup := ids[id]; dup {
				errs = append(errs, fmt.Errorf("%s and %s share operationId %q", other, where, id))
			} else {
				ids[id] = where
			}
			own, err := pathParams(root, op["parameters"])
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %v", where, err))
			}
			got := slices.Sorted(func(yield func(string) bool) {
				seen := map[string]bool{}
				for _, p := range append(own, shared...) {
					if !seen[p] && !yield(p) {
						return
					}
					seen[p] = true
				}
			})
			if !slices.Equal(got, want) {
				errs = append(errs, fmt.Errorf("%s declares path parameters %v; its template has %v", where, got, want))
			}
		}
	}
	return errs
}

// pathParams returns the names of the path parameters in a parameter list; each must be
// required, as OpenAPI demands.
func pathParams(root map[string]any, list any) ([]string, error) {
	items, _ := list.([]any)
	l := loader{root: root}
	var names []string
	for i, it := range items {
		p, _, err := l.deref(it, "parameter "+strconv.Itoa(i))
		if err != nil {
			return nil, err
		}
		if p["in"] != "path" {
			continue
		}
		name, _ := p["name"].(string)
		if p["required"] != true {
			return nil, fmt.Errorf("path parameter %q is not required", name)
		}
		names = append(names, name)
	}
	return names, nil
}
