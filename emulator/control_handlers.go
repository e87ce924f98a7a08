package emulator

import (
	"net/http"
)

// health answers once the emulator is ready: with its version, clock and catalog size, so a
// client suite can check what it is talking to.
func (s *Server) health() handlerFunc {
	clockMode := "real"
	if s.cfg.ManualClock {
		clockMode = "manual"
	}
	return func(w http.ResponseWriter, r *http.Request) error {
		return s.writeJSON(w, http.StatusOK, map[string]any{
			"status":  "ok",
			"version": Version,
			"clock":   clockMode,
			"now":     timestamp(s.state().clock.Now()),
			"models":  len(s.catalog.Models),
			"seeded":  s.ids.Seeded(),
		})
	}
}
