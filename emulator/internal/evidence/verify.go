// Verify answers whether requests like a pattern happened: it matches request patterns
// against journal entries, explains the entries that came closest when none matched, and finds
// the error answers no expected pattern covers.

package evidence

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/textproto"
	"slices"
	"strconv"
	"strings"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/glob"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jsonvalue"
	"github.com/mediagen/mediagen-emulator/emulator/internal/schema"
)

// Bounds of an answer and of a pattern.
const (
	// MaxMatches is the most seqs a verification lists.
	MaxMatches = 100
	// MaxNearMisses is the most near misses a verification lists.
	MaxNearMisses = 5
	// MaxPatternBytes bounds a pattern's text (its path, header values and the JSON of its body
	// and pointers), so that matching a full journal stays cheap.
	MaxPatternBytes = 64 << 10
	// MaxPatternMembers bounds what one pattern compares with each entry: its headers, its
	// pointers and its body's members (a nested object's members each count), together.
	MaxPatternMembers = 64
	// checkEvery is how many entries a scan reads between looks at whether its client is still
	// there.
	checkEvery = 256
)

// Pattern is a checked api.RequestPattern, ready to match. It is the one request-pattern
// language: verify, expected errors and the journal's filter all read requests through it. A
// path and a model match as globs (package glob: * within a segment, ** across).
type Pattern struct {
	src      api.RequestPattern
	method   string
	headers  []header
	pointers []pointer
	bytes    int64
}

type header struct{ name, value string }

type pointer struct {
	text   string
	tokens []string
	want   any
}

// Source is the pattern as it was given.
func (p *Pattern) Source() api.RequestPattern { return p.src }

// Bytes is what the pattern holds in memory, as counted against the memory budget: its text,
// and its body and pointer values as decoded JSON.
func (p *Pattern) Bytes() int64 { return p.bytes }

