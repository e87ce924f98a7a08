package emulator

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/idempotency"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jsonvalue"
	"github.com/mediagen/mediagen-emulator/emulator/internal/ledger"
	"github.com/mediagen/mediagen-emulator/emulator/internal/pricing"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
	"github.com/mediagen/mediagen-emulator/emulator/internal/quotes"
	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
)

var (
	quoteEnvelope    = envelope{fields: map[string]string{"model": "string", "input": "object"}, required: []string{"model", "input"}}
	generateEnvelope = envelope{fields: map[string]string{"model": "string", "input": "object", "quote_id": "string"}, required: []string{"model", "input", "quote_id"}}
)

// maxIdempotencyKey is the longest Idempotency-Key accepted.
const maxIdempotencyKey = 255

// validInput finds the model and validates the input against its schema.
func (s *Server) validInput(body map[string]any) (*catalog.Model, map[string]any, error) {
	id := body["model"].(string)
	m, ok := s.catalog.Model(id)
	if !ok {
		return nil, nil, problem.New(problem.ModelNotFound, "no model %q; GET /v1/models lists them", id)
	}
	input := body["input"].(map[string]any)
	if err := m.Validate(input); err != nil {
		vs := catalog.Violations(err)
		e := &problem.Error{Code: problem.InvalidInput, Detail: "the input does not match the schema of " + m.ID + ": " + describeViolations(vs)}
		for _, v := range vs {
			e.Errors = append(e.Errors, problem.FieldError{Pointer: "/input" + v.Pointer, Message: v.Message})
		}
		return nil, nil, e
	}
	return m, input, nil
}

func describeViolations(vs []catalog.Violation) string {
	if len(vs) == 1 {
		where := vs[0].Pointer
		if where == "" {
			where = "the input"
		}
		return where + " " + vs[0].Message
	}
	return strconv.Itoa(len(vs)) + " problems; see errors"
}

// quoteResponse is the body of POST /v1/quotes: exactly these four fields.
type quoteResponse struct {
	QuoteID   string `json:"quote_id"`
	Model     string `json:"model"`
	Credits   int64  `json:"credits"`
	ExpiresAt string `json:"expires_at"`
}

func (s *Server) createQuote() handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		st := s.stateOf(r)
		key := keyOf(r)
		body, err := s.decodeObject(w, r)
		if err != nil {
			return err
		}
		if err := quoteEnvelope.check(body); err != nil {
			return err
		}
		m, input, err := s.validInput(body)
		if err != nil {
			return err
		}
		noteOf(r).model = m.ID
		if ptr, outcome := findToken(input, "/input"); outcome != "" && !scenario.ValidOutcome(outcome) {
			return badToken(ptr, outcome)
		}
		if !m.Ready() {
			return problem.New(problem.ModelUnavailable, "model %q is %s and does not take quotes", m.ID, m.Status)
		}
		now := st.clock.Now()
		q := quotes.Quote{
			ID:        s.ids.UUID("quote", key.Account, strconv.FormatUint(st.nextQuote(key.Account), 10)),
			Account:   key.Account,
			Model:     m.ID,
			Input:     jsonvalue.Canonical(input),
			Credits:   pricing.Credits(m, input),
			CreatedAt: now,
			ExpiresAt: now.Add(s.quoteTTL(st, m)),
		}
		st.quotes.Add(q)
		return s.writeJSON(w, http.StatusOK, quoteResponse{q.ID, q.Model, q.Credits, timestamp(q.ExpiresAt)})
	}
}

func (s *Server) generate() handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		st := s.stateOf(r)
		key := keyOf(r)
		idemKey := r.Header.Get("Idempotency-Key")
		if strings.TrimSpace(idemKey) == "" || utf8.RuneCountInString(idemKey) > maxIdempotencyKey {
			return problem.New(problem.MissingIdempotencyKey, "send an Idempotency-Key header of 1 to %d characters; a retry with the same key returns the same job", maxIdempotencyKey)
		}
		wait, err := parseBool(r, "wait")
		if err != nil {
			return err
		}
		body, err := s.decodeObject(w, r)
		if err != nil {
			return err
		}
		if err := generateEnvelope.check(body); err != nil {
			return err
		}
		m, input, err := s.validInput(body)
		if err != nil {
			return err
		}
		noteOf(r).model = m.ID
		fingerprint := jsonvalue.Canonical(body)
		for {
			entry, leader, err := st.idem.Begin(key.Account, idemKey, fingerprint)
			if errors.Is(err, idempotency.ErrReused) {
				return problem.New(problem.IdempotencyKeyReused, "Idempotency-Key %q was used with a different request; use a new key for a new generation", idemKey)
			}
			if !leader {
				select {
				case <-entry.Done():
				case <-r.Context().Done():
					return nil // the client left; there is no one to answer
				}
				if entry.JobID == "" {
					continue // the first request failed and left the key free
				}
				view, ok := st.jobs.Get(key.Account, entry.JobID)
				if !ok {
					return problem.New(problem.JobNotFound, "the job Idempotency-Key %q created is no longer kept", idemKey)
				}
				w.Header().Set("Idempotent-Replayed", "true")
				return s.respondJob(w, r, st, view, wait)
			}
			// Directives steer a new job; a replay returns the job as it was made.
			steer, err := s.readDirectives(r, st, input)
			var view jobs.View
			if err == nil {
				view, err = s.startJob(st, key.Account, body["quote_id"].(string), m, input, steer)
			}
			if err != nil {
				st.idem.Abort(key.Account, idemKey, entry)
				return err
			}
			st.idem.Finish(key.Account, idemKey, entry, view.ID)
			return s.respondJob(w, r, st, view, wait)
		}
	}
}

