package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	_ "time/tzdata" // the zones below exist on every machine
	"unicode/utf8"

	"github.com/mediagen/mediagen-emulator/emulator"
)

// logFormat is one way the emulator can be configured to log, with the standard handler it
// must match.
type logFormat struct {
	name string
	json bool
	opts *slog.HandlerOptions
}

func (f logFormat) std(w io.Writer) slog.Handler {
	if f.json {
		return slog.NewJSONHandler(w, f.opts)
	}
	return slog.NewTextHandler(w, f.opts)
}

// handle formats r with both the standard handler of f and a fastHandler, and returns both
// outputs and the number of records the fastHandler handed on.
func (f logFormat) handle(t testing.TB, r slog.Record) (want, got string, fallbacks uint64) {
	t.Helper()
	var wb, gb bytes.Buffer
	werr := f.std(&wb).Handle(context.Background(), r.Clone())
	h := newFastHandler(&gb, f.json, f.opts)
	gerr := h.Handle(context.Background(), r.Clone())
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%s: standard handler returned %v, fast handler %v", f.name, werr, gerr)
	}
	return wb.String(), gb.String(), h.fallbacks.Load()
}

// The formats the emulator uses, a few options it does not, and ReplaceAttr functions that
// delete, rename and change the kind of attributes.
var logFormats = []logFormat{
	{"text", false, nil},
	{"json-millis", true, &slog.HandlerOptions{ReplaceAttr: millis}},
	{"json", true, nil},
	{"text-millis", false, &slog.HandlerOptions{ReplaceAttr: millis}},
	{"text-drop-time", false, &slog.HandlerOptions{ReplaceAttr: dropTime}},
	{"json-drop-time", true, &slog.HandlerOptions{ReplaceAttr: dropTime}},
	{"text-rewrite", false, &slog.HandlerOptions{ReplaceAttr: rewrite}},
	{"json-rewrite", true, &slog.HandlerOptions{ReplaceAttr: rewrite}},
	{"text-source", false, &slog.HandlerOptions{AddSource: true}},
	{"json-debug", true, &slog.HandlerOptions{Level: slog.LevelDebug}},
}

