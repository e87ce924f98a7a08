package emulator

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
	"github.com/mediagen/mediagen-emulator/emulator/internal/ratelimit"
)

type ctxKey int

// ctxNote holds the request's note: one context value per request, filled in as it goes.
const ctxNote ctxKey = 0

// note collects what the layers of one request learn about it: its id, its key, and what the
// journal and the rate-limit and fault rules want to know.
type note struct {
	st                  *state // the state the request began with; a reset mid-request does not split it
	id                  string
	key                 *catalog.Key
	model, jobID, fault string
	peeked              *catalog.Model
	query               url.Values
	queryErr            error
	queryParsed         bool
}

func noteOf(r *http.Request) *note {
	if n, ok := r.Context().Value(ctxNote).(*note); ok {
		return n
	}
	return &note{}
}

// stateOf returns the state the request began with.
func (s *Server) stateOf(r *http.Request) *state {
	if n := noteOf(r); n.st != nil {
		return n.st
	}
	return s.state()
}

// requestID returns the id the request carries or was given.
func requestID(r *http.Request) string { return noteOf(r).id }

// keyOf returns the authenticated API key of a request, set by requireKey.
func keyOf(r *http.Request) *catalog.Key { return noteOf(r).key }

// query returns the request's query parameters, parsed once. A query string that does not
// parse (a bad %-escape, say) is an error rather than half read.
func query(r *http.Request) (url.Values, error) {
	n := noteOf(r)
	if !n.queryParsed {
		n.query, n.queryErr = url.ParseQuery(r.URL.RawQuery)
		n.queryParsed = true
	}
	return n.query, n.queryErr
}

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

// recorder remembers the status written, for the request log.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int
	code   string // the problem code, when the answer was an error
	// beforeSend, when set, runs once with the status known and before anything reaches the
	// client, so what it records is in place by the time the client reads the answer.
	beforeSend func()
}

// WriteHeader remembers the first status written.
func (rec *recorder) WriteHeader(status int) {
	if rec.status == 0 {
		rec.status = status
		rec.sending()
	}
	rec.ResponseWriter.WriteHeader(status)
}

// Write counts the bytes and notes an implicit 200.
func (rec *recorder) Write(b []byte) (int, error) {
	if rec.status == 0 {
		rec.status = http.StatusOK
		rec.sending()
	}
	n, err := rec.ResponseWriter.Write(b)
	rec.bytes += n
	return n, err
}

func (rec *recorder) sending() {
	if f := rec.beforeSend; f != nil {
		rec.beforeSend = nil
		f()
	}
}

// Unwrap lets http.ResponseController reach the connection (flush, deadlines, hijack).
func (rec *recorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }

// frame wraps every request, routed or not: it assigns the request id, sets the headers every
// response carries, turns a panic into internal_error, and logs one line.
func (s *Server) frame(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-Id")
		if !validRequestID(id) {
			id = s.ids.RequestID()
		}
		st := s.state()
		r = r.WithContext(context.WithValue(r.Context(), ctxNote, &note{id: id, st: st}))
		h := w.Header()
		h.Set("X-Request-Id", id)
		h.Set("X-Emulator-Version", Version)
		// Date follows the emulator's clock, like every timestamp in a body, so a client that
		// compares the two (expires_at against Date, say) sees one timeline.
		if st != nil {
			h.Set("Date", st.clock.Now().Format(http.TimeFormat))
		}
		rec := &recorder{ResponseWriter: w}
		defer func() {
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
			s.log.LogAttrs(r.Context(), slog.LevelInfo, "request",
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.Int("status", rec.status),
				slog.Duration("duration", time.Since(start)),
				slog.String("request_id", id))
		}()
		next.ServeHTTP(rec, r)
	})
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
		scheme, token, found := strings.Cut(auth, " ")
		if auth == "" {
			return problem.New(problem.Unauthenticated, "send your API key as 'Authorization: Bearer <key>'")
		}
		token = strings.TrimSpace(token)
		if !found || !strings.EqualFold(scheme, "Bearer") || token == "" {
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
		n := noteOf(r)
		n.key = key
		if err := s.rateLimit(w, r, key, n.peeked); err != nil {
			return err
		}
		return next(w, r)
	}
}

// rateLimit counts the request against every limit of the scenario that matches it and refuses
// it past any of them. The X-RateLimit-* headers describe the tightest limit.
func (s *Server) rateLimit(w http.ResponseWriter, r *http.Request, key *catalog.Key, m *catalog.Model) error {
	st := s.stateOf(r)
	sc := st.scenario.Load()
	if len(sc.RateLimits) == 0 {
		return nil
	}
	now := st.clock.Now()
	var tightest *ratelimit.Decision
	for i, rl := range sc.RateLimits {
		if !rl.Match.Matches(r.Method, r.URL.Path, m) {
			continue
		}
		caller := key.Key
		if rl.Scope == "account" {
			caller = key.Account
		}
		d := st.limiter.Take(i, caller, rl.Limit, rl.Per, now)
		if tightest == nil || !d.Allowed || (tightest.Allowed && d.Remaining < tightest.Remaining) {
			tightest = &d
		}
		if !d.Allowed {
			break
		}
	}
	if tightest == nil {
		return nil
	}
	reset := int(math.Ceil(tightest.Reset.Seconds()))
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(tightest.Limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(tightest.Remaining))
	h.Set("X-RateLimit-Reset", strconv.Itoa(reset))
	if !tightest.Allowed {
		return &problem.Error{Code: problem.RateLimited, RetryAfter: max(reset, 1),
			Detail: fmt.Sprintf("this key may make %d such requests per window; the next window opens in %ds", tightest.Limit, reset)}
	}
	return nil
}
