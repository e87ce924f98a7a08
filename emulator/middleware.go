package emulator

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evolve"
	"github.com/mediagen/mediagen-emulator/emulator/internal/observe"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
)

type ctxKey int

// ctxInfo holds what the frame learns of a request before routing.
const ctxInfo ctxKey = 0

// headerTenant names the tenant a request belongs to.
const headerTenant = "X-Emulator-Tenant"

// reqInfo is what the frame settles about a request before it is routed, and the key that
// requireKey authenticates before the handler runs; neither changes afterwards. Everything else
// flows as arguments and return values.
type reqInfo struct {
	id     string
	tenant *sim.Tenant
	world  *sim.World // the world the request began with; a reset mid-request does not split it
	token  string     // the bearer key, without a tenant suffix
	key    *catalog.Key
	query  url.Values
	qerr   error
	vars   map[string]string // the variables of the matched route's path
	// rec is the frame's recorder, the one place the journal and the log learn what the
	// request was about and how it was answered.
	rec *recorder
}

func infoOf(r *http.Request) *reqInfo {
	if n, ok := r.Context().Value(ctxInfo).(*reqInfo); ok {
		return n
	}
	return &reqInfo{}
}

// worldOf returns the world the request began with.
func worldOf(r *http.Request) *sim.World { return infoOf(r).world }

// requestID returns the id the request carries or was given.
func requestID(r *http.Request) string { return infoOf(r).id }

// keyOf returns the authenticated API key of a request, set by requireKey.
func keyOf(r *http.Request) *catalog.Key { return infoOf(r).key }

// query returns the request's query parameters, parsed once by the frame. A query string that
// does not parse (a bad %-escape, say) is an error rather than half read.
func query(r *http.Request) (url.Values, error) {
	n := infoOf(r)
	return n.query, n.qerr
}

// pathVar returns a variable of the matched route's path, such as a model or job id.
func pathVar(r *http.Request, name string) string { return infoOf(r).vars[name] }

// maxRequestIDLen bounds an echoed X-Request-Id; longer or non-printable ones are replaced.
const maxRequestIDLen = 200

func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

// recorder remembers what the journal and the log want to know of an answer: its status and
// problem code, and what the request turned out to be about.
type recorder struct {
	http.ResponseWriter
	status   int
	bytes    int
	writeErr bool // a write to the connection failed: the client did not get every byte
	// evolving says the forward-compatibility mode was on for the answer, in any of its kinds;
	// held is the status WriteHeader holds back in it until the body is rewritten and its
	// Content-Length known. Both sit in what would be padding.
	evolving bool
	held     uint16
	code     string        // the problem code, when the answer was an error
	link     sim.LinkFacts // a download's signed link (files.go), for its note

	account, fault, faultKind string
	facts                     facts
	peeked                    *catalog.Model // the model found before routing, for rules that match models
	// arrival and received are when the request came in, among the tenant's events and on its
	// clock; ctx ends when the client hangs up, and left says a parked one did.
	arrival  uint64
	received time.Time
	ctx      context.Context
	left     atomic.Bool

	// keepBody asks for the answer's body (its first write, which is all of a JSON answer) in
	// body, and for what the request body reader read in sent, for the journal.
	keepBody bool
	body     []byte
	sent     []byte

	// info is what the frame settled about the request; the request's context points here.
	info  reqInfo
	start time.Time

	// journaled asks for the request's journal entry, recorded once, with the status known and
	// before anything reaches the client, so it is in place by the time the client reads the
	// answer. It keeps these parts of the request rather than the request, which a parked
	// generation would otherwise hold on to.
	journaled                       bool
	method, path, rawQuery, idemKey string
	header                          http.Header // read only when the entry is made
	// route is the matched route's method and path template, for coverage of error answers.
	route string

	// parked, once a wait=true generation has taken over the connection to answer later, is
	// what the answer needs; until then nothing is journaled or logged for the request.
	parked *parking

	// evolve, in the forward-compatibility mode, is the kit whose member every JSON object of
	// the answer gains.
	evolve *evolve.Kit
}

