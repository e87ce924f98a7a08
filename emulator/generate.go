package emulator

import (
	"context"
	"errors"
	"net/http"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
)

// Request headers that steer one generation.
const (
	headerOutcome  = "X-Emulator-Outcome"
	headerScenario = "X-Emulator-Scenario"
)

func (s *Server) createQuote() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		var req api.QuoteRequest
		input, sent, err := s.decodeRequest(w, r, &req, &req.Input)
		rep := reply{facts: facts{sent: sent}}
		if err != nil {
			return rep, err
		}
		rep.facts.model = req.Model
		rep.announce(r, req.Model)
		q, err := worldOf(r).Quote(keyOf(r).Account, req.Model, input)
		if err != nil {
			return rep, err
		}
		rep.status, rep.body = http.StatusOK, api.Quote{QuoteID: q.ID, Model: q.Model, Credits: q.Credits, ExpiresAt: sim.Timestamp(q.ExpiresAt)}
		rep.facts.quoteID, rep.facts.quoteExpires = q.ID, q.ExpiresAt
		return rep, nil
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
		var req api.GenerateRequest
		input, sent, err := s.decodeRequest(w, r, &req, &req.Input)
		if err != nil {
			return reply{facts: facts{sent: sent}}, err
		}
		asked := reply{facts: facts{model: req.Model, quoteID: req.QuoteID,
			inputDigest: sim.InputDigest(input), sent: sent}}
		asked.announce(r, asked.facts.model)
		world := worldOf(r)
		outcome, g := r.Header.Get(headerOutcome), sim.Generation{}
		if st := infoOf(r).steered(); st != nil && outcome == "" {
			outcome, g.OutcomeCode, g.Perturbation = st.outcome, st.code, st.id
		}
		view, replayed, err := world.Generate(r.Context(), sim.Generation{
			Account:        keyOf(r).Account,
			Key:            keyOf(r).Key,
			IdempotencyKey: idemKey,
			Model:          req.Model,
			QuoteID:        req.QuoteID,
			Input:          input,
			Scenario:       r.Header.Get(headerScenario),
			Outcome:        outcome,
			OutcomeCode:    g.OutcomeCode,
			Perturbation:   g.Perturbation,
			Base:           baseURL(r),
		})
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return asked, nil // the client left while its duplicate was decided; there is no one to answer
		}
		if err != nil {
			return asked, err
		}
		if replayed {
			asked.setHeader("Idempotent-Replayed", "true")
			asked.facts.replayed = true
		} else if view.Plan.Struck != "" && infoOf(r).steered() == nil {
			// A perturbation at job#N struck the job this made, beside any that struck the request.
			asked.facts.fault = view.Plan.Struck
			if struck := infoOf(r).rec; struck != nil && struck.facts.fault != "" {
				asked.facts.fault = struck.facts.fault + "," + view.Plan.Struck
			}
		}
		return s.respondJob(w, r, world, view, wait, asked), nil
	}
}

// respondJob answers with a job, in rep: at once, or with wait=true once it is terminal or the
// wait runs out. 200 when terminal, 202 with Location otherwise.
func (s *Server) respondJob(w http.ResponseWriter, r *http.Request, world *sim.World, view jobs.View, wait bool, rep reply) reply {
	switch {
	case !wait || view.Status.Terminal():
	case world.Blocks(view) && s.park(w, r, world, view):
		// Answered later, when the job ends or the wait runs out; the answer waits until this
		// request's handlers have returned, so the facts and the reply's headers are in place
		// by then.
		rep.parked, rep.facts.jobID = true, view.ID
		return rep
	default:
		view = world.Wait(r.Context(), view, s.closing)
	}
	rep.status = http.StatusOK
	if !view.Status.Terminal() {
		rep.status = http.StatusAccepted
		rep.location = "/v1/jobs/" + view.ID
	}
	rep.body = jobBody(r, view)
	rep.facts.jobID, rep.facts.jobStatus, rep.facts.waitedOut = view.ID, string(view.Status), wait && !view.Status.Terminal()
	return rep
}
