package main

import (
	"context"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// fastHandler writes the log's common records — flat lists of ASCII strings, numbers, bools,
// durations and times — itself, byte for byte as the standard TextHandler or JSONHandler
// would, and hands every other record to that standard handler. The standard handler spends
// much of a request's log line on generality (Unicode tables, a closure per attribute, groups
// that are never opened); here a record is one pass over its attributes into a pooled buffer.
//
// A record that turns out not to fit is formatted again by the standard handler from the
// start, so a ReplaceAttr may then be called twice for the same attribute; the handler
// assumes ReplaceAttr has no side effects, as slog's own pre-formatting of WithAttrs does.
type fastHandler struct {
	std  slog.Handler
	w    *lockedWriter
	json bool
	rep  func([]string, slog.Attr) slog.Attr
	fast bool // false when the fast path can never apply (AddSource)

	// fallbacks counts the records handed to std, for tests.
	fallbacks atomic.Uint64
}

// newFastHandler returns a handler writing to w in text or JSON as slog.NewTextHandler or
// slog.NewJSONHandler with opts would.
func newFastHandler(w io.Writer, json bool, opts *slog.HandlerOptions) *fastHandler {
	if opts == nil {
		opts = &slog.HandlerOptions{}
	}
	// Both handlers write through one lock, so a line written by the standard handler and a
	// line written here never interleave on a writer that is not safe for concurrent use.
	lw := &lockedWriter{w: w}
	h := &fastHandler{w: lw, json: json, rep: opts.ReplaceAttr, fast: !opts.AddSource}
	if json {
		h.std = slog.NewJSONHandler(lw, opts)
	} else {
		h.std = slog.NewTextHandler(lw, opts)
	}
	return h
}

// lockedWriter serialises the writes of the handlers that share it.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (lw *lockedWriter) Write(p []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.w.Write(p)
}

// Enabled reports what the standard handler reports: the level option decides.
func (h *fastHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.std.Enabled(ctx, l)
}

// WithAttrs returns the standard handler's own derived handler: the fast path covers only a
// handler without attributes or groups of its own.
func (h *fastHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return h.std.WithAttrs(as)
}

// WithGroup returns the standard handler's own derived handler, as WithAttrs does.
func (h *fastHandler) WithGroup(name string) slog.Handler {
	return h.std.WithGroup(name)
}

// maxPooledLine is the largest buffer kept for reuse, so one huge line does not stay pinned.
const maxPooledLine = 16 << 10

var linePool = sync.Pool{New: func() any {
	b := make([]byte, 0, 512)
	return &b
}}

// Handle writes r with one Write, formatted here when it fits the fast path and by the
// standard handler otherwise.
func (h *fastHandler) Handle(ctx context.Context, r slog.Record) error {
	if h.fast {
		bp := linePool.Get().(*[]byte)
		b, ok := h.appendRecord((*bp)[:0], r)
		var err error
		if ok {
			_, err = h.w.Write(b)
		}
		if cap(b) <= maxPooledLine {
			*bp = b
			linePool.Put(bp)
		}
		if ok {
			return err
		}
	}
	h.fallbacks.Add(1)
	return h.std.Handle(ctx, r)
}

// recordGroups is what slog passes ReplaceAttr for a record's attribute when no group is open:
// an empty slice that is not nil (for the built-in attributes it passes nil).
var recordGroups = []string{}

// appendRecord formats r as the standard handler would, in the order it would call
// ReplaceAttr, and reports false if r needs the standard handler.
func (h *fastHandler) appendRecord(b []byte, r slog.Record) ([]byte, bool) {
	e := lineEncoder{b: b, json: h.json}
	if h.json {
		e.b = append(e.b, '{')
	}
	if !r.Time.IsZero() {
		t := r.Time.Round(0) // as slog: no monotonic reading
		if h.rep == nil {
			e.key("time")
			if !e.time(t) {
				return e.b, false
			}
		} else if !e.attr(h.rep(nil, slog.Time(slog.TimeKey, t))) {
			return e.b, false
		}
	}
	if h.rep == nil {
		e.key("level")
		if !e.str(r.Level.String()) {
			return e.b, false
		}
	} else if !e.attr(h.rep(nil, slog.Any(slog.LevelKey, r.Level))) {
		return e.b, false
	}
	if h.rep == nil {
		e.key("msg")
		if !e.str(r.Message) {
			return e.b, false
		}
	} else if !e.attr(h.rep(nil, slog.String(slog.MessageKey, r.Message))) {
		return e.b, false
	}
	ok := true
	r.Attrs(func(a slog.Attr) bool {
		k := a.Value.Kind()
		if h.rep != nil && k != slog.KindGroup && k != slog.KindLogValuer {
			a = h.rep(recordGroups, a)
			k = a.Value.Kind()
		}
		ok = e.attrOf(a, k)
		return ok
	})
	if !ok {
		return e.b, false
	}
	if h.json {
		e.b = append(e.b, '}')
	}
	e.b = append(e.b, '\n')
	return e.b, true
}

