package emulator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jsonvalue"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
	"github.com/mediagen/mediagen-emulator/emulator/internal/schema"
)

// members names the members of a body decodeInto checks beyond what their Go type can say.
type members struct {
	// required must be sent, and not as null: a Go zero value cannot tell 0 from left out.
	required []string
	// nonEmpty are strings that, when sent, must say something: an empty one or null is
	// refused at its pointer rather than read as left out, which would change what the request
	// asks (an "advance" of "" beside a "set").
	nonEmpty []string
}

// decodeInto reads a body that must be one JSON object, as every JSON route takes it (see
// readBody and parseObject), into a wire type strictly: a member unknown, given twice or of the wrong type is an invalid_request problem
// with a JSON Pointer to it, as is a member m names that is left out or empty.
func (s *Server) decodeInto(w http.ResponseWriter, r *http.Request, v any, m members) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	if err := strictly(body, v); err != nil || len(m.required)+len(m.nonEmpty) == 0 {
		return err
	}
	obj, _ := parseObject(body) // strictly has parsed it
	var errs []problem.FieldError
	for _, name := range m.required {
		if obj[name] == nil {
			errs = append(errs, problem.FieldError{Pointer: "/" + schema.EscapePointer(name), Message: "is required"})
		}
	}
	for _, name := range m.nonEmpty {
		if v, sent := obj[name]; sent {
			if str, ok := v.(string); !ok || str == "" {
				errs = append(errs, problem.FieldError{Pointer: "/" + schema.EscapePointer(name), Message: "must be a non-empty string"})
			}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return &problem.Error{Code: problem.InvalidRequest, Detail: fmt.Sprintf("the request has %d problem(s); see errors", len(errs)), Errors: errs}
}

// decodeRequest reads a /v1 body into req, an api request type, in one strict pass, and its
// input into a map whose numbers stay exact; holds reports whether req is what env asks (its
// strings non-empty, its input an object). A body that does not decode or hold is read again
// as env checks it, so a refusal words its problems as env always has; one that env passes but
// the strict pass did not (a member given twice, text that is not UTF-8) is taken as env reads
// it, one value per member. It returns what was read, for the journal, even of a body refused.
func (s *Server) decodeRequest(w http.ResponseWriter, r *http.Request, req any, input *json.RawMessage, holds func() bool, env envelope) (map[string]any, []byte, error) {
	sent, err := s.readBody(w, r)
	if err != nil {
		return nil, sent, err
	}
	var in map[string]any
	if depth(sent) <= maxDepth && jsonv2.Unmarshal(sent, req, jsonv2.RejectUnknownMembers(true)) == nil &&
		holds() && jsonvalue.Decode(*input, &in) == nil && in != nil {
		return in, sent, nil
	}
	obj, err := parseObject(sent)
	if err == nil {
		err = env.check(obj)
	}
	if err != nil {
		return nil, sent, err
	}
	reflect.ValueOf(req).Elem().SetZero()
	clean, _ := json.Marshal(obj) // exact numbers, valid UTF-8: it decodes
	_ = jsonv2.Unmarshal(clean, req)
	return obj["input"].(map[string]any), sent, nil
}

// strictly decodes a body as decodeInto does.
func strictly(body []byte, v any) error {
	if _, err := parseObject(body); err != nil {
		return err
	}
	if err := jsonv2.Unmarshal(body, v, jsonv2.RejectUnknownMembers(true)); err != nil {
		ptr, msg := strictProblem(err)
		return &problem.Error{Code: problem.InvalidRequest, Detail: "the body does not hold at " + strconv.Quote(ptr) + ": " + msg,
			Errors: []problem.FieldError{{Pointer: ptr, Message: msg}}}
	}
	return nil
}

// strictProblem says where and why a strict decode failed, in words for the client.
func strictProblem(err error) (ptr, msg string) {
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
		return ptr, "want " + kindName(semantic.GoType) + ", got a JSON " + semantic.JSONKind.String()
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

// readBody reads a request's body as every JSON route takes it: a JSON content type (or none),
// at most the size limit.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if err := jsonContent(r, "the body"); err != nil {
		return nil, err
	}
	var body []byte
	if r.Body != nil {
		var err error
		body, err = readAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes), r.ContentLength, s.cfg.MaxBodyBytes, 64<<10)
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				return body, problem.New(problem.PayloadTooLarge, "the body is over the limit of %d bytes", s.cfg.MaxBodyBytes)
			}
			return body, problem.New(problem.InvalidJSON, "the body could not be read to its end")
		}
	}
	return body, nil
}

