package catalog

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/mediagen/mediagen-emulator/emulator/internal/jsonvalue"
	"github.com/mediagen/mediagen-emulator/emulator/internal/schema"
)

const (
	defaultRun          = time.Second
	defaultQueueTimeout = 10 * time.Minute
)

// schemaCache shares what a schema compiles to among the models that have the same one, as the
// variants of a product often do: a compiled schema is safe for concurrent use. Only schemas
// that compiled, with examples that validate, are kept; problems are always reported per model.
type schemaCache struct {
	mu      sync.Mutex
	entries map[[sha256.Size]byte]*compiledSchema
}

// compiledSchema is one input schema as the models that have it share it. A trusted catalog
// compiles it on first use; otherwise it is compiled, and its examples checked, at load.
type compiledSchema struct {
	raw        json.RawMessage
	properties map[string]Property
	examples   []json.RawMessage
	refs       map[string]string // the JSON Pointers of its references, to the references

	once   sync.Once
	schema *schema.Schema
	err    error
}

// get returns the compiled schema, compiling it the first time.
func (c *compiledSchema) get() (*schema.Schema, error) {
	c.once.Do(func() {
		if c.schema == nil {
			c.schema, c.err = schema.Compile(c.raw)
		}
	})
	return c.schema, c.err
}

func newSchemaCache() *schemaCache {
	return &schemaCache{entries: map[[sha256.Size]byte]*compiledSchema{}}
}

func (sc *schemaCache) get(k [sha256.Size]byte) *compiledSchema {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.entries[k]
}

func (sc *schemaCache) put(k [sha256.Size]byte, c *compiledSchema) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.entries[k] = c
}

// compileSchema turns a model's input schema written in YAML into a compiled validator, and
// checks its examples against it — or, for a trusted catalog, leaves both for first use.
func compileSchema(r *Reporter, m *Model, n *yaml.Node, cache *schemaCache, trusted bool) bool {
	doc := yamlToJSON(r, n)
	if doc == nil {
		return false
	}
	key := sha256.Sum256(doc.Raw)
	if c := cache.get(key); c != nil {
		// The same schema passed every check below for another model: only its references,
		// which move with the model's place in its OpenAPI document, differ.
		m.input, m.Properties, m.Examples = c, c.properties, c.examples
		m.SchemaJSON, m.openAPISchema = c.raw, c.raw
		if len(c.refs) > 0 {
			m.openAPISchema = relocatedRefs(r, m, n, c.refs)
		}
		return true
	}
	var root map[string]any
	if err := jsonvalue.Decode(doc.Raw, &root); err != nil {
		r.Node(n, "model %q: input_schema must be a mapping", m.ID)
		return false
	}
	if root["type"] != "object" {
		r.Node(n, "model %q: input_schema must have type: object (an input is a JSON object)", m.ID)
		return false
	}
	if s, ok := root["$schema"]; ok && s != schema.Draft202012 {
		r.At(doc.LineOf("/$schema"), "model %q: $schema must be %s or absent", m.ID, schema.Draft202012)
		return false
	}
	var refPlaces []string
	if !checkRefs(r, m, doc, root, "", &refPlaces) {
		return false
	}
	refs := map[string]string{}
	for _, ptr := range refPlaces {
		ref, _ := schema.Lookup(root, ptr)
		refs[ptr], _ = ref.(string)
	}
	m.SchemaJSON, m.openAPISchema = doc.Raw, doc.Raw
	if len(refs) > 0 {
		m.openAPISchema = relocatedRefs(r, m, n, refs)
	}
	m.Properties = properties(root)
	examples, _ := root["examples"].([]any)
	if trusted {
		for _, ex := range examples {
			raw, _ := json.Marshal(ex)
			m.Examples = append(m.Examples, raw)
		}
		m.input = &compiledSchema{raw: doc.Raw, properties: m.Properties, examples: m.Examples, refs: refs}
		cache.put(key, m.input)
		return true
	}
	compiled, err := schema.Compile(doc.Raw)
	if err != nil {
		reportCompileError(r, m, doc, n, err)
		return false
	}
	valid := len(examples) > 0
	if !valid {
		r.Node(n, "model %q: input_schema has no examples; give at least one whole valid input", m.ID)
	}
	for i, ex := range examples {
		if err := compiled.Validate(ex); err != nil {
			valid = false
			for _, fe := range schema.Violations(err) {
				r.At(doc.LineOf(fmt.Sprintf("/examples/%d", i)), "model %q: example %d is not valid: %s: %s", m.ID, i, schema.OrRoot(fe.Pointer), fe.Message)
			}
			continue
		}
		raw, _ := json.Marshal(ex)
		m.Examples = append(m.Examples, raw)
	}
	m.input = &compiledSchema{raw: doc.Raw, properties: m.Properties, examples: m.Examples, refs: refs, schema: compiled}
	if valid {
		cache.put(key, m.input)
	}
	return true
}

