package emulator

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
)

// The forward-compatibility mode (a scenario's evolution) beyond the frame, which adds the
// member and the header to every /v1 answer (middleware.go): and the model of an undocumented output type in the catalog's answers.

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
