package emulator

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
)

// kinds gives each error code its status and title; it is the one place codes meet HTTP.
var kinds = map[problem.Code]struct {
	status int
	title  string
}{
	problem.InvalidJSON:             {400, "Invalid JSON"},
	problem.InvalidParameter:        {400, "Invalid parameter"},
	problem.MissingIdempotencyKey:   {400, "Missing idempotency key"},
	problem.InvalidClockChange:      {400, "Invalid clock change"},
	problem.ConflictingControlInput: {400, "Conflicting control input"},
	problem.InvalidTenant:           {400, "Invalid tenant"},
	problem.TenantNotFound:          {404, "Tenant not found"},
	problem.TenantNotDeletable:      {409, "Tenant not deletable"},
	problem.TooManyTenants:          {429, "Too many tenants"},
	problem.TooManyQuotes:           {429, "Too many quotes"},
	problem.TooManyStreams:          {429, "Too many event streams"},
	problem.Unauthenticated:         {401, "Unauthenticated"},
	problem.AdminTokenRequired:      {401, "Admin token required"},
	problem.InsufficientCredits:     {402, "Insufficient credits"},
	problem.PermissionDenied:        {403, "Permission denied"},
	problem.ControlAPIDisabled:      {403, "Control API disabled"},
	problem.ModelNotFound:           {404, "Model not found"},
	problem.QuoteNotFound:           {404, "Quote not found"},
	problem.JobNotFound:             {404, "Job not found"},
	problem.NotFound:                {404, "Not found"},
	problem.ScenarioNotFound:        {404, "Scenario not found"},
	problem.AccountNotFound:         {404, "Account not found"},
	problem.MethodNotAllowed:        {405, "Method not allowed"},
	problem.ModelUnavailable:        {409, "Model unavailable"},
	problem.QuoteAlreadyUsed:        {409, "Quote already used"},
	problem.JobNotCancelable:        {409, "Job not cancelable"},
	problem.OutputExpired:           {410, "Output expired"},
	problem.ModelRetired:            {410, "Model retired"},
	problem.PreconditionFailed:      {412, "Precondition failed"},
	problem.PayloadTooLarge:         {413, "Payload too large"},
	problem.UnsupportedMediaType:    {415, "Unsupported media type"},
	problem.RangeNotSatisfiable:     {416, "Range not satisfiable"},
	problem.InvalidRequest:          {422, "Invalid request"},
	problem.InvalidInput:            {422, "Invalid input"},
	problem.QuoteExpired:            {422, "Quote expired"},
	problem.QuoteMismatch:           {422, "Quote mismatch"},
	problem.ContentPolicyViolation:  {422, "Content policy violation"},
	problem.IdempotencyKeyReused:    {422, "Idempotency key reused"},
	problem.RateLimited:             {429, "Rate limited"},
	problem.ConcurrencyLimited:      {429, "Concurrency limited"},
	problem.Internal:                {500, "Internal error"},
	problem.ServiceUnavailable:      {503, "Service unavailable"},
	problem.MemoryBudgetExhausted:   {503, "Memory budget exhausted"},
	problem.InvalidSnapshot:         {422, "Invalid snapshot"},
}

// writeError sends err as problem+json. Unclassified errors are logged and sent as an
// internal_error that reveals nothing of them.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	pe := problem.As(err)
	if pe == nil {
		s.log.Error("internal error", slog.String("request_id", requestID(r)), slog.String("path", r.URL.Path), slog.Any("error", err))
		pe = &problem.Error{Code: problem.Internal, Detail: "the emulator hit an unexpected condition; see its log for request " + requestID(r)}
	}
	kind, ok := kinds[pe.Code]
	if !ok {
		kind = kinds[problem.Internal]
	}
	if pe.Status != 0 {
		kind.status = pe.Status
		if !ok {
			kind.title = http.StatusText(pe.Status)
		}
	}
	body := api.Problem{
		Type:      "about:blank",
		Title:     kind.title,
		Status:    kind.status,
		Detail:    pe.Detail,
		Code:      string(pe.Code),
		RequestID: requestID(r),
		Errors:    pe.Errors,
	}
	b := encodeProblem(body, pe.Extra)
	h := w.Header()
	if pe.RetryAfter > 0 {
		now := time.Now()
		if world := infoOf(r).world; world != nil && pe.RetryAfterDate {
			now = world.Now()
		}
		setRetryAfter(h, pe.RetryAfter, pe.RetryAfterDate, now)
	}
	if pe.Code == problem.Unauthenticated {
		h.Set("WWW-Authenticate", `Bearer realm="mediagen"`)
	}
	if rec := infoOf(r).rec; rec != nil {
		rec.code = string(pe.Code)
	}
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Del("ETag")
	w.WriteHeader(kind.status)
	_, _ = w.Write(b)
}

