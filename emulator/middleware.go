package emulator

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gorilla/mux"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/download"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
	"github.com/mediagen/mediagen-emulator/emulator/internal/observe"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
)

type ctxKey int

// ctxInfo holds what the frame learns of a request before routing.
const ctxInfo ctxKey = 0

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
	route  string            // the matched route's method and path template, for coverage
	// staged is what the scenario's rules made of the request before routing, when they made
	// anything of it.
	staged *staged
	// rec is the frame's recorder, which answer tells what the request was about and how it
	// was answered.
	rec *recorder
}

// staged is what the traffic layer learned of a request for the layers after it: the model
// found before routing, for rules that match models, and the outcome a perturbation of the plan
// forces on the job a generation makes. Most requests have neither, and no staged.
type staged struct {
	peeked *catalog.Model
	steer  *steer
}

// peeked is the model found before routing, or nil.
func (n *reqInfo) peeked() *catalog.Model {
	if n.staged == nil {
		return nil
	}
	return n.staged.peeked
}

// steered is the outcome a perturbation forces on the request's generation, or nil.
func (n *reqInfo) steered() *steer {
	if n.staged == nil {
		return nil
	}
	return n.staged.steer
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

// recorder is the frame's writer: it remembers what the journal and the log want to know of
// an answer, its status and the facts of the request, and makes its journal entry as the answer
// starts. Its fields are written in this file alone, by the frame, its traffic layer and the
// recorder's own methods, which answer (note) and park call; handlers and the layers between
// return what they learn.
type recorder struct {
	http.ResponseWriter
	status   int
	bytes    int
	writeErr bool // a write to the connection failed: the client did not get every byte
	// evolving says the forward-compatibility mode was on for the answer, in any of its kinds.
	evolving bool
	// journaled asks for the request's journal entry, recorded once, with the status known and
	// before anything reaches the client, so it is in place by the time the client reads the
	// answer (beside the other flags, so the recorder keeps its size class).
	journaled bool
	facts     facts // what the request turned out to be about, and how it was answered
	// arrival and received are when the request came in, among the tenant's events and on its
	// clock; ctx ends when the client hangs up, and left says a parked one did.
	arrival  uint64
	received time.Time
	ctx      context.Context
	left     atomic.Bool

	// keepBody asks for the answer's body (its first write, which is all of a JSON answer) in
	// body, for the journal.
	keepBody bool
	body     []byte

	// info is what the frame settled about the request; the request's context points here.
	info  reqInfo
	start time.Time

	// The journal entry keeps these parts of the request rather than the request, which a
	// parked generation would otherwise hold on to; conn is the client's address and port, by
	// which the report tells connections apart.
	method, path, rawQuery, idemKey, conn string
	header                                http.Header // read only when the entry is made

	// parked, once a wait=true generation has taken over the connection to answer later, is
	// what the answer needs; until then nothing is journaled or logged for the request.
	parked *parking
}

// WriteHeader remembers the first status written. Nothing reaches the client before the first
// Write or the handler's return, so the journal entry waits for either, and has the body.
func (rec *recorder) WriteHeader(status int) {
	if rec.status == 0 {
		rec.status = status
	}
	rec.ResponseWriter.WriteHeader(status)
}

// Write counts the bytes, notes an implicit 200, and journals the request as its answer starts
// with the body as written: every JSON answer is written whole, in one Write.
func (rec *recorder) Write(b []byte) (int, error) {
	if rec.status == 0 {
		rec.status = http.StatusOK
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
			Status: rec.status, Code: f.code, Account: f.account, Model: f.model, JobID: f.jobID,
			RequestID: rec.info.id, IdempotencyKey: rec.idemKey, Fault: f.fault, FaultKind: f.faultKind,
			ClientLeft: rec.left.Load() || (rec.parked == nil && rec.ctx != nil && rec.ctx.Err() != nil),
			QuoteID:    f.quoteID, QuoteExpiresAt: f.quoteExpires, JobStatus: f.jobStatus, InputDigest: f.inputDigest,
			DurationMS:  math.Round(float64(time.Since(rec.start).Microseconds())) / 1000,
			RequestBody: f.sent, ResponseBody: rec.body, // the journal caps both
			Wall: world.SkipWall(rec.start), Conn: rec.conn,
		}
		if rec.status == http.StatusTooManyRequests || rec.status == http.StatusServiceUnavailable {
			e.RetryAfter, e.RetryAt = int(f.retryAfter), f.retryAt // the report judges whether the client waited
		}
		world.Journal().AddRequest(e, rec.header, rec.arrival)
		// Coverage learns what happened here too, from the same facts. A gateway fault's page
		// has no code: the fault's own case counts it.
		cov := world.Coverage()
		if rec.status >= 400 && (f.code != "" || f.fault == "") {
			route := f.route
			if route == "" {
				route = rec.info.route
			}
			cov.Error(route, rec.status, f.code)
		}
		if f.replayed {
			cov.Hit(evidence.Replay)
		}
		if f.waitedOut {
			cov.Hit(evidence.WaitTimedOut)
		}
		if f.evolvedType {
			cov.Hit(evidence.EvolutionOutputType)
		}
	}
}

