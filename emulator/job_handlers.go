package emulator

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
)

// jobJSON is a job as clients see it.
type jobJSON struct {
	ID           string          `json:"id"`
	Model        string          `json:"model"`
	Status       jobs.Status     `json:"status"`
	QuoteID      string          `json:"quote_id"`
	Credits      int64           `json:"credits"`
	CreditStatus string          `json:"credit_status"`
	Input        json.RawMessage `json:"input"`
	CreatedAt    string          `json:"created_at"`
	StartedAt    *string         `json:"started_at"`
	FinishedAt   *string         `json:"finished_at"`
	Progress     float64         `json:"progress"`
	Outputs      []jobs.Output   `json:"outputs"`
	Error        *jobs.Error     `json:"error"`
}

// jobBody renders a job, giving its outputs absolute URLs on the address the client used, so
// they work behind port mapping; once outputs expire their URLs answer 410.
func (s *Server) jobBody(r *http.Request, v jobs.View) jobJSON {
	outputs := make([]jobs.Output, len(v.Outputs))
	base := baseURL(r)
	for i, o := range v.Outputs {
		o.URL = base + o.Path
		outputs[i] = o
	}
	return jobJSON{
		ID: v.ID, Model: v.Model, Status: v.Status, QuoteID: v.QuoteID, Credits: v.Credits,
		CreditStatus: v.CreditStatus, Input: v.Input, CreatedAt: timestamp(v.CreatedAt),
		StartedAt: nullableTime(v.StartedAt), FinishedAt: nullableTime(v.FinishedAt),
		Progress: v.Progress, Outputs: outputs, Error: v.Error,
	}
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

func (s *Server) getJob() handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		st := s.stateOf(r)
		id := mux.Vars(r)["id"]
		v, ok := st.jobs.Get(keyOf(r).Account, id)
		if !ok {
			return problem.New(problem.JobNotFound, "no job %q for this account", id)
		}
		return s.writeJSON(w, http.StatusOK, s.jobBody(r, v))
	}
}

func (s *Server) listJobs() handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		st := s.stateOf(r)
		p, err := parsePage(r)
		if err != nil {
			return err
		}
		var f jobs.Filter
		if v, ok, err := queryValue(r, "status"); err != nil {
			return err
		} else if ok {
			f.Status = jobs.Status(v)
			if !f.Status.Valid() {
				return paramError("status", "status must be one of queued, running, succeeded, failed, canceled, expired")
			}
		}
		if v, ok, err := queryValue(r, "model"); err != nil {
			return err
		} else if ok {
			f.Model = v
		}
		views, total := st.jobs.List(keyOf(r).Account, f, p.offset, p.limit)
		items, err := encodeEach(views, func(v jobs.View) any { return s.jobBody(r, v) })
		if err != nil {
			return err
		}
		writeList(w, items, total, p)
		return nil
	}
}

// jobChangeError classifies why a job could not be canceled or forced.
func jobChangeError(id string, v jobs.View, err error) error {
	switch {
	case errors.Is(err, jobs.ErrNotFound):
		return problem.New(problem.JobNotFound, "no job %q for this account", id)
	case errors.Is(err, jobs.ErrTerminal):
		return &problem.Error{Code: problem.JobNotCancelable, Detail: "job " + id + " already ended as " + string(v.Status),
			Extra: map[string]any{"job_status": string(v.Status)}}
	}
	return err
}

func (s *Server) cancelJob() handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		st := s.stateOf(r)
		id := mux.Vars(r)["id"]
		v, err := st.jobs.Cancel(keyOf(r).Account, id)
		if err != nil {
			return jobChangeError(id, v, err)
		}
		return s.writeJSON(w, http.StatusOK, s.jobBody(r, v))
	}
}
