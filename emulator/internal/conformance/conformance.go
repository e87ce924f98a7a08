// Package conformance checks the emulator's answers against its published OpenAPI document: the
// operation a request reached, that the status is one the document lists for it, that the
// headers it requires are there and well formed, and that a JSON body matches the schema. The
// emulator's test binaries install it with Run, so every answer their tests provoke is checked.
package conformance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/mediagen/mediagen-emulator/emulator/internal/jsonvalue"
	"github.com/mediagen/mediagen-emulator/emulator/internal/schema"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// base is the URL the document is compiled under; it is never fetched.
const base = "https://mediagen-emulator.invalid/openapi.json"

// SlashParams are the path parameters whose values may hold slashes: model ids do (their route
// is /v1/models/{model:.+}), and so may the dashboard's file names (/_emulator/ui/{file:.*}).
// Every other parameter is one path segment.
var SlashParams = map[string]bool{"model": true, "file": true}

// EmptyParams are the slash parameters that may also be empty: /_emulator/ui/ serves the
// dashboard's page itself. Every other parameter holds at least one character.
var EmptyParams = map[string]bool{"file": true}

// Answer is one request and what the emulator answered to it.
type Answer struct {
	Method string
	Path   string // the request's path, decoded, as the router matched it
	Status int
	Header http.Header
	Body   []byte
	// Fault is the id of the fault injected into the answer, "" for none. Injected faults
	// misbehave on purpose: they may answer any status, or a body that is not JSON.
	Fault string
	// Preflight marks a CORS preflight (OPTIONS with Access-Control-Request-Method): part of
	// the browser's protocol rather than of the API, so OpenAPI documents do not describe it.
	Preflight bool
	// Evolved marks an answer given in the forward-compatibility mode (a scenario's
	// evolution), which goes beyond the document on purpose: undocumented members, headers,
	// a job status and an output type. Its status must still be documented and its JSON valid.
	Evolved bool
}

// Document is an OpenAPI document compiled for checking answers. It is safe for concurrent use.
type Document struct {
	paths []*pathItem
	// unrouted are the answers to a request no operation takes, by status: the router's 404 and
	// 405 and what the emulator answers before routing.
	unrouted map[int]*response
	problem  *jsonschema.Schema
}

type pathItem struct {
	template string
	segments []string
	ops      map[string]*operation // by method
}

type operation struct {
	id        string
	responses map[string]*response // by status, and "default"
}

type response struct {
	where   string
	headers map[string]*header
	content map[string]*jsonschema.Schema // by media type; nil schema for a body not checked
}

type header struct {
	name     string // as the document spells it
	required bool
	integer  bool // the value must be a whole number
	numeric  bool // a whole number is one of the values it may take (oneOf a number or a date)
	schema   *jsonschema.Schema
}

// allowsInteger reports whether a header's schema takes a whole number among other values.
func allowsInteger(sm map[string]any) bool {
	for _, k := range []string{"oneOf", "anyOf"} {
		alts, _ := sm[k].([]any)
		for _, a := range alts {
			if am, _ := a.(map[string]any); am["type"] == "integer" {
				return true
			}
		}
	}
	return false
}

// Load compiles a document. It fails when a reference does not resolve or a schema does not
// compile, so a document Load accepts can check every answer it describes.
func Load(doc []byte) (*Document, error) {
	var root map[string]any
	if err := json.Unmarshal(doc, &root); err != nil {
		return nil, fmt.Errorf("the document is not JSON: %w", err)
	}
	// The document leaves response objects open, so clients generated from it accept fields a
	// later version adds; answers are checked against them closed, so the emulator never sends a
	// field the document does not name.
	if comps, ok := root["components"].(map[string]any); ok {
		closeObjects(comps["schemas"])
		closeObjects(comps["responses"])
	}
	closeObjects(root["paths"])
	strict, err := json.Marshal(root)
	if err != nil {
		return nil, err
	}
	c := schema.NewCompiler()
	if err := c.AddResource(base, bytes.NewReader(strict)); err != nil {
		return nil, err
	}
	l := &loader{root: root, c: c}
	d := &Document{unrouted: map[int]*response{}}
	paths, _ := root["paths"].(map[string]any)
	for _, template := range sortedKeys(paths) {
		item, _ := paths[template].(map[string]any)
		p := &pathItem{template: template, segments: strings.Split(template, "/"), ops: map[string]*operation{}}
		for _, method := range []string{"get", "head", "post", "put", "patch", "delete", "options", "trace"} {
			raw, ok := item[method].(map[string]any)
			if !ok {
				continue
			}
			where := "/paths/" + schema.EscapePointer(template) + "/" + method
			op := &operation{id: str(raw["operationId"]), responses: map[string]*response{}}
			rs, _ := raw["responses"].(map[string]any)
			for _, status := range sortedKeys(rs) {
				r, err := l.response(rs[status], where+"/responses/"+schema.EscapePointer(status))
				if err != nil {
					return nil, err
				}
				op.responses[status] = r
			}
			p.ops[strings.ToUpper(method)] = op
		}
		d.paths = append(d.paths, p)
	}
	for status, name := range map[int]string{404: "NotFound", 405: "MethodNotAllowed", 400: "InvalidTenant", 429: "TooManyTenants", 503: "ShuttingDown"} {
		r, err := l.response(map[string]any{"$ref": "#/components/responses/" + name}, "unrouted")
		if err != nil {
			return nil, fmt.Errorf("the answers to unrouted requests: %w", err)
		}
		d.unrouted[status] = r
	}
	if d.problem, err = l.schema("/components/schemas/Problem"); err != nil {
		return nil, err
	}
	return d, nil
}