// Unwrap lets http.ResponseController reach the connection (flush, deadlines, hijack).
func (rec *recorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }

// facts are what a request turned out to be about, which the journal keeps for the report and
// coverage counts: the account its key named, the model, the quote it made or used and that
// quote's expiry, the job it made or showed and its status, a generation's input digest, the
// body as read, a download's signed link, and how it was answered (its problem code, the fault
// that answered it and the route it took).
type facts struct {
	account, model, quoteID, jobID, jobStatus, inputDigest string
	code, fault, faultKind, route                          string
	quoteExpires                                           time.Time
	sent                                                   []byte
	link                                                   sim.LinkFacts
	retryAt                                                time.Time
	// retryAfter is the Retry-After the answer asks for, in seconds, sent as a date (retryAt)
	// when retryDate says so. replayed, waitedOut and evolvedType are flows coverage counts: an
	// idempotent replay, a wait=true generation answered 202, and an answer that shows the
	// model of an undocumented output type. These sit together, in 8 bytes, so that the
	// recorder keeps within its allocation size class.
	retryAfter                                  int32
	replayed, waitedOut, evolvedType, retryDate bool
}

// note adds what f says to the request's facts; what f leaves empty keeps what an earlier note
// said.
func (rec *recorder) note(f *facts) {
	g := &rec.facts
	for _, p := range [...]struct {
		to *string
		v  string
	}{{&g.account, f.account}, {&g.model, f.model}, {&g.quoteID, f.quoteID}, {&g.jobID, f.jobID}, {&g.jobStatus, f.jobStatus},
		{&g.inputDigest, f.inputDigest}, {&g.code, f.code}, {&g.fault, f.fault}, {&g.faultKind, f.faultKind}, {&g.route, f.route}} {
		if p.v != "" {
			*p.to = p.v
		}
	}
	if !f.quoteExpires.IsZero() {
		g.quoteExpires = f.quoteExpires
	}
	if f.sent != nil {
		g.sent = f.sent
	}
	if f.link != (sim.LinkFacts{}) {
		g.link = f.link
	}
	if f.retryAfter > 0 {
		g.retryAfter, g.retryDate, g.retryAt = f.retryAfter, f.retryDate, f.retryAt
	}
	g.replayed, g.waitedOut, g.evolvedType = g.replayed || f.replayed, g.waitedOut || f.waitedOut, g.evolvedType || f.evolvedType
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
			defer func() { answered(rec.facts.fault, rec.evolving) }()
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
				rec.evolving = true
				if ev.Headers {
					h[kit.HeaderName] = []string{kit.HeaderValue}
					world.Coverage().Hit(evidence.EvolutionHeader)
				}
			}
		}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic", slog.String("request_id", id), slog.String("path", r.URL.Path),
					slog.String("panic", fmt.Sprint(v)), slog.String("stack", string(debug.Stack())))
				if rec.status == 0 {
					s.answer(rec, r, reply{}, problem.New(problem.Internal, "the emulator hit an unexpected condition; see its log for request %s", id))
				}
			}
			if rec.parked == nil { // a parked answer logs itself when it goes out
				s.logRequest(r, t.Name(), rec.status, rec.start, id)
			}
		}()
		if terr != nil {
			s.answer(rec, r, reply{}, terr)
			return
		}
		next.ServeHTTP(rec, r)
	})
}