func dropTime(groups []string, a slog.Attr) slog.Attr {
	if groups == nil && a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

// rewrite exercises what a ReplaceAttr may return: nothing, a new key, another kind.
func rewrite(groups []string, a slog.Attr) slog.Attr {
	switch {
	case a.Key == "drop":
		return slog.Attr{}
	case a.Key == slog.LevelKey:
		return slog.String("severity", a.Value.String())
	case a.Key == slog.MessageKey:
		return slog.Attr{Key: "message", Value: a.Value}
	case a.Key == "to-int":
		return slog.Int("int", len(a.Value.String()))
	case a.Key == "to-group":
		return slog.Group("g", slog.Int("x", 1))
	case a.Key == "to-any":
		return slog.Any("any", []int{1, 2})
	case a.Key == "to-unicode":
		return slog.String("ключ", "значение")
	case a.Key == "to-empty-key":
		return slog.Int("", 7)
	case a.Key == "to-nan":
		return slog.Float64("nan", math.NaN())
	case a.Key == "to-level":
		return slog.Any("lvl", slog.LevelWarn+3)
	case groups != nil && a.Key == "k":
		return slog.String("K", "groups "+fmt.Sprint(len(groups)))
	}
	return a
}

// predictable reports whether the corpus knows which records f writes on the fast path: all
// it can reach unless a ReplaceAttr other than millis changes them.
func (f logFormat) predictable() bool {
	return f.opts == nil || f.opts.ReplaceAttr == nil || strings.HasSuffix(f.name, "-millis")
}

func (f logFormat) reachable() bool {
	return f.opts == nil || !f.opts.AddSource
}

// requestRecord is the record the emulator's middleware logs for each request.
func requestRecord(now time.Time) slog.Record {
	r := slog.NewRecord(now, slog.LevelInfo, "request", 0)
	r.AddAttrs(
		slog.String("method", "POST"),
		slog.String("path", "/v1/generations"),
		slog.String("tenant", "default"),
		slog.Int("status", 201),
		slog.Float64("duration_ms", 1.234),
		slog.String("request_id", "req_0123456789abcdef"))
	return r
}

func TestFastHandlerRequestLine(t *testing.T) {
	now := time.Date(2025, 3, 4, 5, 6, 7, 891234567, time.UTC)
	tests := []struct {
		f    logFormat
		want string
	}{
		{logFormats[0], "time=2025-03-04T05:06:07.891Z level=INFO msg=request method=POST path=/v1/generations tenant=default status=201 duration_ms=1.234 request_id=req_0123456789abcdef\n"},
		{logFormats[1], `{"time":"2025-03-04T05:06:07.891234567Z","level":"INFO","msg":"request","method":"POST","path":"/v1/generations","tenant":"default","status":201,"duration_ms":1.234,"request_id":"req_0123456789abcdef"}` + "\n"},
	}
	for _, tt := range tests {
		want, got, fallbacks := tt.f.handle(t, requestRecord(now))
		if want != tt.want {
			t.Fatalf("%s: the standard handler wrote %q, the test expects %q", tt.f.name, want, tt.want)
		}
		if got != want {
			t.Errorf("%s: got %q, want %q", tt.f.name, got, want)
		}
		if fallbacks != 0 {
			t.Errorf("%s: the request line went to the standard handler", tt.f.name)
		}
	}
}

// TestFastHandlerCases pins records at the edges of the fast path: what it writes itself must
// match the standard handler, and what it cannot must be handed on.
func TestFastHandlerCases(t *testing.T) {
	tm := time.Date(2024, 12, 31, 23, 59, 59, 999_900_000, time.FixedZone("", -(3*3600+30*60)))
	tests := []struct {
		name  string
		msg   string
		attrs []slog.Attr
		fast  bool // in text and in json without ReplaceAttr
	}{
		{"empty message", "", nil, true},
		{"quoted values", "a b", []slog.Attr{slog.String("k", ""), slog.String("q", `say "hi"`), slog.String("eq", "a=b"), slog.String("bs", `a\b`), slog.String("ctl", "a\x01\tb\n"), slog.String("del", "a\x7f"), slog.String("html", "<a&b>")}, true},
		{"quoted keys", "m", []slog.Attr{slog.Int("", 1), slog.Int("a b", 2), slog.Int("a=b", 3), slog.Int(`"`, 4)}, true},
		{"numbers", "m", []slog.Attr{slog.Int64("min", math.MinInt64), slog.Uint64("max", math.MaxUint64), slog.Float64("z", 0), slog.Float64("nz", math.Copysign(0, -1)), slog.Float64("big", 1e21), slog.Float64("below", 999999999999999900000), slog.Float64("small", 1e-7), slog.Float64("edge", 1e-6), slog.Float64("max", math.MaxFloat64), slog.Float64("sub", 5e-324)}, true},
		{"bools and durations", "m", []slog.Attr{slog.Bool("t", true), slog.Bool("f", false), slog.Duration("d", 1500*time.Millisecond), slog.Duration("neg", -time.Nanosecond), slog.Duration("zero", 0)}, true},
		{"time attrs", "m", []slog.Attr{slog.Time("at", tm), slog.Time("zero", time.Time{}), slog.Time("last", time.Date(9999, 12, 31, 23, 59, 59, 1e9-1, time.UTC)), slog.Time("first", time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC))}, true},
		{"year 10000", "m", []slog.Attr{slog.Time("at", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))}, false}, // fast in text only
		{"year -1", "m", []slog.Attr{slog.Time("at", time.Date(-1, 12, 31, 23, 59, 59, 0, time.UTC))}, false},  // fast in text only
		{"empty attr", "m", []slog.Attr{{}, slog.Int("after", 1)}, true},
		{"non-ascii message", "héllo", nil, false},
		{"non-ascii key", "m", []slog.Attr{slog.Int("ключ", 1)}, false},
		{"non-ascii value", "m", []slog.Attr{slog.String("k", "\u2028")}, false},
		{"invalid utf-8", "m", []slog.Attr{slog.String("k", "\xff")}, false},
		{"group", "m", []slog.Attr{slog.Group("g", slog.Int("a", 1))}, false},
		{"empty group", "m", []slog.Attr{slog.Group("g")}, true}, // AddAttrs leaves it out
		{"any", "m", []slog.Attr{slog.Any("a", []int{1})}, false},
		{"error", "m", []slog.Attr{slog.Any("err", errors.New("boom"))}, false},
		{"nil any", "m", []slog.Attr{slog.Any("nil", nil)}, false},
		{"log valuer", "m", []slog.Attr{slog.Any("v", valuer{})}, false},
		{"level attr", "m", []slog.Attr{slog.Any("lvl", slog.LevelWarn)}, true},
	}
	for _, f := range logFormats {
		for _, tt := range tests {
			r := slog.NewRecord(tm, slog.LevelInfo+2, tt.msg, 0)
			r.AddAttrs(tt.attrs...)
			want, got, fallbacks := f.handle(t, r)
			if got != want {
				t.Errorf("%s, %s:\ngot  %q\nwant %q", f.name, tt.name, got, want)
			}
			fast := tt.fast || (strings.HasPrefix(tt.name, "year") && !f.json)
			if f.opts == nil && (fallbacks == 0) != fast {
				t.Errorf("%s, %s: %d records handed on, want fast path %v", f.name, tt.name, fallbacks, fast)
			}
		}
	}
}