// WriteHeader remembers the first status written. Nothing reaches the client before the first
// Write or the handler's return, so the journal entry waits for either, and has the body.
func (rec *recorder) WriteHeader(status int) {
	if rec.status == 0 {
		rec.status = status
	}
	if rec.evolve != nil && rec.held == 0 && rewritable(rec.Header(), status) {
		rec.held = uint16(status)
		return
	}
	rec.ResponseWriter.WriteHeader(status)
}

// rewritable reports whether an answer's body is JSON written whole (writeLine and writeError
// give a Content-Length), so the forward-compatibility mode can add its member.
func rewritable(h http.Header, status int) bool {
	if status == http.StatusNotModified || status == http.StatusNoContent || h.Get("Content-Length") == "" {
		return false
	}
	ct := h.Get("Content-Type")
	return ct == "application/json" || ct == "application/problem+json"
}

// evolved lays the kit's member into every object of an answer held back by WriteHeader, sets
// its Content-Length and sends the status. A body that is not the whole answer its
// Content-Length announced goes as it is.
func (rec *recorder) evolved(b []byte) []byte {
	status := int(rec.held)
	rec.held = 0
	h := rec.Header()
	if h.Get("Content-Length") == strconv.Itoa(len(b)) {
		b = rec.withMember(b)
		h["Content-Length"] = []string{strconv.Itoa(len(b))}
	}
	rec.ResponseWriter.WriteHeader(status)
	return b
}

// withMember is a JSON answer with the kit's member laid into every object, counted for
// coverage: the one place an answer's body gains it, written now or by a parked generation.
func (rec *recorder) withMember(body []byte) []byte {
	rec.info.world.Coverage().Hit(evidence.EvolutionMember)
	return rec.evolve.AddMembers(make([]byte, 0, len(body)+len(body)/8+64), body)
}

// flushHeld sends a status held back for a body that never came.
func (rec *recorder) flushHeld() {
	if rec.held != 0 {
		status := int(rec.held)
		rec.held = 0
		rec.ResponseWriter.WriteHeader(status)
	}
}

// Write counts the bytes, notes an implicit 200, and journals the request as its answer starts
// with the body as written: every JSON answer is written whole, in one Write.
func (rec *recorder) Write(b []byte) (int, error) {
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	if rec.held != 0 {
		b = rec.evolved(b)
	}
	if rec.journaled {
		if rec.keepBody && rec.body == nil {
			rec.body = bytes.TrimSuffix(b, []byte("\n"))
		}
		rec.sending()
	}
	n, err := rec.ResponseWriter.Write(b)
	rec.bytes += n
	rec.writeErr = rec.writeErr || err != nil
	return n, err
}

func (rec *recorder) sending() {
	if rec.parked != nil && rec.status == 0 {
		return // the answer comes later, from the parked generation
	}
	if rec.journaled {
		rec.journaled = false
		world := rec.info.world
		f := &rec.facts
		e := evidence.Entry{
			Time: world.Now(), ReceivedAt: rec.received, Method: rec.method, Path: rec.path, Query: rec.rawQuery,
			Status: rec.status, Code: rec.code, Account: rec.account, Model: f.model, JobID: f.jobID,
			RequestID: rec.info.id, IdempotencyKey: rec.idemKey, Fault: rec.fault, FaultKind: rec.faultKind,
			ClientLeft: rec.left.Load() || (rec.parked == nil && rec.ctx != nil && rec.ctx.Err() != nil),
			QuoteID:    f.quoteID, QuoteExpiresAt: f.quoteExpires, JobStatus: f.jobStatus, InputDigest: f.inputDigest,
			DurationMS:  math.Round(float64(time.Since(rec.start).Microseconds())) / 1000,
			RequestBody: rec.sent, ResponseBody: rec.body, // the journal caps both
			Wall: world.SkipWall(rec.start),
		}
		e.RetryAfter, e.RetryAt = rec.retryAfter()
		world.Journal().AddRequest(e, rec.header, rec.arrival)
		// Coverage learns what happened here too, from the same facts. A gateway fault's page
		// has no code: the fault's own case counts it.
		cov := world.Coverage()
		if rec.status >= 400 && (rec.code != "" || rec.fault == "") {
			cov.Error(rec.route, rec.status, rec.code)
		}
		if f.replayed {
			cov.Hit(evidence.Replay)
		}
		if f.waitedOut {
			cov.Hit(evidence.WaitTimedOut)
		}
	}
}

