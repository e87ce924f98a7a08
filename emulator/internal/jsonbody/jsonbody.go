// Package jsonbody reads a request body that must be one JSON object into its wire type, in
// one pass: strictly (a member unknown, or of the wrong type, is refused at its JSON Pointer),
// with every free-form part's numbers exact and its nesting bounded, and with problems coded
// for the client (invalid_json for what is not one JSON object, invalid_request for an object
// that does not fit).
package jsonbody

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jsonvalue"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
	"github.com/mediagen/mediagen-emulator/emulator/internal/schema"
)

// MaxDepth bounds nesting so a hostile body cannot make validation or hashing recurse deeply.
const MaxDepth = 64

// The two ways a body is read; both refuse unknown members and read every free-form part as
// exactValues says.
var (
	// Control reads a control body: a member given twice, or text that is not UTF-8, is
	// refused, as JSON says.
	Control = jsonv2.JoinOptions(jsonv2.RejectUnknownMembers(true), exactValues)
	// Request reads a /v1 request: a member given twice is its last value and text that is not
	// UTF-8 has U+FFFD in its place, as /v1 has always taken them, so a client that worked
	// goes on working.
	Request = jsonv2.JoinOptions(Control, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
)

// exactValues reads what a body leaves free-form (any, an object or array of any, raw JSON)
// with numbers exact (json.Number) and nesting bounded by MaxDepth; the rest of a body nests
// no deeper than its Go type.
var exactValues = jsonv2.WithUnmarshalers(jsonv2.JoinUnmarshalers(
	jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, v *any) error {
		x, err := jsonvalue.Read(dec, MaxDepth)
		*v = x
		return err
	}),
	jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, v *map[string]any) error {
		if k := dec.PeekKind(); k != '{' && k != 'n' {
			return misfit(dec)
		}
		x, err := jsonvalue.Read(dec, MaxDepth)
		*v, _ = x.(map[string]any)
		return err
	}),
	jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, v *[]any) error {
		if k := dec.PeekKind(); k != '[' && k != 'n' {
			return misfit(dec)
		}
		x, err := jsonvalue.Read(dec, MaxDepth)
		*v, _ = x.([]any)
		return err
	}),
	jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, v *json.RawMessage) error {
		val, err := dec.ReadValue()
		if err == nil && dec.StackDepth()+depth(val) > MaxDepth {
			err = jsonvalue.ErrTooDeep
		}
		*v = append((*v)[:0], val...)
		return err
	}),
))

// misfit reads a value of the wrong kind and says what it was, as jsonv2 says it of a value
// that does not fit one of its own types.
func misfit(dec *jsontext.Decoder) error {
	kind := dec.PeekKind()
	val, err := dec.ReadValue()
	if err != nil {
		return err
	}
	return &jsonv2.SemanticError{JSONKind: kind, JSONValue: val.Clone()}
}

// Decode reads body, which must be one JSON object, into v with opts, in one pass. What is
// not one JSON object (nothing, not JSON, another kind of value, more than one value, deeper
// than MaxDepth) is invalid_json; an object that does not fit v is invalid_request, pointing at
// the first member that does not fit.
func Decode(body []byte, v any, opts jsonv2.Options) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return problem.New(problem.InvalidJSON, "the body is empty; send a JSON object")
	}
	d := getDecoder(body, opts)
	defer d.put()
	dec := &d.dec
	if kind := dec.PeekKind(); kind != '{' {
		if err := readRest(dec, 0); err != nil {
			return err
		}
		return problem.New(problem.InvalidJSON, "the body must be a JSON object, not %s", withArticle(jsonKind(kind)))
	}
	err := jsonv2.UnmarshalDecode(dec, v)
	var syntax *jsontext.SyntacticError
	switch {
	case err == nil:
		return oneValue(dec)
	case errors.Is(err, jsonvalue.ErrTooDeep):
		return tooDeep()
	case errors.As(err, &syntax) && !errors.Is(syntax.Err, jsontext.ErrDuplicateName):
		return notJSON(err, 0)
	default:
		// What did not fit (or was given twice) stopped the decode partway; the rest must
		// still be JSON.
		if err := finish(dec, body, opts); err != nil {
			return err
		}
	}
	ptr, msg := Problem(err)
	return &problem.Error{Code: problem.InvalidRequest, Detail: "the body does not hold at " + strconv.Quote(ptr) + ": " + msg,
		Errors: []problem.FieldError{{Pointer: ptr, Message: msg}}}
}