// jsonContent refuses a request whose body (what) is sent as other than JSON; none said is JSON.
func jsonContent(r *http.Request, what string) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return problem.New(problem.UnsupportedMediaType, "send %s as application/json, not %q", what, ct)
		}
	}
	return nil
}

// readAll reads a body to its end, into a buffer the size the request announced when it
// announced one, so a small body costs one small allocation. What is set aside before any byte
// arrives is at most reserve: an announcement is only a claim.
func readAll(r io.Reader, announced, limit, reserve int64) ([]byte, error) {
	size := int64(512)
	if announced >= 0 {
		size = min(announced, limit, reserve) + 1 // one more byte finds the end without growing
	}
	b := make([]byte, 0, size)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grow, as io.ReadAll does
		}
	}
}

// maxDepth bounds nesting so a hostile body cannot make validation or hashing recurse deeply.
const maxDepth = 64

func parseObject(body []byte) (map[string]any, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, problem.New(problem.InvalidJSON, "the body is empty; send a JSON object")
	}
	if depth(body) > maxDepth {
		return nil, problem.New(problem.InvalidJSON, "the body nests deeper than %d levels", maxDepth)
	}
	var v any
	if err := jsonvalue.Decode(body, &v); errors.Is(err, jsonvalue.ErrMoreValues) {
		return nil, problem.New(problem.InvalidJSON, "the body holds more than one JSON value")
	} else if err != nil {
		return nil, problem.New(problem.InvalidJSON, "the body is not valid JSON: %s", jsonMessage(err))
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, problem.New(problem.InvalidJSON, "the body must be a JSON object, not %s", withArticle(jsonvalue.Type(v)))
	}
	return obj, nil
}

// depth measures bracket nesting without decoding, skipping strings.
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

// jsonMessage describes a decoding error without Go type names.
func jsonMessage(err error) string {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Sprintf("%s (at byte %d)", strings.TrimPrefix(syn.Error(), "json: "), syn.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "it ends too early"
	}
	return "it could not be parsed"
}

// envelope checks a request envelope: each field's JSON type, required fields, and no others.
type envelope struct {
	fields   map[string]string // name → "string" or "object"
	required []string
}

func (e envelope) check(body map[string]any) error {
	if e.fits(body) {
		return nil
	}
	var errs []problem.FieldError
	for _, name := range e.required {
		if _, ok := body[name]; !ok {
			errs = append(errs, problem.FieldError{Pointer: "/" + name, Message: "is required"})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(body)) {
		want, known := e.fields[name]
		if !known {
			errs = append(errs, problem.FieldError{Pointer: "/" + schema.EscapePointer(name), Message: "is not a field of this request"})
			continue
		}
		ok := false
		switch want {
		case "string":
			s, isString := body[name].(string)
			ok = isString && s != ""
		case "object":
			_, ok = body[name].(map[string]any)
		}
		if !ok {
			errs = append(errs, problem.FieldError{Pointer: "/" + name, Message: "must be a non-empty " + want})
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return &problem.Error{Code: problem.InvalidRequest, Detail: fmt.Sprintf("the request has %d problem(s); see errors", len(errs)), Errors: errs}
}

// fits reports whether body passes check, without the sorting and messages a refusal needs.
func (e envelope) fits(body map[string]any) bool {
	for _, name := range e.required {
		if _, ok := body[name]; !ok {
			return false
		}
	}
	for name, v := range body {
		switch e.fields[name] {
		case "string":
			if s, ok := v.(string); !ok || s == "" {
				return false
			}
		case "object":
			if _, ok := v.(map[string]any); !ok {
				return false
			}
		default:
			return false
		}
	}
	return true
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