// encodeProblem writes the body without HTML escaping (details quote things like <key>) and
// with any extra members after the standard ones, in a stable order.
func encodeProblem(body api.Problem, extra map[string]any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(body)
	if len(extra) == 0 {
		return buf.Bytes()
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("}\n"))
	out := bytes.NewBuffer(b)
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		out.WriteByte(',')
		kb, _ := json.Marshal(k)
		vb, _ := json.Marshal(extra[k])
		out.Write(kb)
		out.WriteByte(':')
		out.Write(vb)
	}
	out.WriteString("}\n")
	return out.Bytes()
}

// writeJSON sends a value as JSON with a status.
func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	writeLine(w, status, append(b, '\n'))
	return nil
}

// writeRaw sends already encoded JSON that the caller may share (a model's detail, say),
// followed by a newline.
func writeRaw(w http.ResponseWriter, status int, b []byte) {
	line := make([]byte, len(b)+1)
	copy(line, b)
	line[len(b)] = '\n'
	writeLine(w, status, line)
}

// writeLine sends encoded JSON that ends in a newline in one write: the answer then leaves in
// as few system calls as it can, where a second write for the newline cost one more.
func writeLine(w http.ResponseWriter, status int, line []byte) {
	// Both values share one allocation; the names are already canonical.
	vs := [...]string{"application/json", strconv.Itoa(len(line))}
	h := w.Header()
	h["Content-Type"], h["Content-Length"] = vs[0:1:1], vs[1:2:2]
	w.WriteHeader(status)
	_, _ = w.Write(line)
}

// timestamp formats an instant as the API does: RFC 3339, UTC, Z.
func timestamp(t time.Time) string { return sim.Timestamp(t) }

// nullableTime is a timestamp, or null for the zero time.
func nullableTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := timestamp(t)
	return &s
}

// setRetryAfter sends Retry-After as seconds, or as an HTTP-date (RFC 9110 §10.2.3) that many
// seconds after the answer's Date. Date follows the emulator's clock (see the frame), so the
// date is on the same timeline as the rate-limit windows and every timestamp in a body.
func setRetryAfter(h http.Header, seconds int, date bool, now time.Time) {
	if !date {
		h.Set("Retry-After", strconv.Itoa(seconds))
		return
	}
	sent, err := http.ParseTime(h.Get("Date"))
	if err != nil {
		sent = now.UTC().Truncate(time.Second)
		h.Set("Date", sent.Format(http.TimeFormat))
	}
	h.Set("Retry-After", sent.Add(time.Duration(seconds)*time.Second).Format(http.TimeFormat))
}

// retryAfterDate reads a Retry-After sent as an HTTP-date as seconds after the answer's Date;
// -1 when it is not one.
func retryAfterDate(h http.Header) int {
	at, err := http.ParseTime(h.Get("Retry-After"))
	if err != nil {
		return -1
	}
	sent, err := http.ParseTime(h.Get("Date"))
	if err != nil {
		return -1
	}
	return int(math.Ceil(at.Sub(sent).Seconds()))
}

// reply is what an API handler answers: the status, the body, and the facts the journal keeps
// for the report, which one adapter notes and writes; parked says a wait=true generation took
// the connection over, to answer later. A handler that fails returns, beside its error, the
// facts it learned before (the model a refused quote named, say).
type reply struct {
	status int
	body   any
	facts  facts
	parked bool
}

// replyFunc is an API handler that returns its reply.
type replyFunc func(w http.ResponseWriter, r *http.Request) (reply, error)

// replying adapts a replyFunc: the reply's facts go to the journal, then the reply or the error
// is written.
func (s *Server) replying(h replyFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		rep, err := h(w, r)
		about(r, rep.facts)
		if err != nil || rep.parked || rep.status == 0 {
			return err
		}
		return s.writeJSON(w, rep.status, rep.body)
	}
}
