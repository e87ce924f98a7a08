package evidence

import (
	"strings"
	"sync"

	"github.com/mediagen/mediagen-emulator/docs"
)

// FilesRoute names every download of an output file, whatever its path: the route a plan
// strikes downloads by.
const FilesRoute = "GET /files/**"

// v1Routes are the /v1 operations docs/openapi.json documents, as their method and path
// template ("GET /v1/jobs/{id}"), each split into its segments; read from the document once,
// when first asked for, so the routes named are the ones the wire is checked against.
var v1Routes = sync.OnceValue(func() []routeTemplate {
	endpoints, err := endpointsOf(docs.OpenAPI)
	if err != nil {
		return nil // the coverage list has read the same document at start, or the package panicked
	}
	out := make([]routeTemplate, 0, len(endpoints))
	for _, e := range endpoints {
		method, path, _ := strings.Cut(e.route, " ")
		t := routeTemplate{name: e.route, method: method, segments: strings.Split(path, "/")}
		for _, s := range t.segments {
			if !isVar(s) {
				t.literals++
			}
		}
		out = append(out, t)
	}
	return out
})

// routeTemplate is one documented /v1 operation.
type routeTemplate struct {
	name     string // "GET /v1/models/{model}"
	method   string
	segments []string
	literals int // segments that are not variables
}

func isVar(segment string) bool {
	return strings.HasPrefix(segment, "{") && strings.HasSuffix(segment, "}")
}

// Route names the documented /v1 operation a request took, as "METHOD /v1/path/{template}" (a
// HEAD named GET), or "" for a path no /v1 operation answers. A variable stands for one
// segment; when no template fits so, a template whose last segment is a variable takes the
// rest of a longer path, as a model id keeps its slashes (GET /v1/models/fal-ai/flux/schnell).
// Of the templates that fit, the one with the most literal segments wins:
// /v1/models/categories is not a model.
func Route(method, path string) string {
	if method == "HEAD" {
		method = "GET"
	}
	if !strings.HasPrefix(path, "/v1/") {
		return ""
	}
	segments := strings.Split(path, "/")
	best, bestTail := -1, -1
	routes := v1Routes()
	for i, t := range routes {
		if t.method != method {
			continue
		}
		switch fit(t.segments, segments) {
		case exactFit:
			if best < 0 || t.literals > routes[best].literals {
				best = i
			}
		case tailFit:
			if bestTail < 0 || t.literals > routes[bestTail].literals {
				bestTail = i
			}
		}
	}
	switch {
	case best >= 0:
		return routes[best].name
	case bestTail >= 0:
		return routes[bestTail].name
	}
	return ""
}

// How a path fits a template.
const (
	noFit    = iota
	exactFit // segment for segment
	tailFit  // the template's last variable takes the path's remaining segments
)

func fit(template, path []string) int {
	if len(path) < len(template) {
		return noFit
	}
	for i, s := range template {
		if isVar(s) && path[i] == "" || !isVar(s) && s != path[i] {
			return noFit
		}
	}
	switch {
	case len(path) == len(template):
		return exactFit
	case isVar(template[len(template)-1]):
		return tailFit
	}
	return noFit
}