// openAPISchemaPointer is where a model's input schema sits inside its OpenAPI document.
func openAPISchemaPointer(m *Model) string {
	return "#/paths/" + schema.EscapePointer("/"+m.ID) + "/post/requestBody/content/application~1json/schema"
}

// relocatedRefs writes the schema as it appears inside the OpenAPI document: every JSON Pointer
// reference (at refs, the places of $ref and $dynamicRef keywords) moves with the schema, while
// plain-name anchors ("#size") are document-wide and data that merely looks like a $ref stays.
func relocatedRefs(r *Reporter, m *Model, n *yaml.Node, refs map[string]string) json.RawMessage {
	base := openAPISchemaPointer(m)
	rewrite := map[string]string{}
	for ptr, ref := range refs {
		switch {
		case ref == "#":
			rewrite[ptr] = base
		case strings.HasPrefix(ref, "#/"):
			rewrite[ptr] = base + ref[1:]
		}
	}
	if doc := yamlToJSONRewriting(r, n, rewrite); doc != nil {
		return doc.Raw
	}
	return m.SchemaJSON
}

// checkRefs refuses every reference that leaves the schema, and $id, walking only where
// subschemas live; the compiler would refuse them too, but this names the line. It collects the
// pointers of the references it passes in refs.
func checkRefs(r *Reporter, m *Model, doc *jsonDoc, v any, ptr string, refs *[]string) bool {
	obj, isObject := v.(map[string]any)
	if !isObject {
		return true
	}
	ok := true
	for _, k := range sortedKeys(obj) {
		child, at := obj[k], ptr+"/"+schema.EscapePointer(k)
		switch {
		case k == "$ref" || k == "$dynamicRef":
			s, isString := child.(string)
			if isString && !strings.HasPrefix(s, "#") {
				r.At(doc.LineOf(at), "model %q: %s %q leaves the schema; only local references (#/...) are allowed", m.ID, k, s)
				ok = false
			} else if isString {
				*refs = append(*refs, at)
			}
		case k == "$id":
			r.At(doc.LineOf(at), "model %q: $id is not allowed in input schemas; references are local to the model", m.ID)
			ok = false
		case schema.KeywordHolds(k) == schema.HoldsSchema:
			ok = checkRefs(r, m, doc, child, at, refs) && ok
		case schema.KeywordHolds(k) == schema.HoldsSchemaList:
			list, _ := child.([]any)
			for i, sub := range list {
				ok = checkRefs(r, m, doc, sub, fmt.Sprintf("%s/%d", at, i), refs) && ok
			}
		case schema.KeywordHolds(k) == schema.HoldsSchemaMap:
			named, _ := child.(map[string]any)
			for _, name := range sortedKeys(named) {
				ok = checkRefs(r, m, doc, named[name], at+"/"+schema.EscapePointer(name), refs) && ok
			}
		}
	}
	return ok
}

func reportCompileError(r *Reporter, m *Model, doc *jsonDoc, n *yaml.Node, err error) {
	invalid, msg := schema.CompileProblems(err)
	for _, v := range invalid {
		r.At(doc.LineOf(v.Pointer), "model %q: input_schema is not a valid JSON Schema: at %s: %s", m.ID, schema.OrRoot(v.Pointer), v.Message)
	}
	if invalid == nil {
		r.Node(n, "model %q: input_schema does not compile: %s", m.ID, msg)
	}
}

// properties reads the top-level properties that pricing and outputs look at, following one
// local $ref so that shared definitions work.
func properties(root map[string]any) map[string]Property {
	props, _ := root["properties"].(map[string]any)
	out := make(map[string]Property, len(props))
	for name, raw := range props {
		p, _ := raw.(map[string]any)
		if ref, ok := p["$ref"].(string); ok {
			if target, ok := resolveLocal(root, ref).(map[string]any); ok {
				merged := maps.Clone(target)
				maps.Copy(merged, p)
				p = merged
			}
		}
		prop := Property{Default: p["default"]}
		prop.Type, _ = p["type"].(string)
		prop.Enum, _ = p["enum"].([]any)
		if prop.Type == "" && len(prop.Enum) > 0 {
			if _, isString := prop.Enum[0].(string); isString {
				prop.Type = "string"
			}
		}
		out[name] = prop
	}
	return out
}

func resolveLocal(root map[string]any, ref string) any {
	if !strings.HasPrefix(ref, "#/") {
		return nil
	}
	target, _ := schema.Lookup(root, ref[1:])
	return target
}
