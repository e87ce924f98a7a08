package emulator

import (
	"net/http"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
)

// jobBody is a job as a /v1 answer shows it, on the address the client used.
func jobBody(r *http.Request, v jobs.View) api.Job {
	return worldOf(r).PresentJob(v, baseURL(r), sim.ToClient)
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
		v, err := worldOf(r).Job(keyOf(r).Account, pathVar(r, "id"))
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
		items, err := encodeEach(views, func(v jobs.View) any { return jobBody(r, v) })
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
	rep := reply{status: http.StatusOK, body: jobBody(r, v), facts: facts{jobID: v.ID, jobStatus: string(v.Status)}}
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
