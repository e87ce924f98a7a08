package emulator

import (
	"hash/maphash"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gorilla/mux"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
)

// routes is the whole API on one screen.
//
// Paths are matched as sent: no redirects for "//", "..", or trailing slashes (a redirect would
// turn a POST into a GET), so such paths answer 404. Model ids keep their slashes, and an id
// sent with %2F in place of "/" names the same model.
func (s *Server) routes() http.Handler {
	r := s.router()
	return s.cors(r, s.frame(s.traffic(r, dispatch(r))))
}

// router matches every endpoint; see routes.
func (s *Server) router() *mux.Router {
	r := mux.NewRouter()
	r.SkipClean(true)
	read, gen := catalog.PermModelsRead, catalog.PermGenerate

	r.Handle("/", s.handle(s.home())).Methods(http.MethodGet, http.MethodHead)

	r.Handle("/v1/models", s.handle(s.requireKey(read, s.listModels()))).Methods(http.MethodGet, http.MethodHead)
	r.Handle("/v1/models/categories", s.handle(s.requireKey(read, s.listCategories()))).Methods(http.MethodGet, http.MethodHead)
	r.Handle("/v1/models/{model:.+}", s.handle(s.requireKey(read, s.getModel()))).Methods(http.MethodGet, http.MethodHead)
	r.Handle("/v1/quotes", s.handle(s.requireKey(gen, (s.createQuote())))).Methods(http.MethodPost)
	r.Handle("/v1/generate", s.handle(s.requireKey(gen, (s.generate())))).Methods(http.MethodPost)
	r.Handle("/v1/jobs", s.handle(s.requireKey(gen, s.listJobs()))).Methods(http.MethodGet, http.MethodHead)
	r.Handle("/v1/jobs/{id}", s.handle(s.requireKey(gen, (s.getJob())))).Methods(http.MethodGet, http.MethodHead)
	r.Handle("/v1/jobs/{id}/cancel", s.handle(s.requireKey(gen, (s.cancelJob())))).Methods(http.MethodPost)
	r.Handle("/v1/uploads", s.handle(s.uploads())).Methods(http.MethodPost) // only while inputs are fetched (upload_handlers.go)

	r.Handle("/files/{job}/{name}", s.handle(s.serveFile())).Methods(http.MethodGet, http.MethodHead)
	r.Handle("/files/{tenant}/{job}/{name}", s.handle(s.serveFile())).Methods(http.MethodGet, http.MethodHead)

	r.Handle("/_emulator/health", s.handle(s.health())).Methods(http.MethodGet, http.MethodHead)
	r.Handle("/_emulator/openapi.json", s.handle(s.openAPIDocument())).Methods(http.MethodGet, http.MethodHead)
	r.Handle("/_emulator/reset", s.handle(s.control(s.resetState()))).Methods(http.MethodPost)
	r.Handle("/_emulator/clock", s.handle(s.control(s.getClock()))).Methods(http.MethodGet)
	r.Handle("/_emulator/clock", s.handle(s.control(s.setClock()))).Methods(http.MethodPost)
	r.Handle("/_emulator/scenario", s.handle(s.control(s.getScenario()))).Methods(http.MethodGet)
	r.Handle("/_emulator/scenario", s.handle(s.control(s.putScenario()))).Methods(http.MethodPut)
	r.Handle("/_emulator/requests", s.handle(s.control(s.listRequests()))).Methods(http.MethodGet)
	r.Handle("/_emulator/requests", s.handle(s.control(s.clearRequests()))).Methods(http.MethodDelete)
	r.Handle("/_emulator/faults", s.handle(s.control(s.listFaults()))).Methods(http.MethodGet)
	r.Handle("/_emulator/faults", s.handle(s.control(s.touching(s.addFault())))).Methods(http.MethodPost)
	r.Handle("/_emulator/faults", s.handle(s.control(s.touching(s.clearFaults())))).Methods(http.MethodDelete)
	r.Handle("/_emulator/faults/{id}", s.handle(s.control(s.touching(s.deleteFault())))).Methods(http.MethodDelete)
	r.Handle("/_emulator/plan", s.handle(s.control(s.showPlan()))).Methods(http.MethodGet)
	r.Handle("/_emulator/plan", s.handle(s.control(s.touching(s.putPlan())))).Methods(http.MethodPut)
	r.Handle("/_emulator/plan", s.handle(s.control(s.touching(s.clearPlan())))).Methods(http.MethodDelete)
	r.Handle("/_emulator/verify", s.handle(s.control(s.verifyRequests()))).Methods(http.MethodPost)
	r.Handle("/_emulator/expected-errors", s.handle(s.control(s.addExpectedError()))).Methods(http.MethodPost)
	r.Handle("/_emulator/expected-errors", s.handle(s.control(s.listExpectedErrors()))).Methods(http.MethodGet)
	r.Handle("/_emulator/expected-errors", s.handle(s.control(s.clearExpectedErrors()))).Methods(http.MethodDelete)
	r.Handle("/_emulator/unexpected", s.handle(s.control(s.listUnexpected()))).Methods(http.MethodGet)
	r.Handle("/_emulator/coverage", s.handle(s.control(s.getCoverage()))).Methods(http.MethodGet)
	r.Handle("/_emulator/accounts", s.handle(s.control(s.listAccounts()))).Methods(http.MethodGet)
	r.Handle("/_emulator/accounts/{account}", s.handle(s.control(s.putAccount()))).Methods(http.MethodPut)
	r.Handle("/_emulator/jobs", s.handle(s.control(s.listAllJobs()))).Methods(http.MethodGet)
	r.Handle("/_emulator/jobs/{id}", s.handle(s.control(s.controlJob()))).Methods(http.MethodGet)
	r.Handle("/_emulator/jobs/{id}/complete", s.handle(s.control(s.forceJob(jobs.Succeeded)))).Methods(http.MethodPost)
	r.Handle("/_emulator/jobs/{id}/fail", s.handle(s.control(s.forceJob(jobs.Failed)))).Methods(http.MethodPost)
	r.Handle("/_emulator/uploads", s.handle(s.control(s.listUploads()))).Methods(http.MethodGet)
	r.Handle("/_emulator/waiting", s.handle(s.control(s.awaitWaiting()))).Methods(http.MethodGet)
	r.Handle("/_emulator/report", s.handle(s.control(s.getReport()))).Methods(http.MethodGet)
	r.Handle("/_emulator/verdict", s.handle(s.control(s.getVerdict()))).Methods(http.MethodGet)
	r.Handle("/_emulator/bundle", s.handle(s.control(s.getBundle()))).Methods(http.MethodGet)
	r.Handle("/_emulator/explore/draw", s.handle(s.control(s.exploreDraw()))).Methods(http.MethodPost)
	r.Handle("/_emulator/explore/shrink", s.handle(s.control(s.exploreShrink()))).Methods(http.MethodPost)
	r.Handle("/_emulator/snapshot", s.handle(s.control(s.getSnapshot()))).Methods(http.MethodGet)
	r.Handle("/_emulator/snapshot", s.handle(s.control(s.putSnapshot()))).Methods(http.MethodPut)
	r.Handle("/_emulator/tenants", s.handle(s.control(s.listTenants()))).Methods(http.MethodGet)
	r.Handle("/_emulator/tenants/{name}", s.handle(s.control(s.deleteTenant()))).Methods(http.MethodDelete)
	r.Handle("/_emulator/webhooks", s.handle(s.control(s.getWebhooks()))).Methods(http.MethodGet)
	r.Handle("/_emulator/webhooks", s.handle(s.control(s.putWebhooks()))).Methods(http.MethodPut)
	r.Handle("/_emulator/webhooks", s.handle(s.control(s.deleteWebhooks()))).Methods(http.MethodDelete)
	r.Handle("/_emulator/webhooks/deliveries", s.handle(s.control(s.listWebhookDeliveries()))).Methods(http.MethodGet)
	r.Handle("/_emulator/events", s.handle(s.control(s.events(defaultStreams)))).Methods(http.MethodGet)
	r.Handle("/_emulator/ui", s.handle(s.dashboardRedirect())).Methods(http.MethodGet, http.MethodHead)
	r.Handle("/_emulator/ui/{file:.*}", s.handle(s.dashboard())).Methods(http.MethodGet, http.MethodHead)

	r.NotFoundHandler = s.handle(func(w http.ResponseWriter, req *http.Request) (reply, error) {
		return reply{}, problem.New(problem.NotFound, "no endpoint at %s %s", req.Method, req.URL.Path)
	})
	r.MethodNotAllowedHandler = s.handle(func(w http.ResponseWriter, req *http.Request) (reply, error) {
		if req.URL.Path == "/v1/uploads" && !worldOf(req).FetchingNow() {
			return reply{}, problem.New(problem.NotFound, "no endpoint at %s %s", req.Method, req.URL.Path) // no uploads: no such path
		}
		allowed := strings.Join(allowedMethods(r, req), ", ")
		return reply{header: http.Header{"Allow": {allowed}}},
			problem.New(problem.MethodNotAllowed, "%s does not answer %s; it answers %s", req.URL.Path, req.Method, allowed)
	})
	return r
}