// finish reads the rest of a body after a member that did not fit. The decoder that met it
// may not go on (jsonv2 leaves the names it tracks in a state it then refuses), so a fresh one
// reads the rest behind a few bytes that open the same objects and arrays.
func finish(dec *jsontext.Decoder, body []byte, opts jsonv2.Options) error {
	var open []byte
	for i, depth := 1, dec.StackDepth(); i <= depth; i++ {
		kind, length := dec.StackIndex(i)
		switch {
		case kind == '[' && (i < depth || length == 0):
			open = append(open, '[')
		case kind == '[':
			open = append(open, "[0"...) // the rest goes on with a comma or ends
		case i < depth:
			open = append(open, `{"":`...) // within a member's value
		case length%2 == 1:
			open = append(open, `{""`...) // a name read, its value to come
		case length > 0:
			open = append(open, `{"":0`...)
		default:
			open = append(open, '{')
		}
	}
	at := dec.InputOffset()
	rest := jsontext.NewDecoder(io.MultiReader(bytes.NewReader(open), bytes.NewReader(body[at:])), opts, jsontext.AllowDuplicateNames(true))
	return readRest(rest, at-int64(len(open)))
}

// readRest reads the value dec is at the start of, or the rest of the one it is in, and what
// follows: it must be JSON no deeper than MaxDepth, and the body's one value. shift is what
// turns dec's offsets into the body's.
func readRest(dec *jsontext.Decoder, shift int64) error {
	for first := true; first || dec.StackDepth() > 0; first = false {
		if _, err := dec.ReadToken(); err != nil {
			return notJSON(err, shift)
		}
		if dec.StackDepth() > MaxDepth {
			return tooDeep()
		}
	}
	return oneValue(dec)
}

// oneValue refuses a body with more than white space after its value.
func oneValue(dec *jsontext.Decoder) error {
	if _, err := dec.ReadToken(); err != io.EOF {
		return problem.New(problem.InvalidJSON, "the body holds more than one JSON value")
	}
	return nil
}

func tooDeep() error {
	return problem.New(problem.InvalidJSON, "the body nests deeper than %d levels", MaxDepth)
}

// notJSON words a syntax error for the client; the byte it names counts from 1.
func notJSON(err error, shift int64) error {
	var syntax *jsontext.SyntacticError
	if !errors.As(err, &syntax) || errors.Is(syntax.Err, io.ErrUnexpectedEOF) {
		return problem.New(problem.InvalidJSON, "the body is not valid JSON: it ends too early")
	}
	return problem.New(problem.InvalidJSON, "the body is not valid JSON: %s (at byte %d)", syntax.Err, syntax.ByteOffset+shift+1)
}

// jsonKind names a kind of JSON value as RFC 8259 does.
func jsonKind(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 't', 'f':
		return "boolean"
	case '"':
		return "string"
	case '0':
		return "number"
	case '{':
		return "object"
	}
	return "array"
}

// bodyDecoder is a decoder kept for the next body: most bodies are small, and a decoder's
// buffers are not.
type bodyDecoder struct {
	r   bytes.Reader
	dec jsontext.Decoder
}

var decoders = sync.Pool{New: func() any { return new(bodyDecoder) }}

// getDecoder is a decoder of body with opts, to be put back once read.
func getDecoder(body []byte, opts jsonv2.Options) *bodyDecoder {
	d := decoders.Get().(*bodyDecoder)
	d.r.Reset(body)
	d.dec.Reset(&d.r, opts)
	return d
}

// put keeps d for the next body, unless it has grown to hold a large one.
func (d *bodyDecoder) put() {
	large := d.r.Size() > 64<<10
	d.r.Reset(nil)
	d.dec.Reset(&d.r)
	if !large {
		decoders.Put(d)
	}
}