// closeObjects gives every object schema with properties and no rule for other members
// "additionalProperties": false.
func closeObjects(v any) {
	switch n := v.(type) {
	case map[string]any:
		_, hasProps := n["properties"].(map[string]any)
		_, hasAdditional := n["additionalProperties"]
		_, hasUnevaluated := n["unevaluatedProperties"]
		if n["type"] == "object" && hasProps && !hasAdditional && !hasUnevaluated {
			n["additionalProperties"] = false
		}
		for _, x := range n {
			closeObjects(x)
		}
	case []any:
		for _, x := range n {
			closeObjects(x)
		}
	}
}

// loader resolves the document's references and compiles its schemas.
type loader struct {
	root map[string]any
	c    *jsonschema.Compiler
}

// deref follows $ref (within the document) until it reaches an object.
func (l *loader) deref(v any, where string) (map[string]any, string, error) {
	for range 16 {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, where, fmt.Errorf("%s: not an object", where)
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return m, where, nil
		}
		ptr, ok := strings.CutPrefix(ref, "#")
		if !ok {
			return nil, where, fmt.Errorf("%s: $ref %q leaves the document", where, ref)
		}
		target, err := schema.Lookup(l.root, ptr)
		if err != nil {
			return nil, where, fmt.Errorf("%s: $ref %q: %w", where, ref, err)
		}
		v, where = target, ptr
	}
	return nil, where, fmt.Errorf("%s: too many $ref hops", where)
}

func (l *loader) response(v any, where string) (*response, error) {
	m, at, err := l.deref(v, where)
	if err != nil {
		return nil, err
	}
	r := &response{where: at, headers: map[string]*header{}, content: map[string]*jsonschema.Schema{}}
	hs, _ := m["headers"].(map[string]any)
	for _, name := range sortedKeys(hs) {
		h, hat, err := l.deref(hs[name], at+"/headers/"+schema.EscapePointer(name))
		if err != nil {
			return nil, err
		}
		sm, _ := h["schema"].(map[string]any)
		sch, err := l.schema(hat + "/schema")
		if err != nil {
			return nil, err
		}
		r.headers[http.CanonicalHeaderKey(name)] = &header{name: name, required: h["required"] == true, integer: sm["type"] == "integer", numeric: allowsInteger(sm), schema: sch}
	}
	content, _ := m["content"].(map[string]any)
	for _, mt := range sortedKeys(content) {
		r.content[mt] = nil
		if !isJSON(mt) {
			continue
		}
		if r.content[mt], err = l.schema(at + "/content/" + schema.EscapePointer(mt) + "/schema"); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (l *loader) schema(ptr string) (*jsonschema.Schema, error) {
	if _, err := schema.Lookup(l.root, ptr); err != nil {
		return nil, err
	}
	var frag strings.Builder
	for _, tok := range strings.Split(ptr, "/")[1:] {
		frag.WriteString("/" + url.PathEscape(tok))
	}
	s, err := l.c.Compile(base + "#" + frag.String())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ptr, err)
	}
	return s, nil
}

// Check reports how an answer departs from the document, or nil when it conforms.
func (d *Document) Check(a Answer) error {
	if a.Status == 0 || a.Preflight {
		// The handler wrote nothing (its client left before there was anything to say), or the
		// answer is a preflight.
		return nil
	}
	if a.Fault != "" && !json.Valid(a.Body) && a.Method != http.MethodHead {
		return nil // a malformed or truncated body, injected on purpose
	}
	op, where := d.find(a.Method, a.Path)
	var r *response
	switch {
	case op != nil:
		r = op.responses[strconv.Itoa(a.Status)]
		where = a.Method + " " + where + " (" + op.id + ")"
	default:
		r = d.unrouted[a.Status]
		where = a.Method + " " + a.Path + " (no operation)"
	}
	if r == nil {
		if a.Fault != "" {
			return d.checkInjected(a)
		}
		return fmt.Errorf("%s: status %d is not documented", where, a.Status)
	}
	if a.Evolved {
		if mt, _, _ := mime.ParseMediaType(a.Header.Get("Content-Type")); isJSON(mt) && a.Method != http.MethodHead && !json.Valid(a.Body) {
			return fmt.Errorf("%s answered %d in the evolution mode with a body that is not JSON", where, a.Status)
		}
		return nil
	}
	var errs []error
	for _, key := range sortedKeys(r.headers) {
		h := r.headers[key]
		v := a.Header.Get(key)
		if v == "" {
			if h.required {
				errs = append(errs, fmt.Errorf("header %s is required but missing", h.name))
			}
			continue
		}
		if err := h.check(v); err != nil {
			errs = append(errs, fmt.Errorf("header %s: %q: %v", h.name, v, err))
		}
	}
	if a.Method != http.MethodHead {
		errs = append(errs, r.checkBody(a))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s answered %d, against %s:\n%w", where, a.Status, r.where, err)
	}
	return nil
}