type valuer struct{}

func (valuer) LogValue() slog.Value { return slog.IntValue(42) }

// TestFastHandlerTimes compares times around what the once-a-second cache of formatted
// seconds must get right: its bounds, zone changes within a day, fractions with zeros, and
// the same second in several locations one after another.
func TestFastHandlerTimes(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	var times []time.Time
	for _, sec := range []int64{firstCachedSecond, lastCachedSecond} {
		for d := int64(-90000); d <= 90000; d += 15000 {
			times = append(times, time.Unix(sec+d, 999_999_999), time.Unix(sec+d, 0), time.Unix(sec+d, 1))
		}
	}
	dst := time.Date(2024, 11, 3, 5, 59, 59, 0, time.UTC) // 01:59:59 EDT, then 01:00:00 EST
	for d := range 3 {
		times = append(times, dst.Add(time.Duration(d)*time.Second), dst.Add(time.Duration(d)*time.Second+500*time.Millisecond))
	}
	for _, ns := range []int{1, 10, 100_000, 999_000, 1_000_000, 120_000_000, 100_000_000, 999_999_999, 5_000_100} {
		times = append(times, time.Unix(1_700_000_000, int64(ns)))
	}
	locs := append(testLocations(t), ny)
	for _, tm := range times {
		for _, loc := range locs {
			for _, f := range logFormats[:3] {
				for _, at := range []time.Time{tm.In(loc), tm.In(locs[0]), tm.In(loc)} {
					r := slog.NewRecord(at, slog.LevelInfo, "m", 0)
					r.AddAttrs(slog.Time("t", at))
					if want, got, _ := f.handle(t, r); got != want {
						t.Fatalf("%s, %v:\ngot  %q\nwant %q", f.name, at, got, want)
					}
				}
			}
		}
	}
}