// retryAfter is the Retry-After the answer carries, in seconds, or 0, and when it is an
// HTTP-date, that instant: the report judges whether the client waited it out, to the second
// the date names.
func (rec *recorder) retryAfter() (int, time.Time) {
	if rec.status != http.StatusTooManyRequests && rec.status != http.StatusServiceUnavailable {
		return 0, time.Time{}
	}
	h := rec.Header()
	v := h.Get("Retry-After")
	if n, err := strconv.Atoi(v); err == nil {
		return max(n, 0), time.Time{}
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0, time.Time{}
	}
	return max(retryAfterDate(h), 0), at
}

// Unwrap lets http.ResponseController reach the connection (flush, deadlines, hijack).
func (rec *recorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }

// keepSent leaves what was read of a request's body for the journal, when it wants it.
func keepSent(r *http.Request, body []byte) {
	if rec := infoOf(r).rec; rec != nil && rec.keepBody {
		rec.sent = body
	}
}

// facts are what the core decided about a request, which the journal keeps for the report:
// the model it named, the quote it made or used and that quote's expiry, the job it made or
// showed and its status, and a generation's input digest.
type facts struct {
	model, quoteID, jobID, jobStatus, inputDigest string
	quoteExpires                                  time.Time
	// replayed and waitedOut are flows coverage counts: an idempotent replay, and a wait=true
	// generation answered 202.
	replayed, waitedOut bool
}

// about notes the facts of a request, for the journal; fields left empty keep what an earlier
// note said.
func about(r *http.Request, f facts) {
	rec := infoOf(r).rec
	if rec == nil {
		return
	}
	g := &rec.facts
	for _, p := range [...]struct {
		to *string
		v  string
	}{{&g.model, f.model}, {&g.quoteID, f.quoteID}, {&g.jobID, f.jobID}, {&g.jobStatus, f.jobStatus}, {&g.inputDigest, f.inputDigest}} {
		if p.v != "" {
			*p.to = p.v
		}
	}
	if !f.quoteExpires.IsZero() {
		g.quoteExpires = f.quoteExpires
	}
	g.replayed, g.waitedOut = g.replayed || f.replayed, g.waitedOut || f.waitedOut
}

// frame wraps every request, routed or not: it assigns the request id, finds the tenant, sets
// the headers every response carries, turns a panic into internal_error, and logs one line.
func (s *Server) frame(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{ResponseWriter: w, start: time.Now()}
		// Registered first so it runs last: a parked generation's answer touches rec only
		// once every layer of this request is done with it.
		defer func() {
			if p := rec.parked; p != nil {
				close(p.released)
			}
		}()
		if watch := observe.Hook; watch != nil { // the package's tests check every answer against the OpenAPI document
			var answered func(fault string, evolved bool)
			rec.ResponseWriter, answered = watch(w, r)
			defer func() { answered(rec.fault, rec.evolving) }()
		}
		t, token, terr := s.tenantOf(r)
		// A tenant dropped between being found and being entered is found again, which makes
		// it anew; the default tenant is never dropped, so this ends.
		for t != nil && !t.Enter() {
			t, token, terr = s.tenantOf(r)
		}
		if t == nil {
			t = s.tenants.Default()
			t.Enter()
		}
		defer t.Leave()
		world := t.World()
		id := r.Header.Get("X-Request-Id")
		if !validRequestID(id) {
			id = world.RequestID()
		}
		info := &rec.info
		*info = reqInfo{id: id, tenant: t, world: world, token: token, rec: rec}
		if r.URL.RawQuery != "" { // most requests have none; reading a nil map finds nothing
			info.query, info.qerr = url.ParseQuery(r.URL.RawQuery)
		}
		r = r.WithContext(context.WithValue(r.Context(), ctxInfo, info))
		rec.ctx, rec.arrival, rec.received = r.Context(), world.Journal().Arrive(), world.Now()
		// Date follows the emulator's clock, like every timestamp in a body, so a client that
		// compares the two (expires_at against Date, say) sees one timeline. The three values
		// share one allocation; the names are already canonical.
		vs := [...]string{id, Version, httpDate(rec.received)}
		h := w.Header()
		h["X-Request-Id"], h["X-Emulator-Version"], h["Date"] = vs[0:1:1], vs[1:2:2], vs[2:3:3]
		if strings.HasPrefix(r.URL.Path, "/v1/") {
			if ev, kit := world.Evolution(); ev.Any() {
				evolveAnswer(rec, h, ev, kit)
			}
		}
		defer func() {
			rec.flushHeld()
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic", slog.String("request_id", id), slog.String("path", r.URL.Path),
					slog.String("panic", fmt.Sprint(v)), slog.String("stack", string(debug.Stack())))
				if rec.status == 0 {
					s.writeError(rec, r, problem.New(problem.Internal, "the emulator hit an unexpected condition; see its log for request %s", id))
				}
			}
			if rec.parked == nil { // a parked answer logs itself when it goes out
				s.logRequest(r, t.Name(), rec.status, rec.start, id)
			}
		}()
		if terr != nil {
			s.writeError(rec, r, terr)
			return
		}
		next.ServeHTTP(rec, r)
	})
}

