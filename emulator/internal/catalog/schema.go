package catalog

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"gopkg.in/yaml.v3"
)

const (
	defaultRun          = time.Second
	defaultQueueTimeout = 10 * time.Minute
)

// Draft202012 is the JSON Schema dialect of every input schema: the only $schema a catalog
// accepts.
const Draft202012 = "https://json-schema.org/draft/2020-12/schema"

// errNoRemoteRefs is what every attempt of a schema to load a URL or file gets.
var errNoRemoteRefs = errors.New("schemas may not load files or URLs; only local references (#/...) are allowed")

// NewCompiler returns a JSON Schema compiler set up the one way the emulator uses: draft
// 2020-12, formats asserted, and no loading of anything outside the schema itself.
func NewCompiler() *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	c.LoadURL = func(string) (io.ReadCloser, error) { return nil, errNoRemoteRefs }
	return c
}

// schemaURL names every input schema while it compiles; each has a compiler of its own, and a
// name that cannot resolve keeps references from reaching anything real.
const schemaURL = "https://mediagen-emulator.invalid/schemas/input.json"

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
	schema *jsonschema.Schema
	fast   *verdict // says which inputs are certainly valid without the library; set with schema
	err    error
}

// get returns the compiled schema, compiling it the first time, and the verdict derived from it.
func (c *compiledSchema) get() (*jsonschema.Schema, *verdict, error) {
	c.once.Do(func() {
		if c.schema == nil {
			c.schema, c.err = compileRaw(c.raw)
		}
		if c.err == nil {
			c.fast = newVerdict(c.schema)
		}
	})
	return c.schema, c.fast, c.err
}

// compileRaw compiles a schema's JSON the one way the emulator does.
func compileRaw(raw json.RawMessage) (*jsonschema.Schema, error) {
	c := NewCompiler()
	if err := c.AddResource(schemaURL, bytes.NewReader(raw)); err != nil {
		return nil, err
	}
	return c.Compile(schemaURL)
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
	dec := json.NewDecoder(bytes.NewReader(doc.Raw))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		r.Node(n, "model %q: input_schema must be a mapping", m.ID)
		return false
	}
	if root["type"] != "object" {
		r.Node(n, "model %q: input_schema must have type: object (an input is a JSON object)", m.ID)
		return false
	}
	if s, ok := root["$schema"]; ok && s != Draft202012 {
		r.At(doc.LineOf("/$schema"), "model %q: $schema must be %s or absent", m.ID, Draft202012)
		return false
	}
	var refPlaces []string
	if !checkRefs(r, m, doc, root, "", &refPlaces) {
		return false
	}
	refs := map[string]string{}
	for _, ptr := range refPlaces {
		refs[ptr], _ = lookup(root, ptr).(string)
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
	schema, err := compileRaw(doc.Raw)
	if err != nil {
		reportCompileError(r, m, doc, n, err)
		return false
	}
	valid := len(examples) > 0
	if !valid {
		r.Node(n, "model %q: input_schema has no examples; give at least one whole valid input", m.ID)
	}
	for i, ex := range examples {
		if err := schema.Validate(ex); err != nil {
			valid = false
			for _, fe := range Violations(err) {
				r.At(doc.LineOf(fmt.Sprintf("/examples/%d", i)), "model %q: example %d is not valid: %s: %s", m.ID, i, orRoot(fe.Pointer), fe.Message)
			}
			continue
		}
		raw, _ := json.Marshal(ex)
		m.Examples = append(m.Examples, raw)
	}
	m.input = &compiledSchema{raw: doc.Raw, properties: m.Properties, examples: m.Examples, refs: refs, schema: schema}
	if valid {
		cache.put(key, m.input)
	}
	return true
}

func orRoot(ptr string) string {
	if ptr == "" {
		return "(the input)"
	}
	return ptr
}

// Holding says what a schema keyword's value holds, for walks that must visit subschemas and
// nothing else (in data such as examples, enum or default, "$ref" is just a key).
type Holding int

// What a keyword's value may hold.
const (
	HoldsData       Holding = iota // examples, enum, const, default, ...
	HoldsSchema                    // one subschema (items, not, additionalProperties, ...)
	HoldsSchemaList                // a list of them (allOf, anyOf, oneOf, prefixItems)
	HoldsSchemaMap                 // a map of names to them (properties, $defs, ...)
)

