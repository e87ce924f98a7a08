package emulator

import (
	"bytes"
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
)

// headerAdminToken carries the control API's token when --admin-token is set.
const headerAdminToken = "X-Emulator-Admin-Token"

// control guards a control endpoint: off entirely when the emulator is reachable from other
// machines without a token, and behind the token when one is set.
func (s *Server) control(next replyFunc) replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		if err := s.controlDenied(r); err != nil {
			return reply{}, err
		}
		return next(w, r)
	}
}

// controlDenied says why a request may not use the control API, or nil when it may.
func (s *Server) controlDenied(r *http.Request) error {
	if s.cfg.ControlDisabled {
		return problem.New(problem.ControlAPIDisabled, "the control API is off because the emulator listens beyond loopback without --admin-token; restart it with --admin-token (or MEDIAGEN_ADMIN_TOKEN) and send it as %s", headerAdminToken)
	}
	if s.cfg.AdminToken != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get(headerAdminToken)), []byte(s.cfg.AdminToken)) != 1 {
		return problem.New(problem.AdminTokenRequired, "send the admin token as %s", headerAdminToken)
	}
	return nil
}

// health answers once the emulator is ready: with its version, clock and catalog size, so a
// client suite can check what it is talking to.
func (s *Server) health() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		return reply{status: http.StatusOK, body: worldOf(r).PresentHealth(infoOf(r).tenant.Name(), Version)}, nil
	}
}

func (s *Server) resetState() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		world := infoOf(r).tenant.Reset()
		return reply{status: http.StatusOK, body: api.ResetResult{Status: "reset", Tenant: infoOf(r).tenant.Name(), Now: sim.Timestamp(world.Now())}}, nil
	}
}

func (s *Server) getClock() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		return reply{status: http.StatusOK, body: worldOf(r).PresentClock()}, nil
	}
}

// setClock changes the tenant's clock mode and moves the clock, and answers once everything
// that fell due has happened: job transitions in order, quote, output and key expiry. A client
// that hangs up stops the move's waiting for webhook deliveries; the move itself completes.
func (s *Server) setClock() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		var c api.ClockChange
		if err := s.decodeInto(w, r, &c, members{nonEmpty: []string{"advance", "set", "mode"}}); err != nil {
			return reply{}, err
		}
		clk, err := worldOf(r).ChangeClock(r.Context(), c)
		if err != nil {
			return reply{}, err
		}
		return reply{status: http.StatusOK, body: clk}, nil
	}
}

func (s *Server) getScenario() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		return reply{status: http.StatusOK, body: worldOf(r).PresentScenario()}, nil
	}
}

// putScenario switches the scenario in force: {"name": "flaky"} for an embedded one, or
// {"scenario": {...}} with a whole scenario document inline.
func (s *Server) putScenario() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		var c api.ScenarioChange
		if err := s.decodeInto(w, r, &c, members{nonEmpty: []string{"name"}}); err != nil {
			return reply{}, err
		}
		sc, err := worldOf(r).ChangeScenario(c)
		if err != nil {
			return reply{}, err
		}
		return reply{status: http.StatusOK, body: sc}, nil
	}
}

func (s *Server) listRequests() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		p, err := parsePage(r)
		if err != nil {
			return reply{}, err
		}
		if _, ok, _ := queryValue(r, "limit"); !ok {
			p.limit = maxLimit
		}
		q, _ := query(r) // parsePage has refused a query that does not parse
		entries, total, err := worldOf(r).Requests(r.Context(), q, infoOf(r).tenant.Name(), p.offset, p.limit)
		if problem.As(err) != nil {
			return reply{}, err
		}
		if err != nil {
			return reply{}, nil // the client has gone: no one to answer
		}
		items, err := encodeEach(entries, func(e evidence.Entry) any { return e })
		if err != nil {
			return reply{}, err
		}
		return listReply(items, total, p), nil
	}
}

func (s *Server) clearRequests() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		worldOf(r).ClearRequests()
		return noContent, nil
	}
}

func (s *Server) listFaults() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		return reply{status: http.StatusOK, body: api.List[api.Fault]{Data: worldOf(r).PresentFaults()}}, nil
	}
}

func (s *Server) addFault() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		var f api.Perturbation
		if err := s.decodeInto(w, r, &f, members{}); err != nil {
			return reply{}, err
		}
		fault, err := worldOf(r).AddFault(f)
		if err != nil {
			return reply{}, err
		}
		return reply{status: http.StatusCreated, body: fault}, nil
	}
}

func (s *Server) clearFaults() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		q, _ := query(r)
		worldOf(r).RemoveFaults(q.Get("source") == "all")
		return noContent, nil
	}
}

func (s *Server) deleteFault() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		if err := worldOf(r).RemoveFault(pathVar(r, "id")); err != nil {
			return reply{}, err
		}
		return noContent, nil
	}
}

// showPlan answers the adversity plan in force: the scenario's perturbations and the API's.
func (s *Server) showPlan() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		return reply{status: http.StatusOK, body: worldOf(r).PresentAdversity()}, nil
	}
}

