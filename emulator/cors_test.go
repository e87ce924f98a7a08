package emulator_test

// Tests of CORS (preflights and Access-Control-* headers) and of the home page, through the
// full handler.

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/emulator"
)

// serverWith is the small catalog's server with a change to its configuration.
func serverWith(t testing.TB, change func(*emulator.Config)) *emulator.Server {
	t.Helper()
	cfg := smallConfig
	change(&cfg)
	s, err := emulator.NewServer(cfg)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// preflight sends a browser's preflight for a request of method to path from origin.
func preflight(t testing.TB, h http.Handler, path, origin, method string) *httptest.ResponseRecorder {
	t.Helper()
	return send(t, h, http.MethodOptions, path, "", "Origin", origin, "Access-Control-Request-Method", method,
		"Access-Control-Request-Headers", "authorization,content-type,idempotency-key,x-emulator-tenant")
}

// headerList splits a comma-separated header into its lower-case items.
func headerList(v string) map[string]bool {
	out := map[string]bool{}
	for _, item := range strings.Split(v, ",") {
		out[strings.ToLower(strings.TrimSpace(item))] = true
	}
	return out
}

func TestCORSPreflight(t *testing.T) {
	t.Parallel()
	h := newSmallServer(t)
	// A fault on every /v1 request must not reach preflights, which come before faults.
	addFault := httptest.NewRequest(http.MethodPost, "/_emulator/faults", strings.NewReader(`{"match":{"path":"/v1/**"},"status":429}`))
	addFault.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, addFault)
	if rec.Code != http.StatusCreated {
		t.Fatalf("adding a fault: %d %s", rec.Code, rec.Body)
	}
	for _, tc := range []struct{ path, method, allow string }{
		{"/v1/models", "GET", "GET, HEAD, OPTIONS"},
		{"/v1/models/test/pixel", "GET", "GET, HEAD, OPTIONS"},
		{"/v1/quotes", "POST", "POST, OPTIONS"},
		{"/v1/generate?wait=true", "POST", "POST, OPTIONS"},
		{"/v1/jobs/123/cancel", "POST", "POST, OPTIONS"},
		{"/files/job/0.png", "GET", "GET, HEAD, OPTIONS"},
		{"/files/default/job/0.png", "GET", "GET, HEAD, OPTIONS"},
	} {
		rec := preflight(t, h, tc.path, "http://localhost:5173", tc.method)
		if rec.Code != http.StatusNoContent || rec.Body.Len() != 0 {
			t.Errorf("OPTIONS %s: %d %q; want 204 and no body", tc.path, rec.Code, rec.Body)
			continue
		}
		hd := rec.Header()
		if got := hd.Get("Access-Control-Allow-Origin"); got != "*" {
			t.Errorf("OPTIONS %s: Access-Control-Allow-Origin %q, want *", tc.path, got)
		}
		if got := hd.Get("Access-Control-Allow-Methods"); got != "GET, HEAD, POST, PUT, DELETE" {
			t.Errorf("OPTIONS %s: Access-Control-Allow-Methods %q", tc.path, got)
		}
		allowed := headerList(hd.Get("Access-Control-Allow-Headers"))
		for _, want := range []string{"authorization", "content-type", "idempotency-key", "x-request-id",
			"x-emulator-tenant", "x-emulator-outcome", "x-emulator-scenario", "x-emulator-admin-token", "range", "if-none-match"} {
			if !allowed[want] {
				t.Errorf("OPTIONS %s: Access-Control-Allow-Headers %q lacks %s", tc.path, hd.Get("Access-Control-Allow-Headers"), want)
			}
		}
		if allowed["*"] {
			t.Errorf("OPTIONS %s: a wildcard in Access-Control-Allow-Headers does not cover Authorization", tc.path)
		}
		if hd.Get("Access-Control-Max-Age") == "" || hd.Get("Access-Control-Allow-Credentials") != "" || hd.Get("Vary") != "" {
			t.Errorf("OPTIONS %s: Max-Age %q, Allow-Credentials %q, Vary %q; want a max age, no credentials with *, no Vary",
				tc.path, hd.Get("Access-Control-Max-Age"), hd.Get("Access-Control-Allow-Credentials"), hd.Get("Vary"))
		}
		if got := hd.Get("Allow"); got != tc.allow {
			t.Errorf("OPTIONS %s: Allow %q, want %q", tc.path, got, tc.allow)
		}
	}

	// A path no route serves: 404 problem, with the CORS headers so a script can read it.
	for _, path := range []string{"/v1/nope", "/v1", "/files/only-one", "/files/no-such-tenant/job/0.png"} {
		rec := preflight(t, h, path, "http://localhost:5173", "GET")
		checkProblem(t, rec, http.StatusNotFound, "not_found")
		if rec.Header().Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("OPTIONS %s: 404 without Access-Control-Allow-Origin", path)
		}
	}

	// Preflights are neither journaled nor faulted: the journal is empty, the fault never fired.
	rec = send(t, h, http.MethodGet, "/_emulator/requests", "")
	var journal struct {
		Total int `json:"total"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &journal); err != nil || journal.Total != 0 {
		t.Errorf("journal after preflights: %s; want it empty", rec.Body)
	}
	rec = send(t, h, http.MethodGet, "/_emulator/faults", "")
	if !strings.Contains(rec.Body.String(), `"fired":0`) {
		t.Errorf("faults after preflights: %s; want the fault never fired", rec.Body)
	}
	// The real request after the preflight does meet the fault, and still carries CORS headers.
	rec = send(t, h, http.MethodGet, "/v1/models", "key_a", "Origin", "http://localhost:5173")
	checkProblem(t, rec, http.StatusTooManyRequests, "rate_limited")
	if rec.Header().Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("faulted answer without Access-Control-Allow-Origin: %v", rec.Header())
	}
}

func TestCORSBeforeAuthAndControlToken(t *testing.T) {
	t.Parallel()
	h := serverWith(t, func(c *emulator.Config) { c.AdminToken = "s3cret" })
	rec := preflight(t, h, "/v1/generate", "https://app.example", "POST")
	if rec.Code != http.StatusNoContent || rec.Header().Get("WWW-Authenticate") != "" {
		t.Errorf("preflight without a key: %d %v; want 204 before authentication", rec.Code, rec.Header())
	}
}

func TestCORSActualRequests(t *testing.T) {
	t.Parallel()
	h := newSmallServer(t)
	const origin = "http://localhost:5173"
	tests := []struct {
		name, method, path, key string
		status                  int
	}{
		{"ok", "GET", "/v1/models", "key_a", 200},
		{"no key", "GET", "/v1/models", "", 401},
		{"no such job", "GET", "/v1/jobs/nope", "key_a", 404},
		{"bad tenant", "GET", "/v1/models", "key_a", 400}, // answered by the frame, before routing
		{"file", "GET", "/files/nope/0.png", "", 404},
	}
	for _, tc := range tests {
		headers := []string{"Origin", origin}
		if tc.name == "bad tenant" {
			headers = append(headers, "X-Emulator-Tenant", "not a name")
		}
		rec := send(t, h, tc.method, tc.path, tc.key, headers...)
		if rec.Code != tc.status {
			t.Errorf("%s: status %d, want %d", tc.name, rec.Code, tc.status)
		}
		hd := rec.Header()
		if hd.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("%s: Access-Control-Allow-Origin %q, want *", tc.name, hd.Get("Access-Control-Allow-Origin"))
		}
		exposed := headerList(hd.Get("Access-Control-Expose-Headers"))
		for _, want := range []string{"location", "retry-after", "idempotent-replayed", "x-request-id", "x-emulator-version",
			"x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"} {
			if !exposed[want] {
				t.Errorf("%s: Access-Control-Expose-Headers %q lacks %s", tc.name, hd.Get("Access-Control-Expose-Headers"), want)
			}
		}
	}

	// Without an Origin (curl, a server-side client) and outside /v1 and /files: no CORS headers.
	for _, r := range []struct{ path, origin string }{{"/v1/models", ""}, {"/_emulator/health", origin}, {"/", origin}} {
		rec := send(t, h, http.MethodGet, r.path, "key_a", "Origin", r.origin)
		if got := rec.Header().Get("Access-Control-Allow-Origin"); got != "" {
			t.Errorf("GET %s (Origin %q): Access-Control-Allow-Origin %q, want none", r.path, r.origin, got)
		}
	}
	// The control API stays same-origin: its OPTIONS is still 405.
	rec := preflight(t, h, "/_emulator/clock", origin, "POST")
	checkProblem(t, rec, http.StatusMethodNotAllowed, "method_not_allowed")
	if rec.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("control API preflight answered with CORS headers: %v", rec.Header())
	}
}

func TestCORSOriginList(t *testing.T) {
	t.Parallel()
	h := serverWith(t, func(c *emulator.Config) {
		c.CORSOrigins = []string{"http://localhost:5173", " HTTPS://App.Example/ "}
	})
	for _, origin := range []string{"http://localhost:5173", "https://app.example"} {
		rec := preflight(t, h, "/v1/quotes", origin, "POST")
		hd := rec.Header()
		if rec.Code != http.StatusNoContent || hd.Get("Access-Control-Allow-Origin") != origin ||
			hd.Get("Access-Control-Allow-Credentials") != "true" || hd.Get("Vary") != "Origin" || hd.Get("Access-Control-Allow-Headers") == "" {
			t.Errorf("preflight from %s: %d %v; want 204 echoing the origin, with credentials and Vary: Origin", origin, rec.Code, hd)
		}
		rec = send(t, h, http.MethodGet, "/v1/models", "key_a", "Origin", origin)
		if rec.Code != 200 || rec.Header().Get("Access-Control-Allow-Origin") != origin || rec.Header().Get("Vary") != "Origin" {
			t.Errorf("GET from %s: %d %v", origin, rec.Code, rec.Header())
		}
	}
	// Another origin gets no permission (the browser refuses), but the answer still varies by
	// Origin, so no cache hands one origin's answer to another.
	for _, origin := range []string{"http://localhost:5174", "http://evil.example", "null"} {
		rec := preflight(t, h, "/v1/quotes", origin, "POST")
		hd := rec.Header()
		if rec.Code != http.StatusNoContent || hd.Get("Access-Control-Allow-Origin") != "" || hd.Get("Access-Control-Allow-Headers") != "" || hd.Get("Vary") != "Origin" {
			t.Errorf("preflight from %s: %d %v; want 204 without permission, Vary: Origin", origin, rec.Code, hd)
		}
		rec = send(t, h, http.MethodGet, "/v1/models", "key_a", "Origin", origin)
		if rec.Header().Get("Access-Control-Allow-Origin") != "" || rec.Header().Get("Access-Control-Expose-Headers") != "" {
			t.Errorf("GET from %s: %v; want no CORS permission", origin, rec.Header())
		}
	}
}

func TestCORSNone(t *testing.T) {
	t.Parallel()
	h := serverWith(t, func(c *emulator.Config) { c.CORSOrigins = []string{"none"} })
	rec := preflight(t, h, "/v1/models", "http://localhost:5173", "GET")
	checkProblem(t, rec, http.StatusMethodNotAllowed, "method_not_allowed")
	if got := rec.Header().Get("Allow"); got != "GET, HEAD" {
		t.Errorf("Allow = %q; want GET, HEAD", got)
	}
	rec = send(t, h, http.MethodGet, "/v1/models", "key_a", "Origin", "http://localhost:5173")
	for k := range rec.Header() {
		if strings.HasPrefix(k, "Access-Control-") || k == "Vary" {
			t.Errorf("CORS off, yet %s: %s", k, rec.Header().Get(k))
		}
	}
}

func TestHome(t *testing.T) {
	t.Parallel()
	h := serverWith(t, func(c *emulator.Config) { c.CatalogFile = "" }) // the default catalog's keys
	for _, accept := range []string{"", "*/*", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "application/json;q=0.5, text/html"} {
		rec := send(t, h, http.MethodGet, "/", "", "Accept", accept)
		body := rec.Body.String()
		if rec.Code != 200 || rec.Header().Get("Content-Type") != "text/html; charset=utf-8" || rec.Header().Get("Vary") != "Accept" {
			t.Errorf("GET / (Accept %q): %d %v", accept, rec.Code, rec.Header())
			continue
		}
		for _, want := range []string{"<title>mediagen-emulator " + emulator.Version + "</title>", `href="/v1/models"`, "mg_test_all",
			`href="/_emulator/openapi.json"`, `href="/_emulator/health"`, `href="/_emulator/ui/"`, `href="https://github.com/mediagen/mediagen-emulator#readme"`} {
			if !strings.Contains(body, want) {
				t.Errorf("GET / (Accept %q): the page lacks %s:\n%s", accept, want, body)
			}
		}
	}
	for _, accept := range []string{"application/json", "application/json, text/html;q=0.9"} {
		rec := send(t, h, http.MethodGet, "/", "", "Accept", accept)
		index := decodeJSON[struct {
			Name    string `json:"name"`
			Version string `json:"version"`
			Docs    string `json:"docs"`
			Links   []struct {
				Rel, Href, Title, Note string
			} `json:"links"`
		}](t, rec)
		hrefs := map[string]string{}
		for _, l := range index.Links {
			hrefs[l.Rel] = l.Href
		}
		if index.Name != "mediagen-emulator" || index.Version != emulator.Version || index.Docs == "" ||
			hrefs["api"] != "/v1/models" || hrefs["openapi"] != "/_emulator/openapi.json" || hrefs["control"] != "/_emulator/health" || hrefs["dashboard"] != "/_emulator/ui/" {
			t.Errorf("GET / as JSON (Accept %q): %s", accept, rec.Body)
		}
	}
	if rec := send(t, h, http.MethodHead, "/", ""); rec.Code != 200 || rec.Header().Get("Content-Length") == "" {
		t.Errorf("HEAD /: %d %v", rec.Code, rec.Header())
	}
	checkProblem(t, send(t, h, http.MethodPost, "/", ""), http.StatusMethodNotAllowed, "method_not_allowed")
	checkProblem(t, send(t, h, http.MethodGet, "/index.html", ""), http.StatusNotFound, "not_found")

	// The home page is not part of the emulated service: the journal does not record it.
	rec := send(t, h, http.MethodGet, "/_emulator/requests", "")
	if !strings.Contains(rec.Body.String(), `"total":0`) {
		t.Errorf("journal after GET /: %s; want it empty", rec.Body)
	}
}

func TestHomeWithOwnCatalog(t *testing.T) {
	t.Parallel()
	rec := send(t, newSmallServer(t), http.MethodGet, "/", "")
	if strings.Contains(rec.Body.String(), "mg_test_all") || !strings.Contains(rec.Body.String(), "Bearer KEY") {
		t.Errorf("a catalog without mg_test_all: the page should not offer it:\n%s", rec.Body)
	}
}