// Parse checks a decoded JSON object (numbers as json.Number) as a request pattern. Every
// problem comes back as a field error with a JSON Pointer into the object.
func Parse(obj map[string]any) (*Pattern, []api.FieldError) {
	var errs []api.FieldError
	bad := func(ptr, msg string) { errs = append(errs, api.FieldError{Pointer: ptr, Message: msg}) }
	p := &Pattern{}
	members := 0
	for _, name := range slices.Sorted(maps.Keys(obj)) {
		v := obj[name]
		at := "/" + schema.EscapePointer(name)
		switch name {
		case "method", "path", "code", "account", "model":
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
				if !strings.HasPrefix(s, "/") {
					bad(at, `must start with "/"`)
					continue
				}
				if msg := glob.Check(s); msg != "" {
					bad(at, msg)
					continue
				}
				p.src.Path = s
			case "model":
				if msg := glob.Check(s); msg != "" {
					bad(at, msg)
					continue
				}
				p.src.Model = s
			case "code":
				p.src.Code = s
			case "account":
				p.src.Account = s
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
			members += len(m)
			p.src.Headers = map[string]string{}
			for _, k := range slices.Sorted(maps.Keys(m)) {
				s, ok := m[k].(string)
				switch {
				case !validToken(k):
					bad(at+"/"+schema.EscapePointer(k), "is not a valid header name")
				case !ok:
					bad(at+"/"+schema.EscapePointer(k), "must be a string")
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
			members += countMembers(m)
			p.src.Body = m
		case "pointers":
			m, ok := v.(map[string]any)
			if !ok {
				bad(at, "must be an object of JSON Pointers to values")
				continue
			}
			members += len(m)
			p.src.Pointers = m
			for _, k := range slices.Sorted(maps.Keys(m)) {
				tokens, err := schema.ParsePointer(k)
				if err != nil {
					bad(at+"/"+schema.EscapePointer(k), err.Error())
					continue
				}
				p.pointers = append(p.pointers, pointer{text: k, tokens: tokens, want: m[k]})
			}
		default:
			bad(at, "is not a member of a request pattern (method, path, status, code, account, model, headers, body, pointers)")
		}
	}
	if members > MaxPatternMembers {
		bad("", fmt.Sprintf("the pattern compares %d headers, pointers and body members; at most %d", members, MaxPatternMembers))
	}
	if len(errs) == 0 && size(p.src) > MaxPatternBytes {
		bad("", fmt.Sprintf("the pattern is over %d bytes", MaxPatternBytes))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	p.bytes = p.cost()
	return p, nil
}

// countMembers counts an object's members, and those of the objects within it.
func countMembers(m map[string]any) int {
	n := len(m)
	for _, v := range m {
		if o, ok := v.(map[string]any); ok {
			n += countMembers(o)
		}
	}
	return n
}

// cost estimates what a parsed pattern holds: its strings, its header list, and its body and
// pointer values as decoded JSON (maps, interfaces and strings, with Go's overheads).
func (p *Pattern) cost() int64 {
	n := 256 + len(p.src.Method) + len(p.method) + len(p.src.Path) + len(p.src.Code) + len(p.src.Account) + len(p.src.Model)
	for k, v := range p.src.Headers {
		n += 2*(len(k)+len(v)) + 96
	}
	n += jsonCost(p.src.Body)
	for _, ptr := range p.pointers {
		n += 2*len(ptr.text) + 64 + 24*len(ptr.tokens) + 2*jsonCost(ptr.want)
	}
	return int64(n)
}

// jsonCost estimates what a decoded JSON value holds in memory.
func jsonCost(v any) int {
	switch v := v.(type) {
	case map[string]any:
		n := 64
		for k, c := range v {
			n += 112 + len(k) + jsonCost(c)
		}
		return n
	case []any:
		n := 32
		for _, c := range v {
			n += 16 + jsonCost(c)
		}
		return n
	case string:
		return 16 + len(v)
	case json.Number:
		return 16 + len(v)
	}
	return 16
}

func size(p api.RequestPattern) int {
	n := len(p.Method) + len(p.Path) + len(p.Code) + len(p.Account) + len(p.Model)
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

// subject is one request as patterns read it: its entry, its headers as sent (nil for an entry
// that holds them in its listed form), and its body decoded once, on first need, for every
// pattern that compares it.
type subject struct {
	e       *Entry
	header  map[string][]string
	body    any
	hasBody bool
	decoded bool
}

func (s *subject) headerValue(name string) (string, bool) {
	if s.header != nil {
		vs, ok := s.header[name]
		if !ok {
			return "", false
		}
		return headerValue(name, vs), true
	}
	v, ok := s.e.RequestHeaders[name]
	return v, ok
}

func (s *subject) requestBody() (any, bool) {
	if !s.decoded {
		s.body, s.hasBody = decode(s.e.RequestBody)
		s.decoded = true
	}
	return s.body, s.hasBody
}

// Matches reports whether a request matches the pattern, header as the request sent them
// (nil when the entry holds its listed form): the cheap comparisons first, the body last.
func (p *Pattern) Matches(e *Entry, header map[string][]string) bool {
	return p.matches(&subject{e: e, header: header})
}

func (p *Pattern) matches(s *subject) bool {
	e := s.e
	if (p.method != "" && !strings.EqualFold(p.method, e.Method)) || (p.src.Status != 0 && p.src.Status != e.Status) ||
		(p.src.Code != "" && p.src.Code != e.Code) || (p.src.Account != "" && p.src.Account != e.Account) ||
		(p.src.Path != "" && !glob.Match(p.src.Path, e.Path)) || (p.src.Model != "" && !glob.Match(p.src.Model, e.Model)) {
		return false
	}
	for _, h := range p.headers {
		if got, ok := s.headerValue(h.name); !ok || got != h.value {
			return false
		}
	}
	if p.src.Body == nil && len(p.pointers) == 0 {
		return true
	}
	var m missList
	p.bodyMisses(s, &m)
	return m.n == 0
}

// missList gathers the misses of one request, or only counts them: ranking near misses needs
// the count of every entry but the list of only the few it shows.
type missList struct {
	n    int
	keep bool
	list []api.Miss
}

// miss counts one miss and says whether to list it: a count alone builds nothing.
func (m *missList) miss() bool {
	m.n++
	return m.keep
}

func (m *missList) add(field string, want, got any) {
	m.list = append(m.list, api.Miss{Field: field, Want: want, Got: got})
}

// misses lists what of the pattern a request does not match, in the pattern's order (method,
// path, status, code, account, model, headers, body, pointers); none means it matches.
func (p *Pattern) misses(s *subject) []api.Miss {
	m := missList{keep: true}
	p.miss(s, &m)
	return m.list
}

// miss adds to m what of the pattern a request does not match.
func (p *Pattern) miss(s *subject, m *missList) {
	e := s.e
	if p.method != "" && !strings.EqualFold(p.method, e.Method) {
		if m.miss() {
			m.add("/method", p.src.Method, orNull(e.Method))
		}
	}
	if p.src.Path != "" && !glob.Match(p.src.Path, e.Path) {
		if m.miss() {
			m.add("/path", p.src.Path, orNull(e.Path))
		}
	}
	if p.src.Status != 0 && p.src.Status != e.Status {
		if m.miss() {
			m.add("/status", p.src.Status, e.Status)
		}
	}
	if p.src.Code != "" && p.src.Code != e.Code {
		if m.miss() {
			m.add("/code", p.src.Code, orNull(e.Code))
		}
	}
	if p.src.Account != "" && p.src.Account != e.Account {
		if m.miss() {
			m.add("/account", p.src.Account, orNull(e.Account))
		}
	}
	if p.src.Model != "" && !glob.Match(p.src.Model, e.Model) {
		if m.miss() {
			m.add("/model", p.src.Model, orNull(e.Model))
		}
	}
	for _, h := range p.headers {
		got, ok := s.headerValue(h.name)
		if !ok || got != h.value {
			var g any
			if ok {
				g = got
			}
			if m.miss() {
				m.add("/headers/"+schema.EscapePointer(h.name), h.value, g)
			}
		}
	}
	if p.src.Body != nil || len(p.pointers) > 0 {
		p.bodyMisses(s, m)
	}
}

// bodyMisses adds the misses of the pattern's body and pointers.
func (p *Pattern) bodyMisses(s *subject, m *missList) {
	body, hasBody := s.requestBody()
	if p.src.Body != nil {
		var got any
		if hasBody {
			got = body
		}
		subset("/body", p.src.Body, got, m)
	}
	for _, ptr := range p.pointers {
		var got any
		ok := false
		if hasBody {
			got, ok = schema.Resolve(body, ptr.tokens)
		}
		if !ok || !jsonvalue.Equal(ptr.want, got) {
			if m.miss() {
				m.add("/pointers/"+schema.EscapePointer(ptr.text), ptr.want, got)
			}
		}
	}
}

func orNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// decode reads a recorded body as a JSON value.
func decode(raw json.RawMessage) (any, bool) {
	var v any
	if len(raw) == 0 || jsonvalue.Decode(raw, &v) != nil {
		return nil, false
	}
	return v, true
}

// subset adds a miss for each member of want that got lacks or holds another value, objects
// compared member by member.
func subset(at string, want map[string]any, got any, m *missList) {
	obj, isObj := got.(map[string]any)
	for _, k := range slices.Sorted(maps.Keys(want)) {
		w := want[k]
		field := at + "/" + schema.EscapePointer(k)
		var g any
		has := false
		if isObj {
			g, has = obj[k]
		}
		if wo, ok := w.(map[string]any); ok && has {
			if _, gotObj := g.(map[string]any); gotObj {
				subset(field, wo, g, m)
				continue
			}
		}
		if !has || !jsonvalue.Equal(w, g) {
			if !has {
				g = nil
			}
			if m.miss() {
				m.add(field, w, g)
			}
		}
	}
}

// Verify matches a pattern against the journal's entries, oldest first. When none matches it
// ranks them newest first and lists the misses of only the MaxNearMisses it shows, counting the
// misses of the others without keeping them. It stops, with ctx's error, once ctx is done (the
// client has gone).
func (j *Journal) Verify(ctx context.Context, p *Pattern) (api.Verification, error) {
	out := api.Verification{Matches: []uint64{}}
	slots := j.slots(true)
	for i, s := range slots {
		if i%checkEvery == 0 && ctx.Err() != nil {
			return api.Verification{}, ctx.Err()
		}
		if p.matches(&subject{e: &s.Entry, header: s.header}) {
			out.Count++
			if len(out.Matches) < MaxMatches {
				out.Matches = append(out.Matches, s.Seq)
			}
		}
	}
	if out.Count > 0 {
		return out, nil
	}
	type near struct {
		s      *slot
		missed []api.Miss
	}
	// The fewest misses first, the newest among equals: read newest first, an older entry
	// takes a place only with fewer misses than the worst kept.
	var nears []near
	for i := len(slots) - 1; i >= 0; i-- {
		if i%checkEvery == 0 && ctx.Err() != nil {
			return api.Verification{}, ctx.Err()
		}
		s := slots[i]
		sub := &subject{e: &s.Entry, header: s.header}
		worst := -1
		if len(nears) == MaxNearMisses {
			worst = 0
			for k, n := range nears {
				if len(n.missed) > len(nears[worst].missed) {
					worst = k
				}
			}
			var m missList
			p.miss(sub, &m)
			if m.n >= len(nears[worst].missed) {
				continue
			}
		}
		n := near{s, p.misses(sub)}
		if worst < 0 {
			nears = append(nears, n)
		} else {
			nears[worst] = n
		}
	}
	slices.SortStableFunc(nears, func(a, b near) int {
		if d := len(a.missed) - len(b.missed); d != 0 {
			return d
		}
		return cmp.Compare(b.s.Seq, a.s.Seq)
	})
	out.NearMisses = []api.NearMiss{}
	for _, n := range nears {
		out.NearMisses = append(out.NearMisses, api.NearMiss{Entry: n.s.listed(), Missed: n.missed})
	}
	return out, nil
}

// Unexpected lists the error answers (status 400 and up) in the journal, oldest first, that no
// expected pattern matches: the page of [offset, offset+limit) of them, and how many there are.
// Each entry's body is decoded at most once, whatever the patterns; it stops, with ctx's error,
// once ctx is done.
func (j *Journal) Unexpected(ctx context.Context, expected []*Pattern, offset, limit int) (api.UnexpectedErrors, error) {
	out := api.UnexpectedErrors{Data: []api.UnexpectedError{}, Offset: offset, Limit: limit}
	for i, s := range j.slots(true) {
		if i%checkEvery == 0 && ctx.Err() != nil {
			return api.UnexpectedErrors{}, ctx.Err()
		}
		if s.Status < 400 {
			continue
		}
		sub := &subject{e: &s.Entry, header: s.header}
		if slices.ContainsFunc(expected, func(p *Pattern) bool { return p.matches(sub) }) {
			continue
		}
		out.Total++
		if out.Total > offset && len(out.Data) < limit {
			e := s.listed()
			out.Data = append(out.Data, api.UnexpectedError{Entry: e, Detail: detail(e.ResponseBody)})
		}
	}
	out.HasMore = offset+len(out.Data) < out.Total
	return out, nil
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
