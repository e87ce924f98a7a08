// Verify answers whether requests like a pattern happened: it matches request patterns
// against journal entries, explains the entries that came closest when none matched, and finds
// the error answers no expected pattern covers.

package evidence

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/textproto"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jsonvalue"
)

// Bounds of an answer.
const (
	// MaxMatches is the most seqs a verification lists.
	MaxMatches = 100
	// MaxNearMisses is the most near misses a verification lists.
	MaxNearMisses = 5
	// MaxUnexpected is the most unexpected errors listed at once.
	MaxUnexpected = 100
	// MaxPatternBytes bounds a pattern's text (its path, header values and the JSON of its body
	// and pointers), so that matching a full journal stays cheap.
	MaxPatternBytes = 64 << 10
)

// Pattern is a checked api.RequestPattern, ready to match.
type Pattern struct {
	src      api.RequestPattern
	method   string
	path     *regexp.Regexp
	headers  []header
	pointers []pointer
}

type header struct{ name, value string }

type pointer struct {
	text   string
	tokens []string
	want   any
}

// Source is the pattern as it was given.
func (p *Pattern) Source() api.RequestPattern { return p.src }

// Parse checks a decoded JSON object (numbers as json.Number) as a request pattern. Every
// problem comes back as a field error with a JSON Pointer into the object.
func Parse(obj map[string]any) (*Pattern, []api.FieldError) {
	var errs []api.FieldError
	bad := func(ptr, msg string) { errs = append(errs, api.FieldError{Pointer: ptr, Message: msg}) }
	p := &Pattern{}
	for _, name := range slices.Sorted(maps.Keys(obj)) {
		v := obj[name]
		at := "/" + escape(name)
		switch name {
		case "method", "path", "code":
			s, ok := v.(string)
			if !ok {
				bad(at, "must be a string")
				continue
			}
			switch name {
			case "method":
				if !validToken(s) {
					bad(at, "must be an HTTP method such as GET or POST")
					continue
				}
				p.src.Method, p.method = s, strings.ToUpper(s)
			case "path":
				if !strings.HasPrefix(s, "/") || len(s) > maxPath {
					bad(at, fmt.Sprintf(`must start with "/" and be at most %d bytes`, maxPath))
					continue
				}
				re, err := pathRegexp(s)
				if err != nil {
					bad(at, "cannot be matched: "+err.Error())
					continue
				}
				p.src.Path, p.path = s, re
			case "code":
				p.src.Code = s
			}
		case "status":
			n, ok := v.(json.Number)
			i, err := strconv.Atoi(string(n))
			if !ok || err != nil || i < 100 || i > 599 {
				bad(at, "must be an HTTP status code, an integer from 100 to 599")
				continue
			}
			p.src.Status = i
		case "headers":
			m, ok := v.(map[string]any)
			if !ok {
				bad(at, "must be an object of header names to values")
				continue
			}
			p.src.Headers = map[string]string{}
			for _, k := range slices.Sorted(maps.Keys(m)) {
				s, ok := m[k].(string)
				switch {
				case !validToken(k):
					bad(at+"/"+escape(k), "is not a valid header name")
				case !ok:
					bad(at+"/"+escape(k), "must be a string")
				default:
					p.src.Headers[k] = s
					p.headers = append(p.headers, header{textproto.CanonicalMIMEHeaderKey(k), s})
				}
			}
		case "body":
			m, ok := v.(map[string]any)
			if !ok {
				bad(at, "must be an object: the members the request body must have")
				continue
			}
			p.src.Body = m
		case "pointers":
			m, ok := v.(map[string]any)
			if !ok {
				bad(at, "must be an object of JSON Pointers to values")
				continue
			}
			p.src.Pointers = m
			for _, k := range slices.Sorted(maps.Keys(m)) {
				tokens, err := parsePointer(k)
				if err != nil {
					bad(at+"/"+escape(k), err.Error())
					continue
				}
				p.pointers = append(p.pointers, pointer{text: k, tokens: tokens, want: m[k]})
			}
		default:
			bad(at, "is not a member of a request pattern (method, path, status, code, headers, body, pointers)")
		}
	}
	if len(errs) == 0 && size(p.src) > MaxPatternBytes {
		bad("", fmt.Sprintf("the pattern is over %d bytes", MaxPatternBytes))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return p, nil
}

func size(p api.RequestPattern) int {
	n := len(p.Method) + len(p.Path) + len(p.Code)
	for k, v := range p.Headers {
		n += len(k) + len(v)
	}
	b, _ := json.Marshal(p.Body)
	c, _ := json.Marshal(p.Pointers)
	return n + len(b) + len(c)
}

// validToken reports whether s is an HTTP token (a method or a header name).
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// maxPath bounds a path pattern, as the journal bounds the paths it keeps.
const maxPath = 2 << 10

// pathRegexp compiles a path pattern: * is any run without a slash, ** any run at all.
func pathRegexp(path string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	for path != "" {
		switch {
		case strings.HasPrefix(path, "**"):
			b.WriteString(".*")
			path = path[2:]
		case path[0] == '*':
			b.WriteString("[^/]*")
			path = path[1:]
		default:
			i := strings.IndexByte(path, '*')
			if i < 0 {
				i = len(path)
			}
			b.WriteString(regexp.QuoteMeta(path[:i]))
			path = path[i:]
		}
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

// parsePointer splits an RFC 6901 JSON Pointer into its unescaped tokens.
func parsePointer(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	if s[0] != '/' {
		return nil, fmt.Errorf(`is not a JSON Pointer: it must be empty or start with "/"`)
	}
	tokens := strings.Split(s[1:], "/")
	for i, t := range tokens {
		for j := 0; j < len(t); j++ {
			if t[j] == '~' && (j+1 == len(t) || (t[j+1] != '0' && t[j+1] != '1')) {
				return nil, fmt.Errorf(`is not a JSON Pointer: "~" must be followed by 0 or 1`)
			}
		}
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return tokens, nil
}

// escape makes a name one token of a JSON Pointer.
func escape(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1") }

// Misses lists what of the pattern an entry does not match, in the pattern's order (method,
// path, status, code, headers, body, pointers); none means it matches. The entry's request body
// is read in its journal form.
func (p *Pattern) Misses(e *api.JournalEntry) []api.Miss {
	var out []api.Miss
	if p.method != "" && !strings.EqualFold(p.method, e.Method) {
		out = append(out, api.Miss{Field: "/method", Want: p.src.Method, Got: orNull(e.Method)})
	}
	if p.path != nil && !p.path.MatchString(e.Path) {
		out = append(out, api.Miss{Field: "/path", Want: p.src.Path, Got: orNull(e.Path)})
	}
	if p.src.Status != 0 && p.src.Status != e.Status {
		out = append(out, api.Miss{Field: "/status", Want: p.src.Status, Got: e.Status})
	}
	if p.src.Code != "" && p.src.Code != e.Code {
		out = append(out, api.Miss{Field: "/code", Want: p.src.Code, Got: orNull(e.Code)})
	}
	for _, h := range p.headers {
		got, ok := e.RequestHeaders[h.name]
		if !ok || got != h.value {
			var g any
			if ok {
				g = got
			}
			out = append(out, api.Miss{Field: "/headers/" + escape(h.name), Want: h.value, Got: g})
		}
	}
	if p.src.Body == nil && len(p.pointers) == 0 {
		return out
	}
	body, hasBody := decode(e.RequestBody)
	if p.src.Body != nil {
		var got any
		if hasBody {
			got = body
		}
		out = subset("/body", p.src.Body, got, out)
	}
	for _, ptr := range p.pointers {
		got, ok := resolve(body, hasBody, ptr.tokens)
		if !ok || !jsonvalue.Equal(ptr.want, got) {
			if !ok {
				got = nil
			}
			out = append(out, api.Miss{Field: "/pointers/" + escape(ptr.text), Want: ptr.want, Got: got})
		}
	}
	return out
}

func orNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// decode reads a journal body as a JSON value.
func decode(raw json.RawMessage) (any, bool) {
	if len(raw) == 0 {
		return nil, false
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return nil, false
	}
	return v, true
}

// subset adds a miss for each member of want that got lacks or holds another value, objects
// compared member by member.
func subset(at string, want map[string]any, got any, out []api.Miss) []api.Miss {
	obj, isObj := got.(map[string]any)
	for _, k := range slices.Sorted(maps.Keys(want)) {
		w := want[k]
		field := at + "/" + escape(k)
		var g any
		has := false
		if isObj {
			g, has = obj[k]
		}
		if wo, ok := w.(map[string]any); ok && has {
			if _, gotObj := g.(map[string]any); gotObj {
				out = subset(field, wo, g, out)
				continue
			}
		}
		if !has || !jsonvalue.Equal(w, g) {
			if !has {
				g = nil
			}
			out = append(out, api.Miss{Field: field, Want: w, Got: g})
		}
	}
	return out
}

// resolve finds the value a pointer names in a body.
func resolve(v any, present bool, tokens []string) (any, bool) {
	if !present {
		return nil, false
	}
	for _, t := range tokens {
		switch c := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = c[t]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(c) || (len(t) > 1 && t[0] == '0') {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// Verify matches a pattern against entries given oldest first.
func Verify(p *Pattern, entries []api.JournalEntry) api.Verification {
	out := api.Verification{Matches: []uint64{}}
	type near struct {
		i      int
		missed []api.Miss
	}
	var nears []near
	for i := range entries {
		missed := p.Misses(&entries[i])
		if len(missed) == 0 {
			out.Count++
			if len(out.Matches) < MaxMatches {
				out.Matches = append(out.Matches, entries[i].Seq)
			}
			continue
		}
		if out.Count == 0 {
			nears = append(nears, near{i, missed})
		}
	}
	if out.Count > 0 {
		return out
	}
	// Fewest misses first, then newest: a stable sort of the entries newest first.
	slices.Reverse(nears)
	slices.SortStableFunc(nears, func(a, b near) int { return len(a.missed) - len(b.missed) })
	out.NearMisses = []api.NearMiss{}
	for _, n := range nears[:min(len(nears), MaxNearMisses)] {
		out.NearMisses = append(out.NearMisses, api.NearMiss{Entry: entries[n.i], Missed: n.missed})
	}
	return out
}

// Unexpected lists the error answers (status 400 and up) among entries, given oldest first,
// that no expected pattern matches: the first MaxUnexpected, and how many there are.
func Unexpected(expected []*Pattern, entries []api.JournalEntry) api.UnexpectedErrors {
	out := api.UnexpectedErrors{Data: []api.UnexpectedError{}}
	for i := range entries {
		e := &entries[i]
		if e.Status < 400 || slices.ContainsFunc(expected, func(p *Pattern) bool { return len(p.Misses(e)) == 0 }) {
			continue
		}
		out.Total++
		if len(out.Data) < MaxUnexpected {
			out.Data = append(out.Data, api.UnexpectedError{Entry: *e, Detail: detail(e.ResponseBody)})
		}
	}
	return out
}

// detail is the problem detail of an error answer's body, or "" when it has none.
func detail(body json.RawMessage) string {
	var p struct {
		Detail string `json:"detail"`
	}
	if json.Unmarshal(body, &p) != nil {
		return ""
	}
	return p.Detail
}
