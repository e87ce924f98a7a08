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
	"strings"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
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
	problem.InputURLRefused:         {422, "Input URL refused"},
	problem.InputTooLarge:           {422, "Input too large"},
	problem.Internal:                {500, "Internal error"},
	problem.ServiceUnavailable:      {503, "Service unavailable"},
	problem.MemoryBudgetExhausted:   {503, "Memory budget exhausted"},
	problem.InvalidSnapshot:         {422, "Invalid snapshot"},
}

// problemOf is the problem+json answer of err, beside what rep had. Unclassified errors are
// logged and answered as an internal_error that reveals nothing of them. The headers it needs
// are set on h.
func (s *Server) problemOf(h http.Header, r *http.Request, rep reply, err error) reply {
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
	if pe.Code == problem.Unauthenticated {
		h.Set("WWW-Authenticate", `Bearer realm="mediagen"`)
	}
	h.Del("ETag")
	rep.raw = encodeProblem(api.Problem{Type: "about:blank", Title: kind.title, Status: kind.status, Detail: pe.Detail,
		Code: string(pe.Code), RequestID: requestID(r), Errors: pe.Errors}, pe.Extra)
	rep.status, rep.contentType, rep.body, rep.stream, rep.parked = kind.status, "application/problem+json", nil, nil, false
	rep.facts.code, rep.facts.retryAfter, rep.facts.retryDate = string(pe.Code), int32(min(pe.RetryAfter, math.MaxInt32)), pe.RetryAfterDate
	return rep
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

// send writes a whole body of a content type with its length, in one write: the answer then
// leaves in as few system calls as it can.
func send(w http.ResponseWriter, status int, contentType string, body []byte) {
	// Both values share one allocation; the names are already canonical.
	vs := [...]string{contentType, strconv.Itoa(len(body))}
	h := w.Header()
	h["Content-Type"], h["Content-Length"] = vs[0:1:1], vs[1:2:2]
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// setRetryAfter sends Retry-After as seconds, or as an HTTP-date (RFC 9110 §10.2.3) that many
// seconds after the answer's Date, and returns that date. Date follows the emulator's clock (see
// the frame), so the date is on the same timeline as the rate-limit windows and every timestamp
// in a body.
func setRetryAfter(h http.Header, r *http.Request, seconds int, date bool) time.Time {
	if !date {
		h.Set("Retry-After", strconv.Itoa(seconds))
		return time.Time{}
	}
	sent, err := http.ParseTime(h.Get("Date"))
	if err != nil {
		now := time.Now()
		if world := infoOf(r).world; world != nil {
			now = world.Now()
		}
		sent = now.UTC().Truncate(time.Second)
		h.Set("Date", sent.Format(http.TimeFormat))
	}
	at := sent.Add(time.Duration(seconds) * time.Second)
	h.Set("Retry-After", at.Format(http.TimeFormat))
	return at
}

// reply is what a handler answers: the status, the headers beside those every answer has, the
// body (a value encoded as JSON, bytes already encoded, or a writer for what is streamed or
// served with ranges), and the facts the evidence keeps. A handler that fails returns, beside
// its error, the facts and headers it had (the model a refused quote named, the deprecation
// of a retired model).
type reply struct {
	status int
	header http.Header
	// location is the Location header, apart from header so that a 202, the most common
	// answer with a header of its own, makes no map for it.
	location string
	body     any    // encoded as a JSON line
	raw      []byte // the body as it goes, of contentType ("" is JSON)
	// contentType is raw's media type.
	contentType string
	// stream writes the whole answer itself: a file, an event stream, a fault's broken answer.
	stream func(w http.ResponseWriter)
	facts  facts
	// parked says a wait=true generation took the connection over, to answer later.
	parked bool
}

// setHeader sets a header of the reply; name is canonical.
func (rep *reply) setHeader(name, value string) {
	if rep.header == nil {
		rep.header = make(http.Header, 1)
	}
	rep.header[name] = []string{value}
}

// replyFunc is a handler that returns its reply, or its error, for answer to write.
type replyFunc func(w http.ResponseWriter, r *http.Request) (reply, error)

// handle makes a route's handler of h.
func (s *Server) handle(h replyFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rep, err := h(w, r)
		s.answer(w, r, rep, err)
	})
}

