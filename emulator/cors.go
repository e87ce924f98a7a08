package emulator

import (
	"net/http"
	"strings"

	"github.com/gorilla/mux"

	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
)

// CORS lets a web app served from another origin (a development server on localhost:5173, say)
// call /v1 and fetch /files from the browser. The control API stays same-origin: a web page a
// developer happens to visit should not be able to steer the emulator.
//
// Headers are listed, never "*": a wildcard in Access-Control-Allow-Headers does not cover
// Authorization, and no wildcard counts at all for a request made with credentials.
const (
	corsAllowMethods = "GET, HEAD, POST, PUT, DELETE"
	// The request headers a client of /v1 and /files sends beyond the CORS-safelisted ones:
	// the key, the JSON type, idempotency, a request id, the emulator's directives (the admin
	// token too, so a shared fetch wrapper that adds it everywhere still passes the preflight),
	// and the conditional and range headers of downloads.
	corsAllowHeaders = "Authorization, Content-Type, Idempotency-Key, X-Request-Id, " +
		"X-Emulator-Tenant, X-Emulator-Outcome, X-Emulator-Scenario, X-Emulator-Admin-Token, " +
		"Range, If-Range, If-None-Match, If-Modified-Since"
	// The response headers a script may read beyond the CORS-safelisted ones.
	corsExposeHeaders = "Location, Retry-After, Idempotent-Replayed, X-Request-Id, X-Emulator-Version, " +
		"X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, ETag, Content-Range, Accept-Ranges, " +
		"Deprecation, Sunset, Link"
	// corsMaxAge lets a browser reuse a preflight for ten minutes (Chromium caps it at two hours).
	corsMaxAge = "600"
)

// corsPolicy is which origins may call the emulator from a browser.
type corsPolicy struct {
	any     bool            // every origin, answered with "*"
	origins map[string]bool // otherwise these, each echoed back with Vary: Origin
}

// newCORSPolicy reads Config.CORSOrigins: empty or "*" allows every origin, "none" turns CORS
// off (nil), anything else lists origins such as http://localhost:5173.
func newCORSPolicy(origins []string) *corsPolicy {
	p := &corsPolicy{origins: map[string]bool{}}
	for _, o := range origins {
		o = normalOrigin(o)
		switch o {
		case "":
		case "none":
			return nil
		case "*":
			p.any = true
		default:
			p.origins[o] = true
		}
	}
	if len(p.origins) == 0 {
		p.any = true
	}
	return p
}

// normalOrigin is an origin as a browser sends it: lower case, no trailing slash.
func normalOrigin(o string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(o)), "/")
}

// corsPath reports whether a path is one browsers may call across origins.
func corsPath(path string) bool {
	return isAPI(path) || strings.HasPrefix(path, "/files/")
}

// cors wraps the framed router. On /v1 and /files it adds the Access-Control-* headers to every
// answer (errors included, so a script can read a 401 or a 429), and answers OPTIONS itself:
// 204 with the allowed methods and headers, before authentication and faults, and outside the
// journal; an OPTIONS for a path no route serves is 404.
func (s *Server) cors(router *mux.Router, framed http.Handler) http.Handler {
	p := newCORSPolicy(s.cfg.CORSOrigins)
	if p == nil {
		return framed
	}
	preflight := s.frame(s.handle(func(w http.ResponseWriter, r *http.Request) (reply, error) {
		allowed := allowedMethods(router, r)
		if len(allowed) == 0 {
			return reply{}, problem.New(problem.NotFound, "no endpoint at %s", r.URL.Path)
		}
		rep := reply{status: http.StatusNoContent, header: http.Header{"Allow": {strings.Join(append(allowed, http.MethodOptions), ", ")}}}
		if w.Header().Get("Access-Control-Allow-Origin") != "" {
			rep.header["Access-Control-Allow-Methods"] = []string{corsAllowMethods}
			rep.header["Access-Control-Allow-Headers"] = []string{corsAllowHeaders}
			rep.header["Access-Control-Max-Age"] = []string{corsMaxAge}
		}
		return rep, nil
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !corsPath(r.URL.Path) {
			framed.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		if !p.any {
			h.Add("Vary", "Origin")
		}
		if origin := r.Header.Get("Origin"); origin != "" {
			switch {
			case p.any:
				h.Set("Access-Control-Allow-Origin", "*")
			case p.origins[normalOrigin(origin)]:
				// A named origin may send credentials (cookies, say); "*" never can.
				h.Set("Access-Control-Allow-Origin", origin)
				h.Set("Access-Control-Allow-Credentials", "true")
			}
			if h.Get("Access-Control-Allow-Origin") != "" && r.Method != http.MethodOptions {
				h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
			}
		}
		if r.Method == http.MethodOptions {
			preflight.ServeHTTP(w, r)
			return
		}
		framed.ServeHTTP(w, r)
	})
}