// lineEncoder appends one record's attributes to b.
type lineEncoder struct {
	b    []byte
	json bool
	more bool // an attribute has been written, so the next needs a separator
}

// attr appends a, resolved, or reports false if its kind or text needs the standard handler.
func (e *lineEncoder) attr(a slog.Attr) bool {
	return e.attrOf(a, a.Value.Kind())
}

// attrOf is attr for an attribute whose kind is known (finding it is not free).
func (e *lineEncoder) attrOf(a slog.Attr, kind slog.Kind) bool {
	v := a.Value
	switch kind {
	case slog.KindString:
		return e.key(a.Key) && e.str(v.String())
	case slog.KindInt64:
		if !e.key(a.Key) {
			return false
		}
		e.b = strconv.AppendInt(e.b, v.Int64(), 10)
	case slog.KindUint64:
		if !e.key(a.Key) {
			return false
		}
		e.b = strconv.AppendUint(e.b, v.Uint64(), 10)
	case slog.KindFloat64:
		f := v.Float64()
		if e.json && (math.IsNaN(f) || math.IsInf(f, 0)) {
			return false // slog writes an error text for them
		}
		if !e.key(a.Key) {
			return false
		}
		if e.json {
			e.b = appendJSONFloat(e.b, f)
		} else {
			e.b = strconv.AppendFloat(e.b, f, 'g', -1, 64)
		}
	case slog.KindBool:
		if !e.key(a.Key) {
			return false
		}
		e.b = strconv.AppendBool(e.b, v.Bool())
	case slog.KindDuration:
		if !e.key(a.Key) {
			return false
		}
		if e.json {
			e.b = strconv.AppendInt(e.b, int64(v.Duration()), 10)
		} else {
			e.b = append(e.b, v.Duration().String()...)
		}
	case slog.KindTime:
		return e.key(a.Key) && e.time(v.Time())
	case slog.KindAny:
		x := v.Any()
		if x == nil && a.Key == "" {
			return true // the empty Attr, which slog leaves out
		}
		// The level as ReplaceAttr hands it back: text writes its MarshalText, JSON its
		// MarshalJSON, both Level.String() (quoted in JSON).
		if l, ok := x.(slog.Level); ok {
			return e.key(a.Key) && e.str(l.String())
		}
		return false
	default:
		return false
	}
	return true
}

// key appends the separator and the key, or reports false if it is not ASCII.
func (e *lineEncoder) key(k string) bool {
	if e.more {
		if e.json {
			e.b = append(e.b, ',')
		} else {
			e.b = append(e.b, ' ')
		}
	}
	e.more = true
	if !e.str(k) {
		return false
	}
	if e.json {
		e.b = append(e.b, ':')
	} else {
		e.b = append(e.b, '=')
	}
	return true
}

// str appends s as the standard handler writes a string, or reports false if s is not ASCII.
func (e *lineEncoder) str(s string) bool {
	if e.json {
		return e.jsonString(s)
	}
	var class byte
	for i := 0; i < len(s); i++ {
		class |= textClass[s[i]]
	}
	switch {
	case class&notASCII != 0:
		return false
	case class == 0 && len(s) > 0:
		e.b = append(e.b, s...)
	default:
		e.b = strconv.AppendQuote(e.b, s)
	}
	return true
}

