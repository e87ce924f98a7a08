package emulator

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gorilla/mux"
)

// TestDispatchAnswersAsTheRouter: whatever the order of requests, and however often paths
// share a slot of the remembered routes, dispatch runs the handler the router matches, with
// that request's own path variables.
func TestDispatchAnswersAsTheRouter(t *testing.T) {
	t.Parallel()
	r := mux.NewRouter()
	r.SkipClean(true)
	named := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			fmt.Fprintf(w, "%s %v", name, infoOf(req).vars)
		})
	}
	r.Handle("/v1/models/categories", named("categories")).Methods(http.MethodGet)
	r.Handle("/v1/models/{model:.+}", named("model")).Methods(http.MethodGet, http.MethodHead)
	r.Handle("/v1/jobs/{id}", named("job")).Methods(http.MethodGet)
	r.Handle("/v1/quotes", named("quotes")).Methods(http.MethodPost)
	r.NotFoundHandler = named("not found")
	r.MethodNotAllowedHandler = named("not allowed")
	d := dispatch(r)

	rng := rand.New(rand.NewPCG(1, 2))
	paths := []string{"/v1/models/categories", "/v1/quotes", "/v1/models/", "/nowhere"}
	for i := range 3 * routeSlots { // more paths than slots, so slots are overwritten
		paths = append(paths, fmt.Sprintf("/v1/models/vendor/m-%d", i), fmt.Sprintf("/v1/jobs/job-%d", i))
	}
	methods := []string{http.MethodGet, http.MethodHead, http.MethodPost}
	for range 20_000 {
		method, path := methods[rng.IntN(len(methods))], paths[rng.IntN(len(paths))]
		want := serveRouted(method, path, func(req *http.Request, w http.ResponseWriter) {
			var m mux.RouteMatch
			r.Match(req, &m)
			infoOf(req).vars = m.Vars
			m.Handler.ServeHTTP(w, req)
		})
		got := serveRouted(method, path, func(req *http.Request, w http.ResponseWriter) { d.ServeHTTP(w, req) })
		if got != want {
			t.Fatalf("%s %s: dispatch answered %q; the router %q", method, path, got, want)
		}
	}
}

// serveRouted answers one request through serve, with a request record as the frame makes.
func serveRouted(method, path string, serve func(*http.Request, http.ResponseWriter)) string {
	req := httptest.NewRequest(method, path, nil)
	req = req.WithContext(context.WithValue(req.Context(), ctxInfo, &reqInfo{}))
	rec := httptest.NewRecorder()
	serve(req, rec)
	return rec.Body.String()
}
