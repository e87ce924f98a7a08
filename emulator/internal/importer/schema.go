package importer

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/mediagen/mediagen-emulator/emulator/internal/schema"
)

// inputSchema is a model's input schema as the catalog will hold it, with what was done to it.
type inputSchema struct {
	root  *node
	notes []string // what the importer changed or supplied, for comments in the file
	// bodyExamples are examples the OpenAPI document gives beside the schema, not in it.
	bodyExamples []*node
}

// modelSchema is the input schema of a model's details: from its OpenAPI document, else its
// input_schema.
func modelSchema(details *node) (*inputSchema, error) {
	s, err := extractSchema(details.get("openapi"))
	if is := details.get("input_schema"); err != nil && is != nil && is.kind == kObject {
		return &inputSchema{root: is.clone(), notes: []string{"schema read from input_schema: " + err.Error()}}, nil
	}
	return s, err
}

// extractSchema finds the request body schema of a model's OpenAPI document and makes it
// self-contained: references into the schema are made relative to it, references elsewhere in
// the document are copied into $defs, so the catalog can load it on its own.
func extractSchema(openapi *node) (*inputSchema, error) {
	if openapi == nil || openapi.kind != kObject {
		return nil, errors.New("the model has no openapi document")
	}
	loc, media, err := requestSchemaLocation(openapi)
	if err != nil {
		return nil, err
	}
	out := &inputSchema{}
	if media != nil {
		if ex := media.get("example"); ex != nil {
			out.bodyExamples = append(out.bodyExamples, ex)
		}
		if exs := media.get("examples"); exs != nil && exs.kind == kObject {
			for _, e := range exs.vals {
				if v := e.get("value"); v != nil {
					out.bodyExamples = append(out.bodyExamples, v)
				}
			}
		}
	}
	// A body schema that is only a reference (as to components/schemas/Input) stands for its
	// target.
	for range 8 {
		s := openapi.pointer(loc)
		if s == nil || s.kind != kObject || len(s.keys) != 1 || s.keys[0] != "$ref" {
			break
		}
		ref := s.str("$ref")
		if !strings.HasPrefix(ref, "#/") {
			break
		}
		loc = ref[1:]
	}
	src := openapi.pointer(loc)
	if src == nil || src.kind != kObject {
		return nil, fmt.Errorf("the request body schema at %s is not an object", loc)
	}
	lc := &localizer{doc: openapi, defLoc: map[string]string{}, used: map[string]bool{}}
	root := src.clone()
	if existing := root.get("$defs"); existing != nil && existing.kind == kObject {
		for _, k := range existing.keys {
			lc.used[k] = true
		}
	}
	lc.walk(root, loc, loc)
	for i := 0; i < len(lc.pending); i++ {
		p := lc.pending[i]
		lc.walk(p.n, p.loc, loc)
	}
	if lc.err != nil {
		return nil, lc.err
	}
	if len(lc.pending) > 0 {
		defs := root.get("$defs")
		if defs == nil || defs.kind != kObject {
			defs = &node{kind: kObject}
			root.set("$defs", defs)
		}
		for _, p := range lc.pending {
			defs.set(p.name, p.n)
		}
		out.notes = append(out.notes, fmt.Sprintf("%d definitions referenced from elsewhere in the OpenAPI document were copied into $defs", len(lc.pending)))
	}
	if lc.droppedIDs > 0 {
		out.notes = append(out.notes, "$id keywords were dropped: references are local to the model")
	}
	if s := root.get("$schema"); s != nil && (s.kind != kString || s.text != schema.Draft202012) {
		root.remove("$schema")
		out.notes = append(out.notes, "a $schema other than draft 2020-12 was dropped")
	}
	if root.get("type") == nil && root.get("properties") != nil {
		prepend(root, "type", &node{kind: kString, text: "object"})
		out.notes = append(out.notes, "type: object was added (the schema describes an object without saying so)")
	}
	out.root = root
	return out, nil
}

