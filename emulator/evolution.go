package emulator

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evolve"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
)

// The forward-compatibility mode (a scenario's evolution) beyond the frame, which adds the
// member and the header to every /v1 answer (middleware.go): the status a job shows first when
// it runs, and the model of an undocumented output type in the catalog's answers.

// evolveJob shows a job in the first part of its run with the mode's undocumented status: not
// yet started, no progress. Only how /v1 shows the job changes; the control API and the
// dashboard show its documented status.
func evolveJob(r *http.Request, v jobs.View, body *jobJSON) {
	world := worldOf(r)
	if !strings.HasPrefix(r.URL.Path, "/v1/") || !world.Preparing(v) {
		return
	}
	body.Status, body.StartedAt, body.Progress = evolve.Status, nil, 0 // Preparing counted it
}

// withEvolved adds the model of an undocumented output type to a list of matches, last, when
// the mode lists it and it matches the search and category as a catalog model would.
func withEvolved(r *http.Request, matches []*catalog.Model, search, category string) []*catalog.Model {
	m := worldOf(r).EvolvedModel()
	if m == nil || (category != "" && category != m.Category) {
		return matches
	}
	if search != "" && !strings.Contains(strings.ToLower(m.ID), search) && !strings.Contains(strings.ToLower(m.Name), search) &&
		!strings.Contains(strings.ToLower(m.Description), search) {
		return matches
	}
	return append(matches[:len(matches):len(matches)], m)
}

// evolvedCategories is the categories' answer with the category of the undocumented output
// type added last.
func evolvedCategories(c *catalog.Catalog, m *catalog.Model) ([]byte, error) {
	all := append(slices.Clip(c.Categories()), api.Category{ID: m.Category, OutputType: m.OutputType, ModelCount: 1})
	return json.Marshal(api.List[api.Category]{Data: all})
}