// evolveAnswer readies a /v1 answer for the forward-compatibility mode: the undocumented
// header now, and the member once the body is written.
func evolveAnswer(rec *recorder, h http.Header, ev scenario.Evolution, kit *evolve.Kit) {
	rec.evolving = true
	if ev.Headers {
		h[kit.HeaderName] = []string{kit.HeaderValue}
		rec.info.world.Coverage().Hit(evidence.EvolutionHeader)
	}
	if ev.Members {
		rec.evolve = kit
	}
}

// lastDate is the Date header last made, reused while the second lasts: every answer has one.
var lastDate atomic.Pointer[dateText]

type dateText struct {
	unix int64
	text string
}

// httpDate formats t for a Date header.
func httpDate(t time.Time) string {
	unix := t.Unix()
	if d := lastDate.Load(); d != nil && d.unix == unix {
		return d.text
	}
	text := t.UTC().Format(http.TimeFormat)
	lastDate.Store(&dateText{unix, text})
	return text
}

// logRequest writes the one log line of an answered request. The record is handed to the
// handler directly, without the caller's program counter, which no handler of the emulator's
// reports and which costs the logger a stack walk on every request.
func (s *Server) logRequest(r *http.Request, tenant string, status int, start time.Time, id string) {
	h := s.log.Handler()
	if !h.Enabled(r.Context(), slog.LevelInfo) {
		return
	}
	now := time.Now()
	rec := slog.NewRecord(now, slog.LevelInfo, "request", 0)
	rec.AddAttrs(
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.String("tenant", tenant),
		slog.Int("status", status),
		slog.Float64("duration_ms", float64(now.Sub(start).Microseconds())/1000),
		slog.String("request_id", id))
	_ = h.Handle(r.Context(), rec) // a log line that cannot be written has nowhere to go
}

