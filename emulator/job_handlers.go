package emulator

import (
	"net/http"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
)

// jobJSON is the job body; the control API's and dashboard's views of a job embed it.
type jobJSON = api.Job

// jobBody renders a job, giving its outputs absolute URLs on the address the client used, so
// they work behind port mapping; once outputs expire their URLs answer 410.
func (s *Server) jobBody(r *http.Request, v jobs.View) jobJSON {
	body := s.jobBodyAt(worldOf(r), baseURL(r), v)
	evolveJob(r, v, &body)
	return body
}

// jobBodyAt renders a job of world for a client that reaches the emulator at base. Each read
// gives signed links afresh, from the world's clock now.
func (s *Server) jobBodyAt(world *sim.World, base string, v jobs.View) jobJSON {
	outputs := make([]api.Output, len(v.Outputs))
	links := world.OutputLinks(v)
	for i, o := range v.Outputs {
		outputs[i] = o.Output
		outputs[i].URL = base + links[i].Path
		outputs[i].ExpiresAt = sim.Timestamp(v.OutputsExpireAt)
		if !links[i].ExpiresAt.IsZero() {
			outputs[i].URLExpiresAt = sim.Timestamp(links[i].ExpiresAt)
		}
	}
	var jerr *api.JobError
	if v.Error != nil {
		jerr = &api.JobError{Code: v.Error.Code, Message: v.Error.Message}
	}
	body := jobJSON{
		ID: v.ID, Model: v.Model, Status: string(v.Status), QuoteID: v.QuoteID, Credits: v.Credits,
		CreditStatus: v.CreditStatus, Input: v.Input, CreatedAt: sim.Timestamp(v.CreatedAt),
		StartedAt: nullableTime(v.StartedAt), FinishedAt: nullableTime(v.FinishedAt),
		Progress: v.Progress, Outputs: outputs, Error: jerr, QueuePosition: v.QueuePosition,
	}
	// A partial result says so once it is shown: what was filtered out, and what it cost.
	if v.Status == jobs.Succeeded && v.Plan.Filtered > 0 {
		body.FilteredOutputs, body.CreditsCharged = v.Plan.Filtered, &v.Charged
	}
	return body
}

// baseURL is the scheme and host the client reached the emulator by.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	host := r.Host
	if host == "" {
		host = "localhost"
	}
	return scheme + "://" + host
}

func (s *Server) getJob() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		world, account, id := worldOf(r), keyOf(r).Account, pathVar(r, "id")
		// A poll waits on the job: a skipping clock moves it on by one transition first.
		world.SkipAhead(account, id, 1, clock.Latest)
		v, err := world.Job(account, id)
		if err != nil {
			return reply{}, err
		}
		return s.jobReply(r, v), nil
	}
}

func (s *Server) listJobs() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		p, err := parsePage(r)
		if err != nil {
			return reply{}, err
		}
		f, err := jobFilter(r, false)
		if err != nil {
			return reply{}, err
		}
		views, total := worldOf(r).ListJobs(keyOf(r).Account, f, p.offset, p.limit)
		items, err := encodeEach(views, func(v jobs.View) any { return s.jobBody(r, v) })
		if err != nil {
			return reply{}, err
		}
		return listReply(items, total, p), nil
	}
}

func (s *Server) cancelJob() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		v, err := worldOf(r).Cancel(keyOf(r).Account, pathVar(r, "id"))
		if err != nil {
			return reply{}, err
		}
		return s.jobReply(r, v), nil
	}
}

// jobReply answers a job as /v1 shows it, with its model's deprecation.
func (s *Server) jobReply(r *http.Request, v jobs.View) reply {
	rep := reply{status: http.StatusOK, body: s.jobBody(r, v), facts: facts{jobID: v.ID, jobStatus: string(v.Status)}}
	rep.announce(r, v.Model)
	return rep
}

// jobFilter reads the status and model filters of a job listing. With emptyIsAny, status= with
// no value means every status (as a form's "any" sends it); otherwise it is not a status.
func jobFilter(r *http.Request, emptyIsAny bool) (jobs.Filter, error) {
	var f jobs.Filter
	if v, ok, err := queryValue(r, "status"); err != nil {
		return f, err
	} else if ok && (v != "" || !emptyIsAny) {
		f.Status = jobs.Status(v)
		if !f.Status.Valid() {
			return f, paramError("status", "status must be one of queued, running, succeeded, failed, canceled, expired")
		}
	}
	if v, ok, err := queryValue(r, "model"); err != nil {
		return f, err
	} else if ok {
		f.Model = v
	}
	return f, nil
}
