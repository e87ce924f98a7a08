// Command clienttypes writes the wire types of the Python and Node test helpers from the
// emulator's OpenAPI document, so that the helpers' types have every property the document has:
//
//	go run ./scripts/clienttypes            # from the repository root
//
// It writes clients/python/src/mediagen_emulator/types.py (TypedDicts) and
// clients/node/types.d.ts (TypeScript declarations), one type per schema of
// components.schemas. A test fails when a committed file differs from what the document
// generates.
package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "clienttypes:", err)
		os.Exit(1)
	}
}

// Where the document and the generated files live, relative to the repository root.
const (
	docPath    = "docs/openapi.json"
	pythonPath = "clients/python/src/mediagen_emulator/types.py"
	tsPath     = "clients/node/types.d.ts"
)

func run(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("clienttypes", flag.ContinueOnError)
	fs.SetOutput(stderr)
	root := fs.String("root", ".", "the repository root")
	if err := fs.Parse(args); err != nil {
		return err
	}
	doc, err := os.ReadFile(filepath.Join(*root, docPath))
	if err != nil {
		return err
	}
	py, ts, err := generate(doc)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*root, pythonPath), py, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(*root, tsPath), ts, 0o644)
}

// schema is the part of a JSON Schema the generators read.
type schema struct {
	Ref         string          `json:"$ref"`
	Type        typeList        `json:"type"`
	Description string          `json:"description"`
	Enum        []any           `json:"enum"`
	Items       *schema         `json:"items"`
	Properties  properties      `json:"properties"`
	Required    []string        `json:"required"`
	Additional  json.RawMessage `json:"additionalProperties"`
	OneOf       []*schema       `json:"oneOf"`
	AnyOf       []*schema       `json:"anyOf"`
	AllOf       []*schema       `json:"allOf"`
}

// typeList is a schema's type, written in the document either as a string or as a list.
type typeList []string

func (t *typeList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*t = typeList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return err
	}
	*t = many
	return nil
}

// property is one named property of an object schema, or one schema of components.schemas.
type property struct {
	Name   string
	Schema *schema
}

// properties keeps an object's properties (or the document's schemas) in the document's order,
// which is the order readers of the generated files see.
type properties []property

func (p *properties) UnmarshalJSON(b []byte) error {
	entries, err := orderedObject(b)
	if err != nil {
		return err
	}
	for _, e := range entries {
		var s schema
		if err := json.Unmarshal(e.value, &s); err != nil {
			return fmt.Errorf("%s: %w", e.key, err)
		}
		*p = append(*p, property{e.key, &s})
	}
	return nil
}

type entry struct {
	key   string
	value json.RawMessage
}

// orderedObject splits a JSON object into its members, in order.
func orderedObject(b []byte) ([]entry, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var out []entry
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, entry{tok.(string), v})
	}
	return out, nil
}

// readSchemas returns the document's components.schemas in the document's order.
func readSchemas(doc []byte) (properties, error) {
	var top struct {
		Components struct {
			Schemas properties `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &top); err != nil {
		return nil, err
	}
	if top.Components.Schemas == nil {
		return nil, errors.New("the document has no components.schemas")
	}
	return top.Components.Schemas, nil
}

// generate returns types.py and types.d.ts for a document.
func generate(doc []byte) (python, typescript []byte, err error) {
	schemas, err := readSchemas(doc)
	if err != nil {
		return nil, nil, err
	}
	python, err = generatePython(schemas)
	if err != nil {
		return nil, nil, err
	}
	return python, generateTypeScript(schemas), nil
}

// language is how a generated file spells the document's types.
type language struct {
	// scalars names the JSON types other than array and object; unknown is any other type.
	scalars map[string]string
	unknown string
	// array is a list of item, object an object schema (with or without properties) at indent,
	// enum a choice of JSON literals, and union a choice of types.
	array  func(item string) string
	object func(s *schema, indent string) string
	enum   func(literals []string) string
	union  func(types []string) string
}

// typeOf renders a schema as a type expression at indent.
func (l language) typeOf(s *schema, indent string) string {
	switch {
	case s.Ref != "":
		return refName(s.Ref)
	case only(s) != nil:
		return l.typeOf(only(s), indent)
	case len(s.OneOf) > 0:
		return l.unionOf(s.OneOf, indent)
	case len(s.AnyOf) > 0:
		return l.unionOf(s.AnyOf, indent)
	case len(s.Enum) > 0:
		var parts []string
		for _, v := range s.Enum {
			q, _ := json.Marshal(v)
			parts = append(parts, string(q))
		}
		return l.enum(parts)
	}
	if len(s.Type) == 0 {
		return l.unknown
	}
	var parts []string
	for _, t := range s.Type {
		switch t {
		case "array":
			item := l.unknown
			if s.Items != nil {
				item = l.typeOf(s.Items, indent)
			}
			parts = append(parts, l.array(item))
		case "object":
			parts = append(parts, l.object(s, indent))
		default:
			parts = append(parts, cmp.Or(l.scalars[t], l.unknown))
		}
	}
	return l.union(parts)
}

func (l language) unionOf(of []*schema, indent string) string {
	var parts []string
	for _, s := range of {
		parts = append(parts, l.typeOf(s, indent))
	}
	return l.union(parts)
}

// refName is the schema name a $ref points at.
func refName(ref string) string {
	return ref[strings.LastIndexByte(ref, '/')+1:]
}

// isObject reports whether a schema is an object with declared properties: a named type of its
// own rather than an alias.
func isObject(s *schema) bool {
	return slices.Equal(s.Type, typeList{"object"}) && len(s.Properties) > 0
}

// openObject reports whether an object schema allows properties beyond the declared ones and
// says so (additionalProperties true or a schema), which the generated types then allow too.
func openObject(s *schema) bool {
	a := bytes.TrimSpace(s.Additional)
	return len(a) > 0 && !bytes.Equal(a, []byte("false"))
}

// only returns the single schema of an allOf that wraps one schema (to add a description),
// or nil.
func only(s *schema) *schema {
	if len(s.AllOf) == 1 && s.Ref == "" && len(s.Type) == 0 {
		return s.AllOf[0]
	}
	return nil
}

// wrap breaks text into lines of at most width characters (longer words stay whole).
func wrap(text string, width int) []string {
	var lines []string
	for para := range strings.SplitSeq(text, "\n") {
		line := ""
		for _, w := range strings.Fields(para) {
			if line != "" && len(line)+1+len(w) > width {
				lines = append(lines, line)
				line = ""
			}
			if line != "" {
				line += " "
			}
			line += w
		}
		lines = append(lines, line)
	}
	return lines
}

func description(s *schema) string {
	if s.Description != "" {
		return s.Description
	}
	if o := only(s); o != nil {
		return o.Description
	}
	return ""
}
