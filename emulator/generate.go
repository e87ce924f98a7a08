package emulator

import (
	"context"
	"errors"
	"net/http"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jsonvalue"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
)

var (
	quoteEnvelope    = envelope{fields: map[string]string{"model": "string", "input": "object"}, required: []string{"model", "input"}}
	generateEnvelope = envelope{fields: map[string]string{"model": "string", "input": "object", "quote_id": "string"}, required: []string{"model", "input", "quote_id"}}
)

// Request headers that steer one generation.
const (
	headerOutcome  = "X-Emulator-Outcome"
	headerScenario = "X-Emulator-Scenario"
)

func (s *Server) createQuote() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		body, err := s.decodeBody(w, r, bodyRequired)
		if err != nil {
			return reply{}, err
		}
		if err := quoteEnvelope.check(body); err != nil {
			return reply{}, err
		}
		model := body["model"].(string)
		announce(w, r, model)
		q, err := worldOf(r).Quote(keyOf(r).Account, model, body["input"].(map[string]any))
		if err != nil {
			return reply{facts: facts{model: model}}, err
		}
		return reply{status: http.StatusOK, body: api.Quote{QuoteID: q.ID, Model: q.Model, Credits: q.Credits, ExpiresAt: sim.Timestamp(q.ExpiresAt)},
			facts: facts{model: model, quoteID: q.ID, quoteExpires: q.ExpiresAt}}, nil
	}
}

func (s *Server) generate() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		if world := worldOf(r); world.Webhooks().Sending() {
			world.SeenBase(baseURL(r)) // where its webhook deliveries' output URLs point
		}
		idemKey := r.Header.Get("Idempotency-Key")
		if err := sim.CheckIdempotencyKey(idemKey); err != nil {
			return reply{}, err
		}
		wait, err := parseBool(r, "wait")
		if err != nil {
			return reply{}, err
		}
		body, err := s.decodeBody(w, r, bodyRequired)
		if err != nil {
			return reply{}, err
		}
		if err := generateEnvelope.check(body); err != nil {
			return reply{}, err
		}
		announce(w, r, body["model"].(string))
		asked := facts{model: body["model"].(string), quoteID: body["quote_id"].(string), inputDigest: evidence.Digest(jsonvalue.Canonical(body["input"]))}
		world := worldOf(r)
		view, replayed, err := world.Generate(r.Context(), sim.Generation{
			Account:        keyOf(r).Account,
			Key:            keyOf(r).Key,
			IdempotencyKey: idemKey,
			Model:          body["model"].(string),
			QuoteID:        body["quote_id"].(string),
			Input:          body["input"].(map[string]any),
			Fingerprint:    jsonvalue.Canonical(body),
			Scenario:       r.Header.Get(headerScenario),
			Outcome:        r.Header.Get(headerOutcome),
		})
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return reply{facts: asked}, nil // the client left while its duplicate was decided; there is no one to answer
		}
		if err != nil {
			return reply{facts: asked}, err
		}
		if replayed {
			w.Header().Set("Idempotent-Replayed", "true")
		}
		rep := s.respondJob(w, r, world, view, wait)
		rep.facts.model, rep.facts.quoteID, rep.facts.inputDigest, rep.facts.replayed = asked.model, asked.quoteID, asked.inputDigest, replayed
		return rep, nil
	}
}

// respondJob answers with a job: at once, or with wait=true once it is terminal or the wait
// runs out. 200 when terminal, 202 with Location otherwise.
func (s *Server) respondJob(w http.ResponseWriter, r *http.Request, world *sim.World, view jobs.View, wait bool) reply {
	switch {
	case !wait || view.Status.Terminal():
	case world.ClockMode() == clock.Skip:
		// A skipping clock moves to the job's end, or to the wait's bound, before answering:
		// there is nothing left to wait for.
		world.SkipAhead("", view.ID, 0, world.Now().Add(world.MaxWait()))
		if v, err := world.JobAny(view.ID); err == nil {
			view = v
		}
	case s.park(w, r, world, view):
		// Answered later, when the job ends or the wait runs out; the answer waits until this
		// request's handlers have returned, so the facts are in place by then.
		return reply{parked: true, facts: facts{jobID: view.ID}}
	default:
		view = world.Wait(r.Context(), view, s.closing)
	}
	status := http.StatusOK
	if !view.Status.Terminal() {
		status = http.StatusAccepted
		w.Header().Set("Location", "/v1/jobs/"+view.ID)
	}
	return reply{status: status, body: s.jobBody(r, view), facts: facts{jobID: view.ID, jobStatus: string(view.Status), waitedOut: wait && !view.Status.Terminal()}}
}