// isAPI reports whether a path is part of the emulated service (journaled, rate limited and
// open to faults), as opposed to the control API.
func isAPI(path string) bool { return strings.HasPrefix(path, "/v1/") || path == "/v1" }

// traffic runs an API or file request through the scenario in force around its handler: the
// fault it fires, the latency it draws, and the facts it learns before the handler (the body
// it read, the fault, the account the key names). /v1 requests are journaled once answered;
// downloads noted once over.
func (s *Server) traffic(router *mux.Router, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		onAPI, rec := isAPI(r.URL.Path), infoOf(r).rec
		if rec == nil || (!onAPI && !strings.HasPrefix(r.URL.Path, "/files/")) {
			next.ServeHTTP(w, r)
			return
		}
		world := rec.info.world
		if onAPI {
			// The entry is recorded as the answer starts (see recorder.sending); an answer that
			// never starts (a reset) is recorded last.
			rec.keepBody, rec.journaled = true, true
			rec.method, rec.path, rec.rawQuery = r.Method, r.URL.Path, r.URL.RawQuery
			rec.idemKey, rec.header, rec.conn = r.Header.Get("Idempotency-Key"), r.Header, r.RemoteAddr
			defer rec.sending()
		} else {
			defer rec.download(r)
		}
		sc := s.stage(router, r, world, onAPI)
		if sc.peeked != nil || sc.steer != nil {
			rec.info.staged = &staged{sc.peeked, sc.steer}
		}
		rec.note(&sc.facts)
		if sc.facts.fault != "" {
			if sc.fault.Action != "" {
				world.Coverage().Fault(sc.fault.Action)
			}
			if sc.fault.Advance > 0 {
				// Time passes while the request is in flight: the service acts at the later instant.
				_ = world.Advance(time.Duration(sc.fault.Advance))
			}
			if sc.fault.After {
				s.loseAnswer(w, r, next, sc.fault)
				return
			}
			if rep, err, answered := s.injectFault(r, sc.fault); answered {
				s.answer(w, r, rep, err)
				return
			}
			if sc.fault.Action == api.FaultDownload {
				s.delayAnswer(r, world)
				shaped := download.New(w, r, *sc.fault.Download, s.sleep)
				next.ServeHTTP(shaped, r)
				shaped.Finish()
				return
			}
		}
		s.delayAnswer(r, world)
		next.ServeHTTP(w, r)
	})
}

// download records a download of an output file in the tenant's log, once it is over: what
// it was answered, which bytes of the file the answer held and how many reached the client.
// HEAD fetches nothing; an answer that names no file of the tenant (404) or refuses the request
// itself (a bad range) is not the client's use of a job.
func (rec *recorder) download(r *http.Request) {
	world, code := rec.info.world, rec.facts.code
	switch {
	case rec.status == http.StatusPartialContent:
		world.Coverage().Hit(evidence.RangedDownload)
	case code == string(problem.OutputExpired):
		world.Coverage().Hit(evidence.ExpiredDownload)
	}
	job := rec.info.vars["job"]
	// A refused link is the client's use of a job too: one it stored, or sent its key with.
	refused := (rec.status == http.StatusForbidden || rec.status == http.StatusBadRequest) && code == ""
	if r.Method != http.MethodGet || job == "" || rec.status == 0 || (rec.status >= 400 && rec.status != http.StatusGone && !refused) {
		return
	}
	n := evidence.Note{Kind: evidence.Download, Time: rec.received, Job: job, File: r.URL.Path, Status: rec.status,
		Ranged: r.Header.Get("Range") != "", Sent: int64(rec.bytes), Authorized: r.Header.Get("Authorization") != "",
		LinkExpires: rec.facts.link.Expires, LinkExpired: rec.facts.link.Expired}
	h := rec.Header()
	switch rec.status {
	case http.StatusOK:
		n.Size, _ = strconv.ParseInt(h.Get("Content-Length"), 10, 64)
		n.Size = max(n.Size, 1) // a length not sent: the file counts as whole when any byte went
	case http.StatusPartialContent:
		// bytes FIRST-LAST/SIZE: a multipart answer has no Content-Range and counts as part.
		var last int64
		if _, err := fmt.Sscanf(h.Get("Content-Range"), "bytes %d-%d/%d", &n.Start, &last, &n.Size); err != nil {
			n.Start, n.Size = 0, 1<<62
		}
		n.Sent = min(n.Sent, last-n.Start+1)
	}
	if rec.writeErr || (rec.ctx != nil && rec.ctx.Err() != nil) {
		n.Sent = min(n.Sent, max(n.Size-1, 0)) // the client did not get the end
	}
	world.Journal().AddNote(n, rec.arrival)
}

