package emulator

import (
	"bytes"
	"net/http"
	"strconv"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
)

// maxRequire bounds the require patterns one coverage request may give.
const maxRequire = 100

// readPattern decodes and checks the request pattern a body holds.
func (s *Server) readPattern(w http.ResponseWriter, r *http.Request) (*evidence.Pattern, error) {
	body, err := s.readBody(w, r)
	var obj map[string]any // a pattern left out, however it was sent, matches every request
	if err == nil && len(bytes.TrimSpace(body)) > 0 {
		obj, err = parseObject(body)
	}
	if err != nil {
		return nil, err
	}
	p, errs := evidence.Parse(obj)
	if errs != nil {
		return nil, &problem.Error{Code: problem.InvalidRequest, Detail: "the request pattern has " + strconv.Itoa(len(errs)) + " problem(s); see errors", Errors: errs}
	}
	return p, nil
}

// verifyRequests counts the journal entries that match a pattern and, when none does, shows
// the closest. A client that leaves ends the scan.
func (s *Server) verifyRequests() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		p, err := s.readPattern(w, r)
		if err != nil {
			return reply{}, err
		}
		v, err := worldOf(r).Verify(r.Context(), p, infoOf(r).tenant.Name())
		if err != nil {
			return reply{}, nil // the client has gone: no one to answer
		}
		return reply{status: http.StatusOK, body: v}, nil
	}
}

// expectedList is the body listing a world's expected errors.
func expectedList(ps []*evidence.Pattern) api.ExpectedErrors {
	out := api.ExpectedErrors{Data: make([]api.RequestPattern, len(ps))}
	for i, p := range ps {
		out.Data[i] = p.Source()
	}
	return out
}

func (s *Server) addExpectedError() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		p, err := s.readPattern(w, r)
		if err != nil {
			return reply{}, err
		}
		all, err := worldOf(r).Expect(p)
		if err != nil {
			return reply{}, err
		}
		return reply{status: http.StatusCreated, body: expectedList(all)}, nil
	}
}

func (s *Server) listExpectedErrors() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		return reply{status: http.StatusOK, body: expectedList(worldOf(r).Expected())}, nil
	}
}

func (s *Server) clearExpectedErrors() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		worldOf(r).ClearExpected()
		return noContent, nil
	}
}

// listUnexpected lists the error answers of the tenant that no expected pattern covers, a page
// at a time. A client that leaves ends the scan.
func (s *Server) listUnexpected() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		p, err := parsePage(r)
		if err != nil {
			return reply{}, err
		}
		u, err := worldOf(r).Unexpected(r.Context(), infoOf(r).tenant.Name(), p.offset, p.limit)
		if err != nil {
			return reply{}, nil // the client has gone: no one to answer
		}
		return reply{status: http.StatusOK, body: u}, nil
	}
}

// scopeOf reads scope=tenant|run, the tenant when it is left out or empty.
func scopeOf(r *http.Request) (string, error) {
	scope, _, err := queryValue(r, "scope")
	switch {
	case err != nil:
		return "", err
	case scope == "" || scope == "tenant":
		return "tenant", nil
	case scope == "run":
		return scope, nil
	}
	return "", paramError("scope", "scope must be tenant or run, not %q", scope)
}

// getCoverage answers which of the contract's cases happened, in the tenant or over the run,
// as JSON or as markdown.
func (s *Server) getCoverage() replyFunc {
	return func(w http.ResponseWriter, r *http.Request) (reply, error) {
		scope, err := scopeOf(r)
		if err != nil {
			return reply{}, err
		}
		asMarkdown, err := wantsMarkdown(r)
		if err != nil {
			return reply{}, err
		}
		q, _ := query(r) // queryValue has refused a query that does not parse
		require := q["require"]
		if len(require) > maxRequire {
			return reply{}, paramError("require", "give at most %d require patterns", maxRequire)
		}
		globs := make([]evidence.Glob, len(require))
		for i, g := range require {
			if globs[i], err = evidence.ParseGlob(g); err != nil {
				return reply{}, paramError("require", "%s", err.Error())
			}
		}
		counts, tenant := worldOf(r).Coverage(), infoOf(r).tenant.Name()
		if scope == "run" {
			counts, tenant = s.tenants.RunCoverage(), ""
		}
		report := evidence.CoverageReport(scope, tenant, counts, globs)
		if !asMarkdown {
			return reply{status: http.StatusOK, body: report}, nil
		}
		return markdown(evidence.CoverageMarkdown(report)), nil
	}
}

// wantsMarkdown reads format=markdown|json, or else an Accept header that names text/markdown.
func wantsMarkdown(r *http.Request) (bool, error) {
	format, given, err := queryValue(r, "format")
	if err != nil {
		return false, err
	}
	if given {
		switch format {
		case "markdown":
			return true, nil
		case "json":
			return false, nil
		}
		return false, paramError("format", "format must be json or markdown")
	}
	return acceptQ(r.Header.Values("Accept"), "text/markdown") > 0, nil
}