// jsonString appends s quoted and escaped as slog's appendEscapedJSONString does for ASCII,
// or reports false if s is not ASCII.
func (e *lineEncoder) jsonString(s string) bool {
	var class byte
	for i := 0; i < len(s); i++ {
		class |= jsonClass[s[i]]
	}
	if class&notASCII != 0 {
		return false
	}
	b := append(e.b, '"')
	if class == 0 {
		b = append(b, s...)
		e.b = append(b, '"')
		return true
	}
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if jsonClass[c] == 0 {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '\\', '"':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	e.b = append(b, '"')
	return true
}

const hexDigits = "0123456789abcdef"

// The classes of a byte in a string: 0 for one written as it is, needsEscape for one that JSON
// escapes or that makes text quote the string, notASCII for a byte the fast path leaves to the
// standard handler.
const (
	needsEscape = 1 << iota
	notASCII
)

// jsonClass marks the bytes JSON escapes: the control characters, '"' and '\\' (slog's and
// encoding/json's safeSet: '<', '>', '&' and DEL stay as they are). textClass marks those for
// which text quotes a string (slog's needsQuoting): the same bytes but '\\', and space and '='.
var jsonClass, textClass = byteClasses()

func byteClasses() (json, text [256]byte) {
	for c := range 256 {
		switch {
		case c >= 0x80:
			json[c], text[c] = notASCII, notASCII
		case c < 0x20 || c == '"':
			json[c], text[c] = needsEscape, needsEscape
		case c == '\\':
			json[c] = needsEscape
		case c == ' ' || c == '=':
			text[c] = needsEscape
		}
	}
	return json, text
}

// time appends t as slog does: RFC 3339 with milliseconds in text, RFC3339Nano quoted in JSON.
// It reports false for a year JSON cannot hold, for which slog writes an error text as well.
func (e *lineEncoder) time(t time.Time) bool {
	sec := secondOf(t)
	if e.json {
		if sec == nil {
			if y := t.Year(); y < 0 || y >= 10000 {
				return false
			}
			e.b = append(e.b, '"')
			e.b = t.AppendFormat(e.b, time.RFC3339Nano)
			e.b = append(e.b, '"')
			return true
		}
		e.b = append(e.b, '"')
		e.b = append(e.b, sec.clock[:]...)
		if ns := t.Nanosecond(); ns != 0 { // RFC3339Nano: up to 9 digits, trailing zeros cut
			e.b = append(e.b, '.')
			n := len(e.b)
			e.b = strconv.AppendInt(e.b, int64(1e9+ns), 10) // 1e9+ns keeps the leading zeros
			copy(e.b[n:], e.b[n+1:])
			e.b = e.b[:n+9]
			for e.b[len(e.b)-1] == '0' {
				e.b = e.b[:len(e.b)-1]
			}
		}
		e.b = append(e.b, sec.zone...)
		e.b = append(e.b, '"')
		return true
	}
	if sec == nil {
		e.b = appendRFC3339Millis(e.b, t)
		return true
	}
	ms := t.Nanosecond() / 1e6
	e.b = append(e.b, sec.clock[:]...)
	e.b = append(e.b, '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10))
	e.b = append(e.b, sec.zone...)
	return true
}

// secondText is one second's date and time of day ("2006-01-02T15:04:05") and zone offset
// ("Z07:00") in one location. Most records of a busy log fall in the second before theirs, so
// the calendar arithmetic and zone lookup are done once a second, not once a record.
type secondText struct {
	unix  int64
	loc   *time.Location
	clock [19]byte
	zone  string
}

var lastSecond atomic.Pointer[secondText]

// The seconds secondOf formats: those that every location shows in a year from 1 to 9999, so
// the text has the fixed layout the fast path fills in (two days cover any zone's offset).
// Other times are rare and formatted in full.
const (
	firstCachedSecond = -62135596800 + 2*86400 // 0001-01-03T00:00:00Z
	lastCachedSecond  = 253402300799 - 2*86400 // 9999-12-29T23:59:59Z
)

// secondOf returns the text of t's second in t's location, or nil for a time too far from now
// for it.
func secondOf(t time.Time) *secondText {
	unix, loc := t.Unix(), t.Location()
	if s := lastSecond.Load(); s != nil && s.unix == unix && s.loc == loc {
		return s
	}
	if unix < firstCachedSecond || unix > lastCachedSecond {
		return nil
	}
	var buf [40]byte
	b := time.Unix(unix, 0).In(loc).AppendFormat(buf[:0], time.RFC3339)
	s := &secondText{unix: unix, loc: loc, zone: string(b[19:])}
	copy(s.clock[:], b[:19])
	lastSecond.Store(s)
	return s
}

// appendRFC3339Millis is slog's: RFC3339Nano, which is fast, cut to milliseconds. A tenth of a
// millisecond is added so that the trailing zeros RFC3339Nano trims are there to cut.
func appendRFC3339Millis(b []byte, t time.Time) []byte {
	const prefixLen = len("2006-01-02T15:04:05.000")
	n := len(b)
	t = t.Truncate(time.Millisecond).Add(time.Millisecond / 10)
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b[:n+prefixLen], b[n+prefixLen+1:]...) // drop the 4th digit
}

// appendJSONFloat appends a finite f as encoding/json writes a float64 (ES6 number form):
// plain decimal, exponent only below 1e-6 or from 1e21, exponent without a leading zero.
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