// tenantOf finds the tenant a request names, by X-Emulator-Tenant or by a key of the form
// KEY.NAME (an exact configured key always wins), and the bearer key without its suffix. A file
// URL names its tenant in its path. No name means the default tenant.
func (s *Server) tenantOf(r *http.Request) (*sim.Tenant, string, error) {
	header := r.Header.Get(headerTenant)
	token := bearer(r.Header.Get("Authorization"))
	suffix := ""
	if token != "" {
		if _, exact := s.catalog.Key(token); !exact {
			if i := strings.LastIndexByte(token, '.'); i > 0 {
				if _, ok := s.catalog.Key(token[:i]); ok {
					token, suffix = token[:i], token[i+1:]
				}
			}
		}
	}
	if header != "" && suffix != "" && header != suffix {
		return nil, token, problem.New(problem.InvalidTenant, "%s names tenant %q but the key names tenant %q; send one, or the same in both", headerTenant, header, suffix)
	}
	name := header
	if name == "" {
		name = suffix
	}
	if rest, ok := strings.CutPrefix(r.URL.Path, "/files/"); ok && strings.Count(rest, "/") == 2 {
		// /files/{tenant}/{job}/{name}: the URL is the whole address, as a browser sends it.
		t, ok := s.tenants.Lookup(rest[:strings.IndexByte(rest, '/')])
		if !ok {
			return nil, token, problem.New(problem.NotFound, "no file %s", r.URL.Path)
		}
		return t, token, nil
	}
	if name == "" {
		return s.tenants.Default(), token, nil
	}
	if t, ok := s.tenants.Lookup(name); ok {
		return t, token, nil
	}
	if r.URL.Path == "/_emulator/tenants" || strings.HasPrefix(r.URL.Path, "/_emulator/tenants/") {
		// The tenants' own routes act on the tenants named in their path: naming one that does
		// not exist yet (say, the one being deleted) must not make it.
		return s.tenants.Default(), token, nil
	}
	// Only a request that could act in a tenant makes one: one with a valid API key, or a
	// control request allowed to use the control API. A client without a key then cannot use
	// up --max-tenants, even where the control API is open to everyone.
	if _, known := s.catalog.Key(token); !known {
		if !strings.HasPrefix(r.URL.Path, "/_emulator/") {
			return nil, token, problem.New(problem.Unauthenticated, "tenant %q does not exist yet: a request makes it only with a valid API key, or with access to the control API", name)
		}
		if denied := s.controlDenied(r); denied != nil {
			return nil, token, denied
		}
	}
	t, err := s.tenants.Get(name)
	return t, token, err
}

// bearer returns the key of an Authorization: Bearer header, or "".
func bearer(auth string) string {
	scheme, token, found := strings.Cut(auth, " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// handlerFunc is an endpoint that returns its error instead of writing it.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// handle adapts a handlerFunc, writing any error it returns as problem+json.
func (s *Server) handle(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	})
}

// requireKey authenticates the bearer key and checks it holds a permission.
func (s *Server) requireKey(perm catalog.Permission, next handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		auth := r.Header.Get("Authorization")
		if auth == "" {
			return problem.New(problem.Unauthenticated, "send your API key as 'Authorization: Bearer <key>'")
		}
		token := infoOf(r).token
		if token == "" {
			return problem.New(problem.Unauthenticated, "the Authorization header must be 'Bearer <key>'")
		}
		key, ok := s.catalog.Key(token)
		if !ok {
			return problem.New(problem.Unauthenticated, "the API key is not known")
		}
		if !key.Can(perm) {
			return &problem.Error{Code: problem.PermissionDenied,
				Detail: fmt.Sprintf("this key lacks the %q permission", perm),
				Extra:  map[string]any{"permission": string(perm)}}
		}
		var peeked *catalog.Model
		if rec := infoOf(r).rec; rec != nil {
			rec.account = key.Account
			peeked = rec.peeked
		}
		if err := s.rateLimit(w, r, key, peeked); err != nil {
			return err
		}
		infoOf(r).key = key // set once, before the handler runs; no copy of the request for it
		return next(w, r)
	}
}

// rateLimit asks the world whether the request is within the scenario's limits. The
// X-RateLimit-* headers describe the tightest limit.
func (s *Server) rateLimit(w http.ResponseWriter, r *http.Request, key *catalog.Key, m *catalog.Model) error {
	d := worldOf(r).RateLimit(r.Method, r.URL.Path, key, m)
	if d == nil {
		return nil
	}
	reset := int(math.Ceil(d.Reset.Seconds()))
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(d.Limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(d.Remaining))
	h.Set("X-RateLimit-Reset", strconv.Itoa(reset))
	if !d.Allowed {
		return &problem.Error{Code: problem.RateLimited, RetryAfter: max(reset, 1), RetryAfterDate: d.RetryAfterDate,
			Detail: fmt.Sprintf("this key may make %d such requests per window; the next window opens in %ds", d.Limit, reset)}
	}
	return nil
}