// startJob runs the checks that follow idempotency, in the contract's order, then holds the
// credits and creates the job. Nothing changes unless every check passes.
func (s *Server) startJob(st *state, account, quoteID string, m *catalog.Model, input map[string]any, steer directives) (jobs.View, error) {
	q, ok := st.quotes.Get(account, quoteID)
	if !ok {
		return jobs.View{}, problem.New(problem.QuoteNotFound, "no quote %q for this account; POST /v1/quotes makes one", quoteID)
	}
	canonical := jsonvalue.Canonical(input)
	if q.Model != m.ID {
		return jobs.View{}, problem.New(problem.QuoteMismatch, "quote %s is for model %q, not %q", q.ID, q.Model, m.ID)
	}
	if string(q.Input) != string(canonical) {
		return jobs.View{}, problem.New(problem.QuoteMismatch, "quote %s was made for another input; quote this input first", q.ID)
	}
	now := st.clock.Now()
	if !now.Before(q.ExpiresAt) {
		return jobs.View{}, problem.New(problem.QuoteExpired, "quote %s expired at %s", q.ID, timestamp(q.ExpiresAt))
	}
	if q.UsedBy != "" {
		return jobs.View{}, problem.New(problem.QuoteAlreadyUsed, "quote %s already paid for job %s; a quote buys one generation", q.ID, q.UsedBy)
	}
	if !m.Ready() {
		return jobs.View{}, problem.New(problem.ModelUnavailable, "model %q is %s and does not generate", m.ID, m.Status)
	}
	jobID := s.ids.UUID("job", account, q.ID)
	if _, ok := st.quotes.Use(account, q.ID, jobID); !ok {
		return jobs.View{}, problem.New(problem.QuoteAlreadyUsed, "quote %s already paid for another job; a quote buys one generation", q.ID)
	}
	if err := st.ledger.Hold(account, q.Credits); err != nil {
		st.quotes.Release(account, q.ID, jobID)
		if errors.Is(err, ledger.ErrInsufficient) {
			b, _ := st.ledger.Balance(account)
			return jobs.View{}, &problem.Error{Code: problem.InsufficientCredits,
				Detail: "the quote costs " + strconv.FormatInt(q.Credits, 10) + " credits and the account has " + strconv.FormatInt(b.Available, 10) + " available",
				Extra:  map[string]any{"credits_required": q.Credits, "credits_available": b.Available}}
		}
		return jobs.View{}, err
	}
	raw, _ := json.Marshal(input)
	specs := m.PlanOutputs(input)
	return st.jobs.Create(jobs.New{
		ID:        jobID,
		Account:   account,
		Model:     m.ID,
		QuoteID:   q.ID,
		Credits:   q.Credits,
		Input:     raw,
		Plan:      s.plan(m, input, jobID, steer),
		OutputTTL: s.outputTTL(steer.scenario, m),
		Finish:    s.outputMaker(m, input, specs),
	}), nil
}

// respondJob answers with a job: at once, or with wait=true once it is terminal or the wait
// runs out. 200 when terminal, 202 with Location otherwise.
func (s *Server) respondJob(w http.ResponseWriter, r *http.Request, st *state, view jobs.View, wait bool) error {
	noteOf(r).jobID = view.ID
	if wait && !view.Status.Terminal() {
		view = s.waitForJob(r.Context(), st, view)
	}
	status := http.StatusOK
	if !view.Status.Terminal() {
		status = http.StatusAccepted
		w.Header().Set("Location", "/v1/jobs/"+view.ID)
	}
	return s.writeJSON(w, status, s.jobBody(r, view))
}

// waitForJob blocks until the job is terminal, the wait limit passes (on the emulator's clock or
// in real time, whichever comes first, so a manual clock cannot hang a request), the client
// leaves, or the emulator resets or shuts down. Each wake-up comes from a change, not a poll.
func (s *Server) waitForJob(ctx context.Context, st *state, view jobs.View) jobs.View {
	s.waiting.Add(1)
	defer s.waiting.Add(-1)
	limit := make(chan struct{})
	timer := st.clock.AfterFunc(st.clock.Now().Add(s.cfg.MaxWait), func() { close(limit) })
	defer timer.Stop()
	wall := time.NewTimer(s.cfg.MaxWait)
	defer wall.Stop()
	for {
		v, changed, ok := st.jobs.Watch("", view.ID)
		if !ok {
			return view
		}
		view = v
		if view.Status.Terminal() {
			return view
		}
		select {
		case <-changed:
			continue
		case <-limit:
		case <-wall.C:
		case <-ctx.Done():
		case <-st.gone:
		case <-s.closing:
		}
		if v, _, ok := st.jobs.Watch("", view.ID); ok {
			view = v
		}
		return view
	}
}