// requestSchemaLocation finds the one request body's JSON schema: its JSON Pointer and the
// media type object holding it.
func requestSchemaLocation(doc *node) (string, *node, error) {
	paths := doc.get("paths")
	if paths == nil || paths.kind != kObject {
		return "", nil, errors.New("the openapi document has no paths")
	}
	for i, p := range paths.keys {
		item := paths.vals[i]
		if item.kind != kObject {
			continue
		}
		for j, method := range item.keys {
			op := item.vals[j]
			body := op.get("requestBody")
			if body == nil {
				continue
			}
			bodyLoc := "/paths/" + schema.EscapePointer(p) + "/" + schema.EscapePointer(method) + "/requestBody"
			if ref := body.str("$ref"); strings.HasPrefix(ref, "#/") {
				bodyLoc = ref[1:]
				body = doc.pointer(bodyLoc)
			}
			content := body.get("content")
			if content == nil || content.kind != kObject {
				continue
			}
			for k, mt := range content.keys {
				if mt == "application/json" || strings.HasSuffix(mt, "+json") || (k == len(content.keys)-1 && strings.Contains(mt, "json")) {
					media := content.vals[k]
					if media.get("schema") == nil {
						continue
					}
					return bodyLoc + "/content/" + schema.EscapePointer(mt) + "/schema", media, nil
				}
			}
		}
	}
	return "", nil, errors.New("the openapi document has no JSON request body")
}

func prepend(n *node, k string, v *node) {
	n.remove(k)
	n.keys = append([]string{k}, n.keys...)
	n.vals = append([]*node{v}, n.vals...)
	n.reindex()
}

// localizer rewrites references while walking subschema positions.
type localizer struct {
	doc        *node
	defLoc     map[string]string // document location → $defs name
	used       map[string]bool   // $defs names taken
	pending    []pendingDef
	droppedIDs int
	copied     int // nodes copied into $defs so far
	err        error
}

// maxCopiedNodes bounds what references may copy into one schema, so definitions that refer
// to large parts of a document many times over cannot blow it up.
const maxCopiedNodes = 200_000

type pendingDef struct {
	name string
	loc  string
	n    *node
}

// walk rewrites the references in schema n, which sits at location at of the document; the
// input schema itself sits at root.
func (lc *localizer) walk(n *node, at, root string) {
	if n == nil || n.kind != kObject {
		return
	}
	if n.get("$id") != nil {
		n.remove("$id")
		lc.droppedIDs++
	}
	for i, k := range n.keys {
		child, childAt := n.vals[i], at+"/"+schema.EscapePointer(k)
		switch {
		case k == "$ref" || k == "$dynamicRef":
			if child.kind == kString {
				child.text = lc.rewrite(child.text, root)
			}
		case schema.KeywordHolds(k) == schema.HoldsSchema:
			lc.walk(child, childAt, root)
		case schema.KeywordHolds(k) == schema.HoldsSchemaList:
			if child.kind == kArray {
				for j, sub := range child.vals {
					lc.walk(sub, childAt+"/"+strconv.Itoa(j), root)
				}
			}
		case schema.KeywordHolds(k) == schema.HoldsSchemaMap:
			if child.kind == kObject {
				for j, name := range child.keys {
					lc.walk(child.vals[j], childAt+"/"+schema.EscapePointer(name), root)
				}
			}
		}
	}
}

func (lc *localizer) rewrite(ref, root string) string {
	if ref == "#" {
		ref = "#/"
	}
	if !strings.HasPrefix(ref, "#/") && ref != "#/" {
		return ref // a plain-name anchor, or a reference the catalog will refuse by name
	}
	target := ref[1:]
	if target == "/" {
		target = ""
	}
	if target == root {
		return "#"
	}
	if strings.HasPrefix(target, root+"/") {
		return "#" + target[len(root):]
	}
	best := ""
	for loc := range lc.defLoc {
		if (target == loc || strings.HasPrefix(target, loc+"/")) && len(loc) > len(best) {
			best = loc
		}
	}
	if best != "" {
		return "#/$defs/" + schema.EscapePointer(lc.defLoc[best]) + target[len(best):]
	}
	src := lc.doc.pointer(target)
	if src == nil {
		if lc.err == nil {
			lc.err = fmt.Errorf("reference %q does not resolve in the openapi document", ref)
		}
		return ref
	}
	lc.copied += src.count()
	if len(lc.pending) >= 1000 || lc.copied > maxCopiedNodes {
		if lc.err == nil {
			lc.err = errors.New("the schema references too many or too large definitions")
		}
		return ref
	}
	base := target[strings.LastIndexByte(target, '/')+1:]
	base = schema.UnescapePointer(base)
	if base == "" {
		base = "def"
	}
	name := base
	for i := 2; lc.used[name]; i++ {
		name = base + "_" + strconv.Itoa(i)
	}
	lc.used[name] = true
	lc.defLoc[target] = name
	lc.pending = append(lc.pending, pendingDef{name: name, loc: target, n: src.clone()})
	return "#/$defs/" + schema.EscapePointer(name)
}