// dispatch runs the handler of the route that matches, with the path's variables in the
// request's record: the router only matches, so a request is not copied twice more to carry
// them. The router always finds a handler, since it has both fallbacks set.
//
// A route depends on nothing but the method and the path, so recent answers are remembered in
// a small table: a client asks for the same few paths again and again, and matching runs the
// router's regular expressions (a model's id, which may hold slashes, twice). The table holds
// routeSlots entries at most, each overwritten by the next path hashing to its slot, so paths
// seen once (job ids, a client's typos) cost it nothing more than the space they take.
func dispatch(r *mux.Router) http.Handler {
	var (
		seed  = maphash.MakeSeed()
		slots [routeSlots]atomic.Pointer[routed]
		names routeNames
	)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		path := req.URL.Path
		slot := &slots[maphash.String(seed, path)%routeSlots]
		hit := slot.Load()
		if hit == nil || hit.method != req.Method || hit.path != path {
			var match mux.RouteMatch
			r.Match(req, &match)
			hit = &routed{method: req.Method, path: path, handler: match.Handler, vars: match.Vars, route: names.of(r, req, &match)}
			if len(path) <= maxRoutedPath {
				slot.Store(hit)
			}
		}
		info := infoOf(req)
		info.vars, info.route = hit.vars, hit.route // shared by every request to the path: only read
		hit.handler.ServeHTTP(w, req)
	})
}