// checkInjected checks an injected error whose status the operation does not list: any status
// may be injected, but the body is still a problem.
func (d *Document) checkInjected(a Answer) error {
	mt, _, _ := mime.ParseMediaType(a.Header.Get("Content-Type"))
	if mt != "application/problem+json" {
		return fmt.Errorf("%s %s: injected %d answered %q, not a problem", a.Method, a.Path, a.Status, mt)
	}
	if a.Method == http.MethodHead {
		return nil
	}
	return validate(d.problem, a.Body)
}

func (r *response) checkBody(a Answer) error {
	if len(r.content) == 0 {
		if len(a.Body) > 0 {
			return fmt.Errorf("a body of %d bytes where none is documented", len(a.Body))
		}
		return nil
	}
	ct := a.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return fmt.Errorf("Content-Type %q does not parse", ct)
	}
	sch, ok := r.content[mt]
	if !ok {
		return fmt.Errorf("Content-Type %q is not one of %v", mt, sortedKeys(r.content))
	}
	if sch == nil {
		return nil // media, not JSON: its type is all the document says
	}
	return validate(sch, a.Body)
}

func validate(sch *jsonschema.Schema, body []byte) error {
	var v any
	if err := jsonvalue.Decode(body, &v); err != nil {
		return fmt.Errorf("the body is not JSON: %v", err)
	}
	return conforms(sch, v, "the body does not match the schema")
}

// conforms validates v against sch. A failure lists the innermost causes, one a line, after
// what (a line of its own), or alone when what is "".
func conforms(sch *jsonschema.Schema, v any, what string) error {
	var ve *jsonschema.ValidationError
	if err := sch.Validate(v); !errors.As(err, &ve) {
		return err
	}
	var out []string
	for _, e := range schema.Leaves(ve) {
		out = append(out, fmt.Sprintf("  at %q: %s (%s)", e.InstanceLocation, e.Message, e.KeywordLocation))
	}
	if what == "" {
		return errors.New(strings.TrimSpace(strings.Join(out, "\n")))
	}
	return fmt.Errorf("%s:\n%s", what, strings.Join(out, "\n"))
}

func (h *header) check(v string) error {
	var value any = v
	_, err := strconv.ParseInt(v, 10, 64)
	switch {
	case h.integer && err != nil:
		return errors.New("not an integer")
	case err == nil && (h.integer || h.numeric):
		value = json.Number(v)
	}
	return conforms(h.schema, value, "")
}

// find returns the operation that takes a request, and the path template it matched; nil when
// no path matches or the path does not take the method. Literal segments beat parameters, as
// OpenAPI wants; a slash parameter at the end of a template takes the rest of the path.
func (d *Document) find(method, path string) (*operation, string) {
	segs := strings.Split(path, "/")
	var best *pathItem
	bestScore := -1
	for _, p := range d.paths {
		score, ok := p.match(segs)
		if ok && score > bestScore {
			best, bestScore = p, score
		}
	}
	if best == nil {
		return nil, path
	}
	return best.ops[method], best.template
}

// match reports whether the path's segments fit the template, and how many literal segments
// the fit used.
func (p *pathItem) match(segs []string) (int, bool) {
	literals := 0
	for i, t := range p.segments {
		if i >= len(segs) {
			return 0, false
		}
		name, isParam := strings.CutPrefix(t, "{")
		if !isParam {
			if t != segs[i] {
				return 0, false
			}
			literals++
			continue
		}
		name = strings.TrimSuffix(name, "}")
		if i == len(p.segments)-1 && SlashParams[name] {
			return literals, EmptyParams[name] || strings.Join(segs[i:], "/") != ""
		}
		if segs[i] == "" {
			return 0, false
		}
	}
	return literals, len(segs) == len(p.segments)
}

func isJSON(mediaType string) bool {
	return mediaType == "application/json" || strings.HasSuffix(mediaType, "+json")
}

func str(v any) string { s, _ := v.(string); return s }

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
