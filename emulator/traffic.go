package emulator

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/download"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
)

// scene is what the scenario in force makes of an API or file request before its handler: the
// model a rule matching models needs, the fault it fires (when facts name one), and what it
// learned (the body read, the fault and its kind, the account the key names, the route of an
// answer made before routing).
type scene struct {
	facts  facts
	peeked *catalog.Model
	fault  api.Perturbation
	steer  *steer
}

// steer is the outcome a perturbation forces on a generation's job, and the perturbation's id.
type steer struct {
	outcome, code, id string
}

// stage finds the scene of a request.
func (s *Server) stage(router *mux.Router, r *http.Request, world *sim.World, onAPI bool) scene {
	var sc scene
	if onAPI {
		sc.peeked, sc.facts.sent = s.peekModel(r, world)
	}
	st, ok := world.PickFault(r.Method, r.URL.Path, sc.peeked)
	if !ok {
		return sc
	}
	f := st.Fault
	sc.fault = f
	sc.facts.fault, sc.facts.faultKind = st.IDs, string(f.Action)
	if st.OutcomeID != "" {
		sc.steer = &steer{st.Outcome.Outcome, st.Outcome.Code, st.OutcomeID}
	}
	if !onAPI {
		return sc
	}
	if k, known := s.catalog.Key(infoOf(r).token); known {
		// Answered before the key is checked: the report still holds the wait, or the
		// attempt, against the account whose key was sent.
		sc.facts.account = k.Account
	}
	// A fault after the service acted, a delay and an outcome leave the request to its handler.
	handled := f.After || f.Action == api.FaultDelay || f.Action == ""
	if !handled && (f.Action == api.FaultError || f.Action == api.FaultGateway) {
		sc.facts.route = routeName(router, r, nil) // the request is answered before routing
	}
	if sc.facts.sent == nil && r.Body != nil {
		// No handler reads the body of a request a fault answers: read it for the journal,
		// where the report compares a retry with the attempt the fault answered. A delayed
		// request gets it back for its handler; read first, a hang-up during the delay ends
		// the request's context, which an unread body would hide.
		sent, _ := io.ReadAll(io.LimitReader(r.Body, s.cfg.MaxBodyBytes+1))
		if handled {
			r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(sent), r.Body))
		} else if r.Method == http.MethodPost && r.URL.Path == "/v1/generate" {
			sc.facts = sentFacts(sent, sc.facts)
		}
		sc.facts.sent = sent
	}
	return sc
}

// sentFacts adds the model, quote and input digest of a generation a fault answers, which
// no handler reads: the report then knows a retry of it for the same generation.
func sentFacts(sent []byte, f facts) facts {
	var g api.GenerateRequest
	if readRequest(sent, &g) != nil || g.Input == nil {
		return f
	}
	f.model, f.quoteID, f.inputDigest = g.Model, g.QuoteID, sim.InputDigest(g.Input)
	return f
}

// delayAnswer waits the delay the scenario's latency rules draw for the request, if any.
func (s *Server) delayAnswer(r *http.Request, world *sim.World) {
	if d := world.AnswerDelay(r.Method, r.URL.Path, infoOf(r).peeked()); d > 0 {
		s.sleep(r.Context(), d)
	}
}

// sleep waits d in real time, or less when the request ends or the server closes; it reports
// whether the whole wait happened.
func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-s.closing:
	}
	return false
}

// peekModel finds the model a request is about, when a rule in force matches on models: from
// the path for model details, from the body's "model" field for quotes and generations. The
// body is put back for the handler, and returned for the journal in case no handler reads it.
func (s *Server) peekModel(r *http.Request, world *sim.World) (*catalog.Model, []byte) {
	if !world.NeedsModel() {
		return nil, nil
	}
	if id, ok := strings.CutPrefix(r.URL.Path, "/v1/models/"); ok {
		m, _ := s.catalog.Model(id)
		return m, nil
	}
	if r.Method != http.MethodPost || r.Body == nil {
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, s.cfg.MaxBodyBytes+1))
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
	if err != nil {
		return nil, body
	}
	var probe struct {
		Model string `json:"model"`
	}
	if json.Unmarshal(body, &probe) != nil {
		return nil, body
	}
	m, _ := s.catalog.Model(probe.Model)
	return m, body
}

// loseAnswer lets the service act on a request and then loses its answer as the fault says: the
// handler answers into nothing, and the client gets the fault's answer instead. The journal
// keeps what the service made (the job) but not what it showed, which the client never read.
// A wait=true generation does not wait: its answer is lost as it is made.
func (s *Server) loseAnswer(w http.ResponseWriter, r *http.Request, next http.Handler, f api.Perturbation) {
	if f.Delay > 0 {
		s.sleep(r.Context(), time.Duration(f.Delay))
		f.Delay = 0
	}
	info := infoOf(r)
	if q := info.query; q.Has("wait") {
		q = maps.Clone(q)
		q.Del("wait")
		info.query = q
	}
	next.ServeHTTP(lost{header: http.Header{}}, r)
	if rec := info.rec; rec != nil {
		rec.lostAnswer()
	}
	rep, err, _ := s.injectFault(r, f)
	s.answer(w, r, rep, err)
}

// lost is where an answer the client never gets is written.
type lost struct{ header http.Header }

func (l lost) Header() http.Header         { return l.header }
func (l lost) Write(b []byte) (int, error) { return len(b), nil }
func (l lost) WriteHeader(int)             {}

// injectFault carries out a fault; it answers the fault's reply, or its error, and whether the
// fault answers the request itself.
func (s *Server) injectFault(r *http.Request, f api.Perturbation) (reply, error, bool) {
	if f.Delay > 0 {
		s.sleep(r.Context(), time.Duration(f.Delay))
	}
	switch f.Action {
	case api.FaultError:
		code := problem.Code(f.Code)
		if code == "" {
			code = defaultFaultCode(f.Status)
		}
		return reply{}, &problem.Error{Code: code, Status: f.Status, RetryAfter: f.RetryAfter,
			RetryAfterDate: f.RetryAfterFormat == api.RetryAfterDate,
			Detail:         "injected fault: this request was answered with " + strconv.Itoa(f.Status) + " on purpose"}, true
	case api.FaultGateway:
		// What a proxy in front of the service sends when the service does not answer: its own
		// HTML page, none of the service's headers, no problem body.
		return reply{status: f.Status, raw: download.GatewayPage(f.Status), contentType: "text/html",
			header: http.Header{"X-Request-Id": nil, "Server": {"nginx"}},
			facts:  facts{retryAfter: int32(f.RetryAfter), retryDate: f.RetryAfterFormat == api.RetryAfterDate}}, nil, true
	case api.FaultReset:
		return reply{stream: download.Reset}, nil, true
	case api.FaultMalformed:
		return reply{stream: download.Malformed}, nil, true
	case api.FaultTruncated:
		return reply{stream: download.Truncated}, nil, true
	case api.FaultDelay, api.FaultDownload:
		// Answered normally: after the delay above, or with the body shaped by the caller.
	}
	return reply{}, nil, false
}

// defaultFaultCode names the problem code of an injected status.
func defaultFaultCode(status int) problem.Code {
	switch status {
	case http.StatusTooManyRequests:
		return problem.RateLimited
	case http.StatusServiceUnavailable:
		return problem.ServiceUnavailable
	case http.StatusInternalServerError:
		return problem.Internal
	}
	return problem.FaultInjected
}
