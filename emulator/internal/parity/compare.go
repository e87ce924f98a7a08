package parity

import (
	"bytes"
	"encoding/json"
	"mime"
	"slices"
	"strconv"
	"strings"

	"github.com/mediagen/mediagen-emulator/emulator/internal/importer"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jsonvalue"
)

// MaxBody is how much of an answer's body is read: problem documents are far smaller, and a
// longer body is reported as such rather than read on. Its shape is bounded as importer.Shape
// bounds it.
const MaxBody = 64 << 10

// Headers are the answer headers compared: what client code reads from an error answer.
var Headers = []string{"Content-Type", "Retry-After", "WWW-Authenticate", "Allow"}

// Answer is one service's answer to a case's request, as far as parity reads it.
type Answer struct {
	Status int `json:"status"`
	// Header holds the compared headers the answer carried, as sent.
	Header map[string]string `json:"header,omitempty"`
	// Body is the answer's body, at most MaxBody bytes of it.
	Body string `json:"-"`
	// Cut says the body went on past MaxBody.
	Cut bool `json:"cut,omitempty"`
}

// Difference is one way the two answers to a case differ in shape: where (a JSON path into the
// answer: /status, /headers/NAME, /body, /body/MEMBER...), and what each service had there.
type Difference struct {
	Path     string `json:"path"`
	Live     string `json:"live"`
	Emulator string `json:"emulator"`
	// Known is set when --known accepts the difference.
	Known bool `json:"known,omitempty"`
}

// Compare lists how two answers differ in shape: status, the compared headers (the media
// type of Content-Type, the scheme of WWW-Authenticate, the presence of the others), whether
// the body is a JSON object, its members' paths and JSON types (array items as *), the problem
// code, and the errors' pointers and parameters. Other values are not compared.
func Compare(live, emu Answer) []Difference {
	var out []Difference
	add := func(path, l, e string) {
		if l != e {
			out = append(out, Difference{Path: path, Live: l, Emulator: e})
		}
	}
	add("/status", strconv.Itoa(live.Status), strconv.Itoa(emu.Status))
	for _, h := range Headers {
		add("/headers/"+h, headerShape(h, live.Header), headerShape(h, emu.Header))
	}
	ld, lk := document(live)
	ed, ek := document(emu)
	add("/body", lk, ek)
	if ld == nil || ed == nil {
		return out
	}
	ls, es := importer.Shape{}, importer.Shape{}
	ls.Add(ld)
	es.Add(ed)
	seen := map[string]bool{}
	for _, p := range importer.ShapePaths(ls, es) {
		l, e := orAbsent(ls.Types(p, true)), orAbsent(es.Types(p, true))
		if l != e {
			add("/body"+p, l, e)
			seen["/body"+p] = true
		}
	}
	if lc, ok := ld["code"].(string); ok {
		if ec, ok := ed["code"].(string); ok {
			add("/body/code", lc, ec)
		}
	}
	for _, m := range []string{"pointer", "parameter"} {
		path := "/body/errors/*/" + m
		if !seen[path] {
			add(path, errorValues(ld, m), errorValues(ed, m))
		}
	}
	return out
}

// headerShape is what is compared of a header: the media type of Content-Type, the scheme of
// WWW-Authenticate, whether the others are there.
func headerShape(name string, h map[string]string) string {
	v, ok := h[name]
	if !ok {
		return "absent"
	}
	switch name {
	case "Content-Type":
		if mt, _, err := mime.ParseMediaType(v); err == nil {
			return mt
		}
		return "unreadable"
	case "WWW-Authenticate":
		scheme, _, _ := strings.Cut(strings.TrimSpace(v), " ")
		return strings.ToLower(scheme)
	}
	return "present"
}

// document reads an answer's body as a JSON object, and says what kind of body it is.
func document(a Answer) (map[string]any, string) {
	switch {
	case a.Cut:
		return nil, "a body over 64 KiB, not read"
	case strings.TrimSpace(a.Body) == "":
		return nil, "no body"
	}
	var doc map[string]any
	if err := jsonvalue.Decode([]byte(a.Body), &doc); err != nil || doc == nil {
		if json.Valid([]byte(a.Body)) {
			return nil, "JSON, not an object"
		}
		return nil, "not JSON"
	}
	return doc, "a JSON object"
}

// errorValues lists the distinct values of a member of the problem's errors, sorted, as one
// string ("" when there are none).
func errorValues(doc map[string]any, member string) string {
	items, _ := doc["errors"].([]any)
	var vals []string
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			if s, ok := m[member].(string); ok {
				vals = append(vals, s)
			}
		}
	}
	slices.Sort(vals)
	vals = slices.Compact(vals)
	if len(vals) == 0 {
		return "(none)"
	}
	var b bytes.Buffer
	for i, v := range vals {
		if i > 0 {
			b.WriteString(", ")
		}
		q, _ := json.Marshal(v)
		b.Write(q)
	}
	return b.String()
}

func orAbsent(s string) string {
	if s == "" {
		return "absent"
	}
	return s
}