// Problem says where and why a strict decode failed, in words for the client.
func Problem(err error) (ptr, msg string) {
	var syntax *jsontext.SyntacticError
	if errors.As(err, &syntax) {
		if errors.Is(syntax.Err, jsontext.ErrDuplicateName) {
			return string(syntax.JSONPointer), "given twice"
		}
		return "", fmt.Sprintf("not valid JSON (at byte %d)", syntax.ByteOffset)
	}
	var semantic *jsonv2.SemanticError
	if !errors.As(err, &semantic) {
		return "", "not valid here"
	}
	ptr = string(semantic.JSONPointer)
	switch {
	case errors.Is(semantic.Err, jsonv2.ErrUnknownName):
		return ptr, "unknown field " + strconv.Quote(schema.UnescapePointer(ptr[strings.LastIndexByte(ptr, '/')+1:]))
	case semantic.GoType == durationType:
		return ptr, "want a duration such as 500ms or 2s"
	case semantic.GoType != nil && semantic.JSONKind == '0' && len(semantic.JSONValue) > 0:
		return ptr, "want " + kindName(semantic.GoType) + ", got the number " + string(semantic.JSONValue[:min(len(semantic.JSONValue), 40)])
	case semantic.GoType != nil && semantic.JSONKind != 0 && semantic.Err == nil:
		return ptr, "want " + kindName(semantic.GoType) + ", got a JSON " + jsonKind(semantic.JSONKind)
	case semantic.GoType != nil:
		return ptr, "want " + kindName(semantic.GoType)
	case semantic.Err != nil:
		return ptr, semantic.Err.Error()
	}
	return ptr, "not what belongs here"
}

var durationType = reflect.TypeFor[api.Duration]()

// kindName names a Go type in the words of JSON, so no Go type name reaches a client.
func kindName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "another value"
}

// depth measures bracket nesting without decoding, skipping strings: a raw value is taken
// whole, so its depth is not otherwise seen.
func depth(b []byte) int {
	d, most, inString, escaped := 0, 0, false, false
	for _, c := range b {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			d++
			most = max(most, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return most
}

// withArticle puts "a" or "an" before a JSON type's name, as a message reads it; null takes
// none.
func withArticle(name string) string {
	switch name {
	case "null":
		return name
	case "array", "object":
		return "an " + name
	}
	return "a " + name
}

// Check refuses body, a JSON object Decode has read, when a member named in required is left
// out or null, or one in nonEmpty is null or "": a Go zero value cannot say which it was. It
// reads only the object's own members, token by token, skipping their values.
func Check(body []byte, required, nonEmpty []string) error {
	d := getDecoder(body, Control)
	defer d.put()
	dec := &d.dec
	sent := make(map[string]string) // each member's value when null or "", else "sent"
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	for dec.PeekKind() == '"' {
		tok, _ := dec.ReadToken()
		name := tok.String() // before the next read voids tok
		val, err := dec.ReadValue()
		if err != nil {
			return err
		}
		how := "sent"
		if v := string(val); v == "null" || v == `""` {
			how = v
		}
		sent[name] = how
	}
	var errs []problem.FieldError
	for _, name := range required {
		if v, ok := sent[name]; !ok || v == "null" {
			errs = append(errs, problem.FieldError{Pointer: "/" + schema.EscapePointer(name), Message: "is required"})
		}
	}
	for _, name := range nonEmpty {
		if v := sent[name]; v == "null" || v == `""` {
			errs = append(errs, problem.FieldError{Pointer: "/" + schema.EscapePointer(name), Message: "must be a non-empty string"})
		}
	}
	return Problems(errs)
}

// Problems is the invalid_request problem that lists errs, or nil when there are none.
func Problems(errs []problem.FieldError) error {
	if len(errs) == 0 {
		return nil
	}
	return &problem.Error{Code: problem.InvalidRequest, Detail: fmt.Sprintf("the request has %d problem(s); see errors", len(errs)), Errors: errs}
}