// putPlan puts a plan in place of the control API's perturbations.
func (s *Server) putPlan() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		var p api.Plan
		if err := s.decodeInto(w, r, &p, members{required: []string{"perturbations"}}); err != nil {
			return reply{}, err
		}
		in, err := worldOf(r).ChangePlan(p)
		if err != nil {
			return reply{}, err
		}
		return reply{status: http.StatusOK, body: in}, nil
	}
}

// clearPlan removes the control API's perturbations; the scenario's stay.
func (s *Server) clearPlan() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		worldOf(r).RemoveFaults(false)
		return noContent, nil
	}
}

func (s *Server) listAccounts() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		return reply{status: http.StatusOK, body: api.List[api.Balance]{Data: worldOf(r).Balances()}}, nil
	}
}

// putAccount sets what an account can spend: {"credits": 500}. Held and charged credits stay.
func (s *Server) putAccount() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		id := pathVar(r, "account")
		var c api.CreditsChange
		err := s.decodeInto(w, r, &c, members{required: []string{"credits"}})
		// Whatever is wrong with a body that is a JSON object, one answer says what to send.
		if pe := problem.As(err); pe != nil && pe.Code == problem.InvalidRequest || err == nil && (c.Credits < 0 || c.Credits > catalog.MaxAccountCredits) {
			return reply{}, &problem.Error{Code: problem.InvalidRequest, Detail: fmt.Sprintf(`send {"credits": <integer from 0 to %d>}`, int64(catalog.MaxAccountCredits)),
				Errors: []problem.FieldError{{Pointer: "/credits", Message: fmt.Sprintf("must be an integer from 0 to %d", int64(catalog.MaxAccountCredits))}}}
		}
		if err != nil {
			return reply{}, err
		}
		b, err := worldOf(r).SetCredits(id, c.Credits)
		if err != nil {
			return reply{}, err
		}
		return reply{status: http.StatusOK, body: b}, nil
	}
}

// forceJob ends a job now: complete makes it succeed (with real outputs), fail makes it fail
// with {"code", "message"} (default generation_failed).
func (s *Server) forceJob(status jobs.Status) replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		var failure *api.JobFailure
		if status == jobs.Failed {
			body, err := s.readBody(w, r)
			if err == nil && len(bytes.TrimSpace(body)) > 0 {
				failure = &api.JobFailure{}
				err = strictly(body, failure)
			}
			if err != nil {
				return reply{}, err
			}
		}
		world := worldOf(r)
		v, err := world.Force(pathVar(r, "id"), status, failure)
		if err != nil {
			return reply{}, err
		}
		return reply{status: http.StatusOK, body: world.PresentJob(v, baseURL(r), sim.Documented)}, nil
	}
}

// controlJob shows any account's job, with its account and plan, for tests that check a job
// their client made.
func (s *Server) controlJob() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		world := worldOf(r)
		v, err := world.JobAny(pathVar(r, "id"))
		if err != nil {
			return reply{}, err
		}
		j := world.PresentControlJob(v, baseURL(r))
		j.Plan = sim.PresentPlan(v)
		j.MediaInputs = sim.PresentMediaInputs(v)
		return reply{status: http.StatusOK, body: j}, nil
	}
}

// listUploads lists the tenant's live uploads, newest first, each with the jobs that read it.
// It answers whether inputs are fetched or not: a restored snapshot may hold uploads either way.
func (s *Server) listUploads() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		p, err := parsePage(r)
		if err != nil {
			return reply{}, err
		}
		views, total := worldOf(r).PresentUploads(baseURL(r), p.offset, p.limit)
		items, err := encodeEach(views, func(v api.ControlUpload) any { return v })
		if err != nil {
			return reply{}, err
		}
		return listReply(items, total, p), nil
	}
}

func (s *Server) listTenants() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		return reply{status: http.StatusOK, body: api.List[api.Tenant]{Data: s.tenants.List()}}, nil
	}
}

func (s *Server) deleteTenant() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		if err := s.tenants.Delete(pathVar(r, "name")); err != nil {
			return reply{}, err
		}
		return noContent, nil
	}
}

// awaitWaiting answers once the tenant has at least count wait=true generations waiting for
// their job, or after timeout (real time, default 10 s, at most --max-wait) with reached false.
func (s *Server) awaitWaiting() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		count := int64(1)
		if v, ok, err := queryValue(r, "count"); err != nil {
			return reply{}, err
		} else if ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 || n > 1_000_000 {
				return reply{}, paramError("count", "count must be an integer from 0 to 1000000")
			}
			count = n
		}
		timeout := 10 * time.Second
		if v, ok, err := queryValue(r, "timeout"); err != nil {
			return reply{}, err
		} else if ok {
			d, err := sim.ParseAdvance(v)
			if err != nil || d > worldOf(r).MaxWait() {
				return reply{}, paramError("timeout", "timeout must be a duration such as 5s, at most %s (--max-wait)", worldOf(r).MaxWait())
			}
			timeout = d
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		n, reached := worldOf(r).AwaitWaiting(ctx, count, s.closing)
		return reply{status: http.StatusOK, body: api.Waiting{Reached: reached, Waiting: n}}, nil
	}
}