// takeOver hands the answer to a parked generation, which writes it on the connection later.
func (rec *recorder) takeOver(p *parking) {
	rec.ResponseWriter = hijacked{}
	rec.info.query, rec.info.vars = nil, nil // read by the handler, which is done with them
	rec.parked = p
}

// lostAnswer notes that the handler's answer never reached the client: the job it made stays
// in the facts, how the answer showed it does not.
func (rec *recorder) lostAnswer() { rec.facts.jobStatus = "" }

// hungUp notes that the client of a parked generation gave up on its wait.
func (rec *recorder) hungUp() { rec.left.Store(true) }

// parkedAnswer journals the answer a parked generation is about to write: its status, its body
// and the job's status as the answer shows it.
func (rec *recorder) parkedAnswer(status int, body []byte, jobStatus string) {
	rec.status, rec.body = status, body
	rec.facts.jobStatus = jobStatus // as the answer shows the job, not as it was parked
	rec.facts.waitedOut = rec.facts.waitedOut || status == http.StatusAccepted
	// Still parked while its entry is made: the handler's context ended when the handler
	// returned, so only the hang-up watch (rec.left) says whether this client left.
	rec.sending()
	rec.parked = nil
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

// tenantOf finds the tenant a request names (see sim.Tenants.Resolve), and the bearer key
// without its tenant suffix.
func (s *Server) tenantOf(r *http.Request) (*sim.Tenant, string, error) {
	return s.tenants.Resolve(r.Header.Get(sim.HeaderTenant), bearer(r.Header.Get("Authorization")), r.URL.Path,
		func() error { return s.controlDenied(r) })
}

// bearer returns the key of an Authorization: Bearer header, or "".
func bearer(auth string) string {
	scheme, token, found := strings.Cut(auth, " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// requireKey authenticates the bearer key and checks it holds a permission and is within the
// scenario's rate limits; the reply carries the key's account and the X-RateLimit-* headers of
// the tightest limit, refused or not.
func (s *Server) requireKey(perm catalog.Permission, next replyFunc) replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		info := infoOf(r)
		key, err := s.tenants.Authorize(r.Header.Get("Authorization") != "", info.token, perm)
		if err != nil {
			return reply{}, err
		}
		limits, err := rateLimit(info.world, r, key, info.peeked())
		if err != nil {
			return reply{header: limits, facts: facts{account: key.Account}}, err
		}
		info.key = key // set once, before the handler runs; no copy of the request for it
		rep, err := next(w, r)
		rep.facts.account = key.Account
		if limits != nil { // a reply's header may be shared: the limits' own is fresh
			maps.Copy(limits, rep.header)
			rep.header = limits
		}
		return rep, err
	}
}

// rateLimit asks the world whether the request is within the scenario's limits, and answers
// the X-RateLimit-* headers of the tightest one (nil when none applies).
func rateLimit(world *sim.World, r *http.Request, key *catalog.Key, m *catalog.Model) (http.Header, error) {
	d := world.RateLimit(r.Method, r.URL.Path, key, m)
	if d == nil {
		return nil, nil
	}
	reset := int(math.Ceil(d.Reset.Seconds()))
	h := http.Header{"X-Ratelimit-Limit": {strconv.Itoa(d.Limit)}, "X-Ratelimit-Remaining": {strconv.Itoa(d.Remaining)},
		"X-Ratelimit-Reset": {strconv.Itoa(reset)}}
	if !d.Allowed {
		return h, &problem.Error{Code: problem.RateLimited, RetryAfter: max(reset, 1), RetryAfterDate: d.RetryAfterDate,
			Detail: fmt.Sprintf("this key may make %d such requests per window; the next window opens in %ds", d.Limit, reset)}
	}
	return h, nil
}
