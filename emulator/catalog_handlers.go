package emulator

import (
	"encoding/json"

	"github.com/mediagen/mediagen-emulator/emulator/api"

	"net/http"
	"strconv"
	"strings"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
)

// page is the pagination of a list request.
type page struct {
	limit, offset int
}

const (
	defaultLimit = 100
	maxLimit     = 500
)

// queryValue returns a query parameter given at most once.
func queryValue(r *http.Request, name string) (string, bool, error) {
	q, err := query(r)
	if err != nil {
		return "", false, paramError(name, "the query string is malformed: %s", strings.TrimPrefix(err.Error(), "invalid URL escape "))
	}
	vs, ok := q[name]
	if !ok {
		return "", false, nil
	}
	if len(vs) > 1 {
		return "", false, paramError(name, "%s is given more than once", name)
	}
	return vs[0], true, nil
}

func paramError(name, format string, args ...any) error {
	e := problem.New(problem.InvalidParameter, format, args...)
	e.Errors = []problem.FieldError{{Parameter: name, Message: e.Detail}}
	return e
}

// parsePage reads limit and offset.
func parsePage(r *http.Request) (page, error) {
	p := page{limit: defaultLimit}
	if v, ok, err := queryValue(r, "limit"); err != nil {
		return p, err
	} else if ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxLimit {
			return p, paramError("limit", "limit must be an integer from 1 to %d", maxLimit)
		}
		p.limit = n
	}
	if v, ok, err := queryValue(r, "offset"); err != nil {
		return p, err
	} else if ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return p, paramError("offset", "offset must be an integer of 0 or more")
		}
		p.offset = n
	}
	return p, nil
}

// parseBool reads a boolean query parameter: true/false or 1/0.
func parseBool(r *http.Request, name string) (bool, error) {
	v, ok, err := queryValue(r, name)
	if err != nil || !ok {
		return false, err
	}
	switch strings.ToLower(v) {
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	}
	return false, paramError(name, "%s must be true or false", name)
}

func (s *Server) listModels() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		p, err := parsePage(r)
		if err != nil {
			return reply{}, err
		}
		grouped, err := parseBool(r, "grouped")
		if err != nil {
			return reply{}, err
		}
		category, hasCategory, err := queryValue(r, "category")
		if err != nil {
			return reply{}, err
		}
		world := worldOf(r)
		if hasCategory && !world.KnownCategory(category) {
			return reply{}, paramError("category", "unknown category %q; GET /v1/models/categories lists them", category)
		}
		search, _, err := queryValue(r, "search")
		if err != nil {
			return reply{}, err
		}
		search = strings.ToLower(strings.TrimSpace(search))
		if grouped {
			return s.grouped(s.catalog.Find(search, category), p)
		}
		items := make([]json.RawMessage, 0, min(p.limit, defaultLimit))
		total, evolved := world.PresentModels(search, category, p.offset, p.limit, func(m sim.ModelRecord) {
			items = append(items, withMembers(m.Record, m.Lifecycle))
		})
		rep := listReply(items, total, p)
		rep.facts.evolvedType = evolved // counted as the answer shows it
		return rep, nil
	}
}

func (s *Server) grouped(models []*catalog.Model, p page) (reply, error) {
	groups, total := s.catalog.Group(models, p.offset, p.limit)
	items, err := encodeEach(groups, func(g catalog.ProductModes) any {
		e := api.Product{Product: g.Product.ID, Name: g.Product.Name, Description: g.Product.Description}
		for _, m := range g.Models {
			e.Modes = append(e.Modes, api.ProductMode{Mode: m.Mode, Model: m.ID, Category: m.Category, OutputType: m.OutputType})
		}
		return e
	})
	if err != nil {
		return reply{}, err
	}
	return listReply(items, total, p), nil
}

func (s *Server) getModel() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		m, phase, evolved, err := worldOf(r).PresentModel(pathVar(r, "model"))
		var rep reply
		rep.deprecation(phase)
		if err != nil {
			return rep, err
		}
		rep.status, rep.raw, rep.facts.evolvedType = http.StatusOK, withMembers(m.Record, m.Lifecycle), evolved
		return rep, nil
	}
}

func (s *Server) listCategories() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		all, evolved := worldOf(r).PresentCategories()
		return reply{status: http.StatusOK, body: api.List[api.Category]{Data: all}, facts: facts{evolvedType: evolved}}, nil
	}
}
