package emulator

import (
	"net/http"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
)

// plan decides a new job's course from the model's timing and the input.
func (s *Server) plan(_ *http.Request, m *catalog.Model, input map[string]any, _ string) jobs.Plan {
	t := m.Timing
	run := t.Run
	if t.RunPerUnit != nil {
		if v, ok := input[t.RunPerUnit.Field]; ok {
			if n, ok := catalog.NumberOf(v); ok && n > 0 {
				run += time.Duration(n * float64(t.RunPerUnit.Each))
			}
		} else if p, ok := m.Properties[t.RunPerUnit.Field]; ok {
			if n, ok := catalog.NumberOf(p.Default); ok && n > 0 {
				run += time.Duration(n * float64(t.RunPerUnit.Each))
			}
		}
	}
	return jobs.Plan{
		Queue:        t.Queue,
		Run:          run,
		QueueTimeout: t.QueueTimeout,
		Ending:       jobs.Ending{Status: jobs.Succeeded},
	}
}
