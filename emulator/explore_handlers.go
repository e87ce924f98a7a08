package emulator

import (
	"net/http"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/explore"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jsonbody"
)

// exploreDraw draws the adversity plan of one run of an explore loop: POST
// /_emulator/explore/draw with an api.DrawRequest. The plan is a function of the body alone,
// so a test runner in any language draws the plans explore would, and no tenant is touched.
func (s *Server) exploreDraw() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		var req api.DrawRequest
		if err := s.decodeInto(w, r, &req, members{}); err != nil {
			return reply{}, err
		}
		if err := jsonbody.Problems(explore.CheckDrawRequest(req)); err != nil {
			return reply{}, err
		}
		return reply{status: http.StatusOK, body: explore.Draw(req)}, nil
	}
}

// exploreShrink answers the plans one step smaller than a failing one, the most promising
// first: POST /_emulator/explore/shrink with an api.ShrinkRequest.
func (s *Server) exploreShrink() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		var req api.ShrinkRequest
		if err := s.decodeInto(w, r, &req, members{required: []string{"plan"}}); err != nil {
			return reply{}, err
		}
		if err := jsonbody.Problems(explore.CheckShrinkRequest(req)); err != nil {
			return reply{}, err
		}
		c := explore.Candidates(req.Plan)
		if c == nil {
			c = []api.Plan{}
		}
		return reply{status: http.StatusOK, body: api.Shrunk{Candidates: c}}, nil
	}
}