var keywordHolds = map[string]Holding{
	"additionalProperties": HoldsSchema, "items": HoldsSchema, "contains": HoldsSchema, "propertyNames": HoldsSchema,
	"if": HoldsSchema, "then": HoldsSchema, "else": HoldsSchema, "not": HoldsSchema, "unevaluatedItems": HoldsSchema,
	"unevaluatedProperties": HoldsSchema, "additionalItems": HoldsSchema, "contentSchema": HoldsSchema,
	"allOf": HoldsSchemaList, "anyOf": HoldsSchemaList, "oneOf": HoldsSchemaList, "prefixItems": HoldsSchemaList,
	"properties": HoldsSchemaMap, "patternProperties": HoldsSchemaMap, "$defs": HoldsSchemaMap, "definitions": HoldsSchemaMap,
	"dependentSchemas": HoldsSchemaMap,
}

// KeywordHolds says what the value of a schema keyword holds.
func KeywordHolds(keyword string) Holding { return keywordHolds[keyword] }

// openAPISchemaPointer is where a model's input schema sits inside its OpenAPI document.
func openAPISchemaPointer(m *Model) string {
	return "#/paths/" + escapePointer("/"+m.ID) + "/post/requestBody/content/application~1json/schema"
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

// lookup follows a JSON Pointer ("" or "/a/0/b") through decoded JSON.
func lookup(v any, ptr string) any {
	if ptr == "" {
		return v
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			v = x[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// checkRefs refuses every reference that leaves the schema, and $id, walking only where
// subschemas live; the compiler would refuse them too, but this names the line. It collects the
// pointers of the references it passes in refs.
func checkRefs(r *Reporter, m *Model, doc *jsonDoc, v any, ptr string, refs *[]string) bool {
	schema, isObject := v.(map[string]any)
	if !isObject {
		return true
	}
	ok := true
	for _, k := range sortedKeys(schema) {
		child, at := schema[k], ptr+"/"+escapePointer(k)
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
		case KeywordHolds(k) == HoldsSchema:
			ok = checkRefs(r, m, doc, child, at, refs) && ok
		case KeywordHolds(k) == HoldsSchemaList:
			list, _ := child.([]any)
			for i, sub := range list {
				ok = checkRefs(r, m, doc, sub, fmt.Sprintf("%s/%d", at, i), refs) && ok
			}
		case KeywordHolds(k) == HoldsSchemaMap:
			named, _ := child.(map[string]any)
			for _, name := range sortedKeys(named) {
				ok = checkRefs(r, m, doc, named[name], at+"/"+escapePointer(name), refs) && ok
			}
		}
	}
	return ok
}

func reportCompileError(r *Reporter, m *Model, doc *jsonDoc, n *yaml.Node, err error) {
	var se *jsonschema.SchemaError
	if errors.As(err, &se) {
		var ve *jsonschema.ValidationError
		if errors.As(se.Err, &ve) {
			for _, leaf := range leaves(ve) {
				r.At(doc.LineOf(leaf.InstanceLocation), "model %q: input_schema is not a valid JSON Schema: at %s: %s", m.ID, orRoot(leaf.InstanceLocation), leaf.Message)
			}
			return
		}
	}
	r.Node(n, "model %q: input_schema does not compile: %s", m.ID, schemaMessage(err))
}

// schemaMessage strips the library's prefixes and our invented URL from a compile error.
func schemaMessage(err error) string {
	msg := err.Error()
	msg = strings.ReplaceAll(msg, "jsonschema: ", "")
	if i := strings.Index(msg, "compilation failed: "); i >= 0 {
		msg = msg[i+len("compilation failed: "):]
	}
	for {
		i := strings.Index(msg, "https://mediagen-emulator.invalid/schemas/")
		if i < 0 {
			break
		}
		j := strings.IndexAny(msg[i:], "#' \"")
		if j < 0 {
			j = len(msg) - i
		}
		msg = msg[:i] + msg[i+j:]
	}
	return msg
}

// Violation is one reason an input fails its schema, located by a JSON Pointer into the input.
type Violation struct {
	Pointer string
	Message string
}

// Violations lists the leaf causes of a validation error, each once, in a stable order, and at
// most MaxViolations of them.
func Violations(err error) []Violation {
	var vl violationList
	if errors.As(err, &vl) {
		return vl[:min(len(vl), MaxViolations)]
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Violation{{Message: "is not valid"}}
	}
	var out []Violation
	seen := map[Violation]bool{}
	for _, leaf := range leaves(ve) {
		v := Violation{Pointer: leaf.InstanceLocation, Message: leaf.Message}
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
			if len(out) == MaxViolations {
				break
			}
		}
	}
	return out
}

func leaves(ve *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(ve.Causes) == 0 {
		return []*jsonschema.ValidationError{ve}
	}
	var out []*jsonschema.ValidationError
	for _, c := range ve.Causes {
		out = append(out, leaves(c)...)
	}
	return out
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
				merged := map[string]any{}
				for k, v := range target {
					merged[k] = v
				}
				for k, v := range p {
					merged[k] = v
				}
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
	return lookup(root, ref[1:])
}