// routeSlots is how many recent routes dispatch remembers; maxRoutedPath bounds the path it
// remembers one for, so the table holds at most a few hundred kilobytes.
const (
	routeSlots    = 512
	maxRoutedPath = 256
)

// routed is the router's answer for a method and a path.
type routed struct {
	method, path string
	handler      http.Handler
	vars         map[string]string
	route        string // see routeName
}

// routeName names the route a request matched for coverage, as the method and the path
// template without its patterns: "GET /v1/models/{model}". HEAD is named GET; a method the path
// does not answer is named with the path's template all the same; a path no route answers is
// "*". match is the router's answer for req, or nil to ask it.
func routeName(r *mux.Router, req *http.Request, match *mux.RouteMatch) string {
	if match == nil {
		match = &mux.RouteMatch{}
		r.Match(req, match)
	}
	method := req.Method
	if method == http.MethodHead {
		method = http.MethodGet
	}
	route := match.Route
	if match.MatchErr == mux.ErrMethodMismatch {
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
			if route = routeFor(r, req, m); route != nil {
				break
			}
		}
	}
	if route == nil || match.MatchErr == mux.ErrNotFound {
		return method + " *"
	}
	tpl, err := route.GetPathTemplate()
	if err != nil {
		return method + " *"
	}
	return method + " " + routeVar.ReplaceAllString(tpl, "{$1}")
}

// routeNames remembers the name of each route for each method, so a path seen for the first
// time (a new job's id) costs no formatting. Routes and methods are few: it holds at most their
// product.
type routeNames struct{ m sync.Map } // routeKey → string

type routeKey struct {
	route  *mux.Route
	method string
}

// of is routeName, remembered for routes that matched.
func (n *routeNames) of(r *mux.Router, req *http.Request, match *mux.RouteMatch) string {
	if match.Route == nil || match.MatchErr != nil {
		return routeName(r, req, match)
	}
	k := routeKey{match.Route, req.Method}
	if name, ok := n.m.Load(k); ok {
		return name.(string)
	}
	name := routeName(r, req, match)
	n.m.Store(k, name)
	return name
}

// routeVar is a path variable with its pattern, such as {model:.+}.
var routeVar = regexp.MustCompile(`\{(\w+):[^}]*\}`)

// allowedMethods lists the methods some route answers for the request's path.
func allowedMethods(r *mux.Router, req *http.Request) []string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if routeFor(r, req, m) != nil {
			out = append(out, m)
		}
	}
	return out
}

// routeFor is the route that answers the request's path with method m, or nil.
func routeFor(r *mux.Router, req *http.Request, m string) *mux.Route {
	probe := req.Clone(req.Context())
	probe.Method = m
	var found mux.RouteMatch
	if r.Match(probe, &found) && found.MatchErr == nil {
		return found.Route
	}
	return nil
}