// TestFastHandlerReplaceAttr checks each kind of change a ReplaceAttr can make.
func TestFastHandlerReplaceAttr(t *testing.T) {
	tm := time.Date(2025, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	tests := []struct {
		name string
		attr slog.Attr
		fast bool
	}{
		{"kept", slog.Int("n", 1), true},
		{"dropped", slog.Int("drop", 1), true},
		{"to int", slog.String("to-int", "four"), true},
		{"to level", slog.Int("to-level", 0), true},
		{"to empty key", slog.Int("to-empty-key", 0), true},
		{"to group", slog.Int("to-group", 1), false},
		{"to any", slog.Int("to-any", 1), false},
		{"to unicode", slog.Int("to-unicode", 1), false},
		{"to nan", slog.Int("to-nan", 1), false}, // text writes NaN; JSON an error text
		{"groups argument", slog.Int("k", 1), true},
		{"duration in millis", slog.Duration("took", 1234567*time.Nanosecond), true},
	}
	for _, f := range logFormats {
		if f.opts == nil || f.opts.ReplaceAttr == nil {
			continue
		}
		for _, tt := range tests {
			r := slog.NewRecord(tm, slog.LevelError, "m", 0)
			r.AddAttrs(tt.attr)
			want, got, fallbacks := f.handle(t, r)
			if got != want {
				t.Errorf("%s, %s:\ngot  %q\nwant %q", f.name, tt.name, got, want)
			}
			// Only rewrite changes these attributes; NaN is a fine number in text.
			fast := tt.fast || !strings.Contains(f.name, "rewrite") || (tt.name == "to nan" && !f.json)
			if (fallbacks == 0) != fast {
				t.Errorf("%s, %s: %d records handed on, want fast path %v", f.name, tt.name, fallbacks, fast)
			}
		}
	}
}

// TestFastHandlerCorpus compares both handlers on generated records, and checks that every
// record within the fast path's reach is written by the fast path.
func TestFastHandlerCorpus(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	g := recordGen{rng: rng, locs: testLocations(t)}
	n := 4000
	if testing.Short() {
		n = 500
	}
	fastSeen := map[string]int{}
	for i := range n {
		r, fastText, fastJSON := g.record()
		for _, f := range logFormats {
			want, got, fallbacks := f.handle(t, r)
			if got != want {
				t.Fatalf("record %d, %s:\ngot  %q\nwant %q", i, f.name, got, want)
			}
			if f.predictable() {
				wantFast := fastText
				if f.json {
					wantFast = fastJSON
				}
				if !f.reachable() {
					wantFast = false
				}
				if (fallbacks == 0) != wantFast {
					t.Fatalf("record %d, %s: %d records handed on, want fast path %v: %q", i, f.name, fallbacks, wantFast, want)
				}
			}
			if fallbacks == 0 {
				fastSeen[f.name]++
			}
		}
	}
	// The corpus must reach both paths, or the comparison above proves little.
	for _, f := range logFormats {
		if f.reachable() && (fastSeen[f.name] < n/10 || fastSeen[f.name] > n*9/10) {
			t.Errorf("%s: %d of %d records took the fast path; the corpus should mix both", f.name, fastSeen[f.name], n)
		}
	}
}

func testLocations(t testing.TB) []*time.Location {
	locs := []*time.Location{time.UTC, time.Local, time.FixedZone("", 5*3600+30*60), time.FixedZone("LMT", -(3*3600 + 7)), time.FixedZone("", 14*3600)}
	for _, name := range []string{"America/New_York", "Australia/Lord_Howe", "Asia/Kathmandu"} {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		locs = append(locs, loc)
	}
	return locs
}

// recordGen makes random records from pieces chosen to sit on the edges of slog's formats.
type recordGen struct {
	rng  *rand.Rand
	locs []*time.Location
}

var stringPieces = []string{"", " ", "=", `"`, `\`, "\x00", "\x1f", "\x7f", "\t", "\n", "\r", "<", ">", "&", "a", "abc", "GET", "/v1/x", "k=v", "-", "+", ".", "{}", "\u2028", "\u2029", "é", "日本", "\xff", "\u00a0", "\U0001F600", "'"}

func (g *recordGen) string() string {
	var b strings.Builder
	for range g.rng.IntN(4) {
		if g.rng.IntN(3) == 0 {
			for range g.rng.IntN(6) {
				b.WriteByte(byte(g.rng.IntN(0x80)))
			}
		} else {
			b.WriteString(stringPieces[g.rng.IntN(len(stringPieces))])
		}
	}
	return b.String()
}

func (g *recordGen) time() time.Time {
	var t time.Time
	switch g.rng.IntN(6) {
	case 0:
		return time.Time{}
	case 1:
		t = time.Now()
	case 2: // any year the formats can hold, and some they cannot
		t = time.Unix(g.rng.Int64N(800_000_000_000)-400_000_000_000, g.rng.Int64N(1e9))
	case 3: // whole milliseconds and seconds, where trailing zeros are trimmed
		t = time.Unix(g.rng.Int64N(2e9), g.rng.Int64N(1000)*1e6)
	case 4:
		t = time.Unix(g.rng.Int64N(2e9), 0)
	default:
		t = time.Date(g.rng.IntN(3)-1, 1, 1, 0, 0, 0, g.rng.IntN(1e9), time.UTC) // around year 0
	}
	return t.In(g.locs[g.rng.IntN(len(g.locs))])
}

var floatPieces = []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 1.234, 1e21, 1e20, 1e-7, 1e-6, 9.999e-7, 123456789.125, math.MaxFloat64, math.SmallestNonzeroFloat64, math.NaN(), math.Inf(1), math.Inf(-1)}

var levels = []slog.Level{slog.LevelInfo, slog.LevelDebug, slog.LevelWarn, slog.LevelError, slog.LevelInfo + 2, slog.LevelDebug - 4, slog.LevelError + 100, -1}

// record returns a random record, and whether it is within the fast path's reach in text and
// in JSON (for a handler without ReplaceAttr, or with millis).
func (g *recordGen) record() (r slog.Record, fastText, fastJSON bool) {
	ascii := func(s string) bool {
		for i := range len(s) {
			if s[i] >= utf8.RuneSelf {
				return false
			}
		}
		return true
	}
	fastText, fastJSON = true, true
	msg := g.string()
	fastText = fastText && ascii(msg)
	t := g.time()
	if y := t.Year(); !t.IsZero() && (y < 0 || y >= 10000) {
		fastJSON = false
	}
	r = slog.NewRecord(t, levels[g.rng.IntN(len(levels))], msg, 0)
	for range g.rng.IntN(11) {
		key := g.string()
		if g.rng.IntN(3) > 0 {
			key = "k" // mostly plain keys, or most records would fall back
		}
		var a slog.Attr
		switch g.rng.IntN(12) {
		case 0, 1, 2:
			s := g.string()
			fastText = fastText && ascii(s)
			a = slog.String(key, s)
		case 3:
			a = slog.Int64(key, g.rng.Int64()-g.rng.Int64())
		case 4:
			a = slog.Uint64(key, g.rng.Uint64()>>g.rng.IntN(64))
		case 5:
			f := floatPieces[g.rng.IntN(len(floatPieces))]
			if g.rng.IntN(2) == 0 {
				f = math.Float64frombits(g.rng.Uint64())
			}
			if math.IsNaN(f) || math.IsInf(f, 0) {
				fastJSON = false
			}
			a = slog.Float64(key, f)
		case 6:
			a = slog.Bool(key, g.rng.IntN(2) == 0)
		case 7:
			a = slog.Duration(key, time.Duration(g.rng.Int64()>>g.rng.IntN(64)))
		case 8:
			at := g.time()
			if y := at.Year(); y < 0 || y >= 10000 {
				fastJSON = false
			}
			a = slog.Time(key, at)
		case 9:
			a = slog.Any(key, levels[g.rng.IntN(len(levels))]) // written as its String()
		case 10:
			switch g.rng.IntN(4) {
			case 0:
				a = slog.Group(key, slog.Int("x", 1))
			case 1:
				a = slog.Any(key, errors.New(g.string()))
			case 2:
				a = slog.Any(key, valuer{})
			default:
				a = slog.Any(key, nil) // the empty Attr if key is empty
			}
			if !a.Equal(slog.Attr{}) {
				fastText, fastJSON = false, false
			}
		default:
			a = slog.Attr{} // left out by both
		}
		if !a.Equal(slog.Attr{}) {
			fastText = fastText && ascii(key)
		}
		r.AddAttrs(a)
	}
	return r, fastText, fastJSON && fastText
}

// TestFastHandlerDerived checks loggers made With attributes or a group: the standard
// handler writes them, so they match it.
func TestFastHandlerDerived(t *testing.T) {
	now := time.Date(2025, 3, 4, 5, 6, 7, 8, time.UTC)
	for _, f := range logFormats[:2] {
		var wb, gb bytes.Buffer
		fast := newFastHandler(&gb, f.json, f.opts)
		for _, h := range []struct {
			name string
			fn   func(slog.Handler) slog.Handler
		}{
			{"with attrs", func(h slog.Handler) slog.Handler { return h.WithAttrs([]slog.Attr{slog.String("a", "1")}) }},
			{"with group", func(h slog.Handler) slog.Handler { return h.WithGroup("g") }},
			{"group then attrs", func(h slog.Handler) slog.Handler {
				return h.WithGroup("g").WithAttrs([]slog.Attr{slog.Int("b", 2)}).WithGroup("h")
			}},
			{"empty group", func(h slog.Handler) slog.Handler { return h.WithGroup("") }},
		} {
			wb.Reset()
			gb.Reset()
			r := requestRecord(now)
			r.AddAttrs(slog.Duration("took", time.Second))
			if err := h.fn(f.std(&wb)).Handle(context.Background(), r.Clone()); err != nil {
				t.Fatal(err)
			}
			if err := h.fn(fast).Handle(context.Background(), r.Clone()); err != nil {
				t.Fatal(err)
			}
			if gb.String() != wb.String() {
				t.Errorf("%s, %s:\ngot  %q\nwant %q", f.name, h.name, gb.String(), wb.String())
			}
		}
	}
}

func TestFastHandlerEnabled(t *testing.T) {
	var lv slog.LevelVar
	lv.Set(slog.LevelWarn)
	for _, opts := range []*slog.HandlerOptions{nil, {Level: slog.LevelDebug}, {Level: &lv}} {
		for _, json := range []bool{false, true} {
			f := logFormat{"", json, opts}
			fast := newFastHandler(io.Discard, json, opts)
			std := f.std(io.Discard)
			for _, l := range levels {
				if got, want := fast.Enabled(context.Background(), l), std.Enabled(context.Background(), l); got != want {
					t.Errorf("opts %+v, json %v, level %v: Enabled %v, want %v", opts, json, l, got, want)
				}
			}
		}
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestFastHandlerWriteError(t *testing.T) {
	h := newFastHandler(failingWriter{}, false, nil)
	if err := h.Handle(context.Background(), requestRecord(time.Now())); err == nil {
		t.Error("a failed write returned no error")
	}
	if h.fallbacks.Load() != 0 {
		t.Error("the request line went to the standard handler")
	}
}

// unsafeWriter fails the test if two writes overlap.
type unsafeWriter struct {
	busy  sync.Mutex
	t     *testing.T
	lines []string
}

func (w *unsafeWriter) Write(p []byte) (int, error) {
	if !w.busy.TryLock() {
		w.t.Error("two writes at once")
		return len(p), nil
	}
	defer w.busy.Unlock()
	w.lines = append(w.lines, string(p))
	return len(p), nil
}

// TestFastHandlerConcurrent logs from several goroutines at once, through the fast path, the
// standard handler and a derived handler, and expects every line whole and written alone.
func TestFastHandlerConcurrent(t *testing.T) {
	now := time.Date(2025, 3, 4, 5, 6, 7, 8, time.UTC)
	for _, f := range logFormats[:2] {
		w := &unsafeWriter{t: t}
		h := newFastHandler(w, f.json, f.opts)
		derived := h.WithAttrs([]slog.Attr{slog.Int("d", 1)})
		var expect []string
		var mu sync.Mutex
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 50 {
					r := requestRecord(now)
					r.AddAttrs(slog.Int("g", g), slog.Int("i", i))
					var handler slog.Handler = h
					switch i % 3 {
					case 1:
						r.AddAttrs(slog.String("u", "ünïcode")) // handed on
					case 2:
						handler = derived
					}
					if err := handler.Handle(context.Background(), r.Clone()); err != nil {
						t.Error(err)
					}
					var b bytes.Buffer
					sh := f.std(&b)
					if i%3 == 2 {
						sh = sh.WithAttrs([]slog.Attr{slog.Int("d", 1)})
					}
					_ = sh.Handle(context.Background(), r)
					mu.Lock()
					expect = append(expect, b.String())
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		slices.Sort(expect)
		slices.Sort(w.lines)
		if !slices.Equal(w.lines, expect) {
			t.Errorf("%s: the lines written differ from the standard handler's", f.name)
		}
		if n := h.fallbacks.Load(); n == 0 || n >= 8*50 {
			t.Errorf("%s: %d of %d records handed on; want only those with Unicode", f.name, n, 8*50)
		}
	}
}

func FuzzFastHandler(f *testing.F) {
	f.Add("msg", "k", "v", int64(-1), uint64(1), 1.5, int64(1e9), int64(0))
	f.Add("", "", "", int64(0), uint64(0), 0.0, int64(0), int64(-1))
	f.Add("a b", "a=b", "\"\\\x01<>&\u2028", int64(math.MinInt64), uint64(math.MaxUint64), 1e21, int64(-1), int64(1e18))
	f.Add("é", "\xff", "\x7f", int64(5), uint64(5), 1e-7, int64(0), int64(-62135596800))
	f.Fuzz(func(t *testing.T, msg, key, val string, i int64, u uint64, fl float64, d int64, sec int64) {
		r := slog.NewRecord(time.Unix(sec, d%1e9).In(time.FixedZone("", int(d%(15*3600)))), slog.Level(i%20), msg, 0)
		r.AddAttrs(slog.String(key, val), slog.Int64(val, i), slog.Uint64(key, u), slog.Float64(key, fl),
			slog.Duration(val, time.Duration(d)), slog.Bool(key, u%2 == 0), slog.Time(key, time.Unix(0, i)))
		for _, f := range logFormats[:4] {
			if want, got, _ := f.handle(t, r); got != want {
				t.Errorf("%s:\ngot  %q\nwant %q", f.name, got, want)
			}
		}
	})
}

// namedHandler is a handler a benchmark compares, with its name.
type namedHandler struct {
	name    string
	handler slog.Handler
}

// bothHandlers returns the standard handler of a format and the fast one, writing nowhere.
func bothHandlers(f logFormat) []namedHandler {
	return []namedHandler{
		{"standard", f.std(io.Discard)},
		{"fast", newFastHandler(io.Discard, f.json, f.opts)},
	}
}

// BenchmarkRequestLine measures the handler alone on the request line the middleware logs
// (the record is made once: the middleware pays for that with either handler).
func BenchmarkRequestLine(b *testing.B) {
	r := requestRecord(time.Now())
	for _, f := range logFormats[:2] {
		for _, h := range bothHandlers(f) {
			b.Run(f.name+"/"+h.name, func(b *testing.B) {
				b.ReportAllocs()
				ctx := context.Background()
				for b.Loop() {
					_ = h.handler.Handle(ctx, r)
				}
			})
		}
	}
}

// BenchmarkRequestLogged measures a whole request (the health check, the cheapest) through
// the emulator's handler, logged by each handler, to show the log line's share of a request.
func BenchmarkRequestLogged(b *testing.B) {
	for _, f := range logFormats[:2] {
		for _, h := range bothHandlers(f) {
			b.Run(f.name+"/"+h.name, func(b *testing.B) {
				srv, err := emulator.NewServer(emulator.Config{CatalogFile: smallCatalog, ManualClock: true, Seeded: true, Seed: 1, Logger: slog.New(h.handler)})
				if err != nil {
					b.Fatal(err)
				}
				defer srv.Close()
				req := httptest.NewRequest(http.MethodGet, "/_emulator/health", nil)
				b.ReportAllocs()
				for b.Loop() {
					rec := httptest.NewRecorder()
					srv.ServeHTTP(rec, req)
					if rec.Code != http.StatusOK {
						b.Fatalf("health: %d", rec.Code)
					}
				}
				if fast, ok := h.handler.(*fastHandler); ok && fast.fallbacks.Load() != 0 {
					b.Fatalf("%d request lines went to the standard handler", fast.fallbacks.Load())
				}
			})
		}
	}
}

// TestConfigureFastHandler checks that both log formats of the emulator write through the
// fast handler, and that the request line it logs takes the fast path.
func TestConfigureFastHandler(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		fs, o, _ := flagSet("mediagen-emulator", func(string) string { return "" }, io.Discard)
		if err := fs.Parse([]string{"--log-format", format}); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		_, logger, err := configure(o, &out)
		if err != nil {
			t.Fatal(err)
		}
		h, ok := logger.Handler().(*fastHandler)
		if !ok {
			t.Fatalf("--log-format %s: the logger's handler is %T", format, logger.Handler())
		}
		if err := h.Handle(context.Background(), requestRecord(time.Now())); err != nil {
			t.Fatal(err)
		}
		if h.fallbacks.Load() != 0 || !strings.Contains(out.String(), "req_0123456789abcdef") {
			t.Errorf("--log-format %s: the request line was not written by the fast path: %q", format, out.String())
		}
	}
}