// prop is what the importer reads of one top-level input property, references followed.
type prop struct {
	name     string
	schema   *node
	typ      string
	enum     []*node
	def      *node
	min, max *float64
	minLen   int
	maxLen   int // 0: none
	format   string
	required bool
}

// properties lists the schema's top-level properties in order, following one local $ref.
func properties(root *node) []prop {
	ps := root.get("properties")
	if ps == nil || ps.kind != kObject {
		return nil
	}
	required := map[string]bool{}
	if req := root.get("required"); req != nil && req.kind == kArray {
		for _, r := range req.vals {
			required[r.text] = true
		}
	}
	var out []prop
	for i, name := range ps.keys {
		s := ps.vals[i]
		if ref := s.str("$ref"); strings.HasPrefix(ref, "#/") {
			if target := root.pointer(ref[1:]); target != nil && target.kind == kObject {
				merged := target.clone()
				for j, k := range s.keys {
					if k != "$ref" {
						merged.set(k, s.vals[j])
					}
				}
				s = merged
			}
		}
		p := prop{name: name, schema: s, typ: s.str("type"), def: s.get("default"), format: s.str("format"), required: required[name]}
		if e := s.get("enum"); e != nil && e.kind == kArray {
			p.enum = e.vals
		}
		if p.typ == "" && len(p.enum) > 0 && p.enum[0].kind == kString {
			p.typ = "string"
		}
		p.min = number(s, "minimum")
		if v := number(s, "exclusiveMinimum"); v != nil && p.min == nil {
			x := *v + 1
			p.min = &x
		}
		p.max = number(s, "maximum")
		if v := number(s, "exclusiveMaximum"); v != nil && p.max == nil {
			x := *v - 1
			p.max = &x
		}
		if v := number(s, "minLength"); v != nil {
			p.minLen = int(*v)
		}
		if v := number(s, "maxLength"); v != nil {
			p.maxLen = int(*v)
		}
		out = append(out, p)
	}
	return out
}

func number(n *node, k string) *float64 {
	v := n.get(k)
	if v == nil || v.kind != kNumber {
		return nil
	}
	f, err := strconv.ParseFloat(v.text, 64)
	if err != nil || math.IsInf(f, 0) {
		return nil
	}
	return &f
}

// synthesizeExample builds an input from the required properties' examples, defaults and
// bounds; the caller checks it against the schema.
func synthesizeExample(root *node) *node {
	ex := &node{kind: kObject}
	for _, p := range properties(root) {
		if !p.required {
			continue
		}
		ex.set(p.name, sampleValue(p))
	}
	return ex
}

func sampleValue(p prop) *node {
	if exs := p.schema.get("examples"); exs != nil && exs.kind == kArray && len(exs.vals) > 0 {
		return exs.vals[0].clone()
	}
	if e := p.schema.get("example"); e != nil {
		return e.clone()
	}
	if p.def != nil {
		return p.def.clone()
	}
	if c := p.schema.get("const"); c != nil {
		return c.clone()
	}
	if len(p.enum) > 0 {
		return p.enum[0].clone()
	}
	switch p.typ {
	case "integer", "number":
		v := 1.0
		if p.min != nil {
			v = math.Ceil(*p.min)
		} else if p.max != nil && *p.max < 1 {
			v = math.Floor(*p.max)
		}
		return &node{kind: kNumber, text: strconv.FormatFloat(v, 'f', -1, 64)}
	case "boolean":
		return &node{kind: kBool, text: "false"}
	case "array":
		return &node{kind: kArray}
	case "object":
		return &node{kind: kObject}
	}
	switch p.format {
	case "uri", "url", "iri":
		return &node{kind: kString, text: "https://example.com/input.png"}
	case "email":
		return &node{kind: kString, text: "someone@example.com"}
	}
	s := "a lighthouse on a cliff at dusk"
	for len(s) < p.minLen {
		s += " " + s
	}
	if p.maxLen > 0 && len(s) > p.maxLen {
		s = s[:p.maxLen]
	}
	return &node{kind: kString, text: s}
}
