package emulator

import (
	"context"
	"errors"
	"net/http"

	"github.com/mediagen/mediagen-emulator/emulator/api"
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

func (s *Server) createQuote() handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		body, err := s.decodeBody(w, r, bodyRequired)
		if err != nil {
			return err
		}
		if err := quoteEnvelope.check(body); err != nil {
			return err
		}
		model := body["model"].(string)
		about(r, facts{model: model})
		q, err := worldOf(r).Quote(keyOf(r).Account, model, body["input"].(map[string]any))
		if err != nil {
			return err
		}
		about(r, facts{quoteID: q.ID, quoteExpires: q.ExpiresAt})
		return s.writeJSON(w, http.StatusOK, api.Quote{QuoteID: q.ID, Model: q.Model, Credits: q.Credits, ExpiresAt: sim.Timestamp(q.ExpiresAt)})
	}
}

func (s *Server) generate() handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		idemKey := r.Header.Get("Idempotency-Key")
		if err := sim.CheckIdempotencyKey(idemKey); err != nil {
			return err
		}
		wait, err := parseBool(r, "wait")
		if err != nil {
			return err
		}
		body, err := s.decodeBody(w, r, bodyRequired)
		if err != nil {
			return err
		}
		if err := generateEnvelope.check(body); err != nil {
			return err
		}
		about(r, facts{model: body["model"].(string), quoteID: body["quote_id"].(string), inputDigest: evidence.Digest(jsonvalue.Canonical(body["input"]))})
		world := worldOf(r)
		view, replayed, err := world.Generate(r.Context(), sim.Generation{
			Account:        keyOf(r).Account,
			IdempotencyKey: idemKey,
			Model:          body["model"].(string),
			QuoteID:        body["quote_id"].(string),
			Input:          body["input"].(map[string]any),
			Fingerprint:    jsonvalue.Canonical(body),
			Scenario:       r.Header.Get(headerScenario),
			Outcome:        r.Header.Get(headerOutcome),
		})
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil // the client left while its duplicate was decided; there is no one to answer
		}
		if err != nil {
			return err
		}
		if replayed {
			w.Header().Set("Idempotent-Replayed", "true")
			world.Coverage().Hit(evidence.Replay)
		}
		return s.respondJob(w, r, world, view, wait)
	}
}

// respondJob answers with a job: at once, or with wait=true once it is terminal or the wait
// runs out. 200 when terminal, 202 with Location otherwise.
func (s *Server) respondJob(w http.ResponseWriter, r *http.Request, world *sim.World, view jobs.View, wait bool) error {
	about(r, facts{jobID: view.ID, jobStatus: string(view.Status)})
	if wait && !view.Status.Terminal() && s.park(w, r, world, view) {
		return nil // answered later, when the job ends or the wait runs out
	}
	if wait {
		view = world.Wait(r.Context(), view, s.closing)
		about(r, facts{jobStatus: string(view.Status)})
	}
	status := http.StatusOK
	if !view.Status.Terminal() {
		status = http.StatusAccepted
		w.Header().Set("Location", "/v1/jobs/"+view.ID)
		if wait {
			world.Coverage().Hit(evidence.WaitTimedOut)
		}
	}
	return s.writeJSON(w, status, s.jobBody(r, view))
}