// answer writes a reply, or err as problem+json beside the reply's headers and facts, and
// tells the frame's recorder the facts: the one place an answer is written and what the
// evidence learns of it noted.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, rep reply, err error) {
	h := w.Header()
	for name, v := range rep.header {
		h[name] = v
		if v == nil { // a header of no values is one the answer leaves out
			delete(h, name)
		}
	}
	if rep.location != "" {
		h["Location"] = []string{rep.location}
	}
	if err != nil {
		rep = s.problemOf(h, r, rep, err)
	}
	if rep.facts.retryAfter > 0 {
		rep.facts.retryAt = setRetryAfter(h, r, int(rep.facts.retryAfter), rep.facts.retryDate)
	}
	rec := infoOf(r).rec
	if rec != nil {
		rec.note(&rep.facts)
	}
	switch {
	case rep.parked:
		if rec != nil && rec.parked != nil {
			rec.parked.header = rep.header // the connection is the parked answer's now
		}
	case rep.stream != nil:
		rep.stream(w)
	case rep.body != nil:
		b, err := json.Marshal(rep.body)
		if err != nil {
			s.answer(w, r, reply{}, err)
			return
		}
		send(w, rep.status, "application/json", evolved(infoOf(r).world, r.URL.Path, append(b, '\n')))
	case rep.raw != nil:
		ct, raw := rep.contentType, rep.raw
		switch ct {
		case "":
			ct = "application/json"
			fallthrough
		case "application/problem+json":
			raw = evolved(infoOf(r).world, r.URL.Path, raw)
		}
		send(w, rep.status, ct, raw)
	case rep.status != 0:
		w.WriteHeader(rep.status)
	}
}

// evolved is a JSON answer's body as it goes to a client of /v1 at path: in the
// forward-compatibility mode, with the mode's member laid into every object, counted for
// coverage. It is the encoder's last step, and the only place an answer's bytes change.
func evolved(world *sim.World, path string, body []byte) []byte {
	if world == nil || !strings.HasPrefix(path, "/v1/") {
		return body
	}
	ev, kit := world.Evolution()
	if !ev.Members {
		return body
	}
	world.Coverage().Hit(evidence.EvolutionMember)
	return kit.AddMembers(make([]byte, 0, len(body)+len(body)/8+64), body)
}

// withMembers is a record the catalog encoded, with the members of extra (a struct, whose
// empty members are left out) laid in after its own; the record itself when extra is nil.
func withMembers[T any](record []byte, extra *T) []byte {
	if extra == nil {
		return record
	}
	add, err := json.Marshal(extra)
	trimmed := bytes.TrimRight(record, " \n")
	if err != nil || len(add) <= 2 || len(trimmed) < 2 || trimmed[len(trimmed)-1] != '}' {
		return record
	}
	out := make([]byte, 0, len(record)+len(add))
	out = append(out, trimmed[:len(trimmed)-1]...)
	if len(trimmed) > 2 {
		out = append(out, ',')
	}
	out = append(out, add[1:]...)
	return append(out, record[len(trimmed):]...)
}

// listReply is the list envelope around already encoded items.
func listReply(items []json.RawMessage, total int, p page) reply {
	var b bytes.Buffer
	size := 65
	for _, it := range items {
		size += len(it) + 1
	}
	b.Grow(size)
	b.WriteString(`{"data":[`)
	for i, it := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(it)
	}
	b.WriteString(`],"total":`)
	b.WriteString(strconv.Itoa(total))
	b.WriteString(`,"limit":`)
	b.WriteString(strconv.Itoa(p.limit))
	b.WriteString(`,"offset":`)
	b.WriteString(strconv.Itoa(p.offset))
	b.WriteString(`,"has_more":`)
	b.WriteString(strconv.FormatBool(p.offset+len(items) < total))
	b.WriteString("}\n")
	return reply{status: http.StatusOK, raw: b.Bytes()}
}

// encodeEach encodes the items of a list page, each as view presents it.
func encodeEach[T any](items []T, view func(T) any) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, len(items))
	for i, it := range items {
		b, err := json.Marshal(view(it))
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

// noContent is the reply of a change with nothing to show.
var noContent = reply{status: http.StatusNoContent}
