package emulator_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// FuzzHandlerPathQuery sends GET requests with arbitrary paths and queries through the whole
// handler: whatever arrives, the answer is never a 5xx, never a redirect but the dashboard's
// one, always carries the framing headers, and has a JSON body (problem+json for errors) except
// where a page, a file or a stream is served.
//
//	go test ./emulator -run '^$' -fuzz FuzzHandlerPathQuery -fuzztime 1m
func FuzzHandlerPathQuery(f *testing.F) {
	for _, seed := range []struct{ path, query string }{
		{"/v1/models", ""},
		{"/v1/models", "search=pixel&limit=2&offset=1"},
		{"/v1/models", "grouped=true&category=text-to-image"},
		{"/v1/models", "limit=0"},
		{"/v1/models", "limit=%zz"},
		{"/v1/models", "limit=1&limit=2"},
		{"/v1/models", "search=%00"},
		{"/v1/models", ";;&&=="},
		{"/v1/models/test/pixel", ""},
		{"/v1/models/test%2Fpixel", ""},
		{"/v1/models/test/../pixel", ""},
		{"/v1/models/%2e%2e", ""},
		{"/v1/models//", ""},
		{"/v1/models/categories", "x=1"},
		{"/v1/jobs", "status=running&limit=5"},
		{"/v1/jobs/nope", ""},
		{"/files/a/b", ""},
		{"/_emulator/health", ""},
		{"/_emulator/requests", "status=abc"},
		{"", ""},
		{"*", ""},
		{"/\x00", ""},
		{"/v1/models/\xff\xfe", "search=\xff"},
		{"/", "0"},
		{"/_emulator/ui", ""},
		{"/_emulator/ui/", ""},
		{"/_emulator/ui/nope.js", ""},
		{"/_emulator/events", ""},
		{"/_emulator/waiting", "count=5"},
	} {
		f.Add(seed.path, seed.query)
	}
	h := newSmallServer(f)
	f.Fuzz(func(t *testing.T, path, query string) {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		if path == "/_emulator/events" || path == "/_emulator/waiting" {
			// They answer when the client goes or (waiting) after seconds of real time: a
			// client that has already gone ends them at once.
			ctx, cancel := context.WithCancel(req.Context())
			cancel()
			req = req.WithContext(ctx)
		}
		req.URL = &url.URL{Path: path, RawQuery: query}
		req.RequestURI = req.URL.RequestURI()
		req.Header.Set("Authorization", "Bearer key_a")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		redirect := rec.Code >= 300 && rec.Code < 400
		if rec.Code >= 500 || redirect && (path != "/_emulator/ui" || rec.Header().Get("Location") != "/_emulator/ui/") {
			t.Fatalf("GET path %q query %q: status %d\n%s", path, query, rec.Code, rec.Body)
		}
		if rec.Header().Get("X-Request-Id") == "" || rec.Header().Get("X-Emulator-Version") == "" {
			t.Fatalf("GET path %q query %q: framing headers missing: %v", path, query, rec.Header())
		}
		notJSON := path == "/" || path == "/_emulator/events" || strings.HasPrefix(path, "/files/") || strings.HasPrefix(path, "/_emulator/ui/")
		if redirect || notJSON && rec.Code < 300 {
			return // the home page, media, the dashboard's files and its event stream
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("GET path %q query %q: status %d, body is not JSON:\n%q", path, query, rec.Code, rec.Body)
		}
		ct := rec.Header().Get("Content-Type")
		if rec.Code >= 400 && ct != "application/problem+json" || rec.Code < 400 && ct != "application/json" {
			t.Fatalf("GET path %q query %q: status %d with Content-Type %q", path, query, rec.Code, ct)
		}
		if m := goInternals.FindString(rec.Body.String()); m != "" && rec.Code >= 400 && !strings.Contains(path+query, m) {
			t.Fatalf("GET path %q query %q: error body shows %q:\n%s", path, query, m, rec.Body)
		}
	})
}
