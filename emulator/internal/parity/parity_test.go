package parity_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mediagen/mediagen-emulator/docs"
	"github.com/mediagen/mediagen-emulator/emulator"
	"github.com/mediagen/mediagen-emulator/emulator/cli"
	"github.com/mediagen/mediagen-emulator/emulator/internal/conformance"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
	"github.com/mediagen/mediagen-emulator/emulator/internal/parity"
)

// TestMain checks every answer the emulators of these tests give against the published OpenAPI
// document.
func TestMain(m *testing.M) {
	os.Exit(conformance.Run(m, docs.OpenAPI))
}

// liveKey is the key the stand-in live service is called with: a configured key on a tenant of
// its own, so the test can look at that tenant's world afterwards.
const (
	tenant  = "parityLive"
	liveKey = "mg_test_all." + tenant
)

// limitedKeys are the flags that give the run the stand-in's keys that lack a permission.
var limitedKeys = []string{"--read-only-key", "mg_test_read." + tenant, "--generate-only-key", "mg_test_generate." + tenant}

// standIn is an emulator standing in for the live service, wrapped by wrap when not nil.
func standIn(t *testing.T, wrap func(http.Handler) http.Handler) *httptest.Server {
	t.Helper()
	s, err := emulator.NewServer(emulator.Config{Seeded: true, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	var h http.Handler = s
	if wrap != nil {
		h = wrap(h)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}

// parityRun runs the command as main does, at a rate that keeps the test short.
func parityRun(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	args = append([]string{"--rate", "1000"}, args...)
	code = cli.Parity(context.Background(), args, func(string) string { return "" }, &out, &errb)
	return code, out.String(), errb.String()
}

// control calls the stand-in's control API on the live key's tenant and decodes the answer.
func control(t *testing.T, base, method, path, body string, v any) {
	t.Helper()
	controlOn(t, base, tenant, method, path, body, v)
}

// controlOn calls the control API on a tenant ("" for the default one).
func controlOn(t *testing.T, base, tenant, method, path, body string, v any) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if tenant != "" {
		req.Header.Set("X-Emulator-Tenant", tenant)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	if v != nil {
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
}

func readResult(t *testing.T, path string) *parity.Result {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r parity.Result
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// errorCases are the error cases of the coverage list.
func errorCases() []string {
	var ids []string
	for _, c := range evidence.Cases() {
		if c.Group == evidence.GroupErrors {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

// TestSameAgainstAnEmulatorAndFree: against an emulator standing in for the live service, every
// provokable case is the same and the run exits 0; every request provoked the case it was made
// for; no job exists afterwards, no balance moved, no quote was made and no generation accepted.
func TestSameAgainstAnEmulatorAndFree(t *testing.T) {
	t.Parallel()
	live := standIn(t, nil)
	var before, after json.RawMessage
	control(t, live.URL, http.MethodGet, "/_emulator/accounts", "", &before)
	out := filepath.Join(t.TempDir(), "result.json")
	code, stdout, stderr := parityRun(t, append([]string{"--from", live.URL, "--key", liveKey, "--out", out}, limitedKeys...)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	res := readResult(t, out)
	if got, want := len(res.Cases), len(errorCases()); got != want {
		t.Errorf("%d cases in the result, %d error cases in the list", got, want)
	}
	for i, c := range res.Cases {
		if c.Case != errorCases()[i] {
			t.Fatalf("case %d is %q, the list's is %q", i, c.Case, errorCases()[i])
		}
		switch c.Result {
		case parity.Same:
			if c.Note != "" {
				t.Errorf("%s: %s", c.Case, c.Note)
			}
		case parity.NotProvokable:
			if c.Reason == "" {
				t.Errorf("%s: not provokable, and no reason", c.Case)
			}
		default:
			t.Errorf("%s: %s %+v", c.Case, c.Result, c.Differences)
		}
	}
	// The cases the contract lets a client provoke for free are provoked, not skipped.
	for _, id := range []string{"GET /v1/models 401 unauthenticated", "GET /v1/models 400 invalid_parameter",
		"GET /v1/models/{model} 404 model_not_found", "POST /v1/quotes 413 payload_too_large", "POST /v1/quotes 409 model_unavailable",
		"POST /v1/quotes 422 invalid_input", "POST /v1/generate 404 quote_not_found", "POST /v1/generate 400 missing_idempotency_key",
		"POST /v1/generate 415 unsupported_media_type", "POST /v1/jobs/{id}/cancel 404 job_not_found",
		"GET /v1/models 403 permission_denied", "POST /v1/generate 403 permission_denied", "POST /v1/jobs/{id}/cancel 403 permission_denied"} {
		i := slices.IndexFunc(res.Cases, func(c parity.CaseResult) bool { return c.Case == id })
		if i < 0 || res.Cases[i].Result != parity.Same {
			t.Errorf("%s was not provoked", id)
		}
	}
	// A concurrency limit's refusal needs running jobs, which spend: parity says so.
	if i := slices.IndexFunc(res.Cases, func(c parity.CaseResult) bool { return c.Case == "POST /v1/generate 429 concurrency_limited" }); i < 0 {
		t.Error("no concurrency_limited case")
	} else if c := res.Cases[i]; c.Result != parity.NotProvokable || !strings.Contains(c.Reason, "concurrency limit") {
		t.Errorf("the concurrency_limited case: %+v", c)
	}
	if res.Summary.Same < 25 {
		t.Errorf("only %d cases provoked", res.Summary.Same)
	}

	control(t, live.URL, http.MethodGet, "/_emulator/accounts", "", &after)
	if !bytes.Equal(before, after) {
		t.Errorf("balances moved:\nbefore %s\nafter  %s", before, after)
	}
	// Requests without a key reach the default tenant, the others the key's.
	sent := 0
	for _, world := range []string{tenant, ""} {
		var jobs struct {
			Total int `json:"total"`
		}
		controlOn(t, live.URL, world, http.MethodGet, "/_emulator/jobs", "", &jobs)
		if jobs.Total != 0 {
			t.Errorf("tenant %q: %d jobs exist", world, jobs.Total)
		}
		var journal struct {
			Data []struct {
				Method, Path string
				Status       int
			}
		}
		controlOn(t, live.URL, world, http.MethodGet, "/_emulator/requests?limit=500", "", &journal)
		for _, e := range journal.Data {
			if e.Method == http.MethodPost && e.Status/100 == 2 {
				t.Errorf("%s %s was accepted (%d)", e.Method, e.Path, e.Status)
			}
		}
		sent += len(journal.Data)
	}
	if sent < res.Summary.Same {
		t.Fatalf("the journals hold %d requests, fewer than the %d cases sent", sent, res.Summary.Same)
	}
}

// TestAChangedAnswerIsNamed: a fault that changes one case's status and code, and a wrapper
// that renames one case's problem member, are each named as exactly that case, with the JSON
// paths that differ; the run exits 1, and 0 once --known accepts them.
func TestAChangedAnswerIsNamed(t *testing.T) {
	t.Parallel()
	renamed := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/v1/quotes" || r.Header.Get("Content-Type") != "text/plain" {
				next.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.Header().Del("Content-Length")
			w.WriteHeader(rec.Code)
			_, _ = w.Write(bytes.Replace(rec.Body.Bytes(), []byte(`"detail":`), []byte(`"message":`), 1))
		})
	}
	cases := []struct {
		name  string
		wrap  func(http.Handler) http.Handler
		fault string
		want  string
		paths []string
	}{
		{"fault", nil, `{"match":{"method":"GET","path":"/v1/models/parity-missing-*"},"action":"error","status":410,"code":"model_gone"}`,
			"GET /v1/models/{model} 404 model_not_found", []string{"/status", "/body/code"}},
		{"renamed member", renamed, "", "POST /v1/quotes 415 unsupported_media_type", []string{"/body/detail", "/body/message"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			live := standIn(t, c.wrap)
			if c.fault != "" {
				control(t, live.URL, http.MethodPost, "/_emulator/faults", c.fault, nil)
			}
			dir := t.TempDir()
			out, md := filepath.Join(dir, "result.json"), filepath.Join(dir, "summary.md")
			code, stdout, stderr := parityRun(t, "--from", live.URL, "--key", liveKey, "--out", out, "--markdown", md)
			if code != 1 {
				t.Fatalf("exit %d, want 1\n%s\n%s", code, stdout, stderr)
			}
			res := readResult(t, out)
			var differing []string
			for _, r := range res.Cases {
				if r.Result == parity.Differs {
					differing = append(differing, r.Case)
					var paths []string
					for _, d := range r.Differences {
						paths = append(paths, d.Path)
					}
					if !slices.Equal(paths, c.paths) {
						t.Errorf("%s differs at %q, want %q", r.Case, paths, c.paths)
					}
				}
			}
			if !slices.Equal(differing, []string{c.want}) {
				t.Fatalf("differing cases %q, want only %q", differing, c.want)
			}
			if res.Summary.New != len(c.paths) || res.Summary.Differs != 1 {
				t.Errorf("summary %+v", res.Summary)
			}
			if !strings.Contains(stdout, "differs        "+c.want) {
				t.Errorf("stdout does not name the case:\n%s", stdout)
			}
			summary, _ := os.ReadFile(md)
			if !strings.Contains(string(summary), "| `"+c.want+"` | **differs** |") || !strings.Contains(string(summary), "**(new)**") {
				t.Errorf("the markdown does not name the case:\n%s", summary)
			}

			// Accepted by case and path, the same differences no longer fail the run; an entry
			// no case matches is reported as stale.
			var accept []parity.KnownEntry
			for _, p := range c.paths {
				accept = append(accept, parity.KnownEntry{Case: c.want, Path: p, Why: "the live service does so"})
			}
			accept = append(accept, parity.KnownEntry{Case: "GET /v1/jobs *", Path: "/headers/**"})
			known, _ := json.Marshal(map[string]any{"accept": accept})
			knownFile := filepath.Join(dir, "known.json")
			if err := os.WriteFile(knownFile, known, 0o644); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr = parityRun(t, "--from", live.URL, "--key", liveKey, "--known", knownFile, "--out", out)
			if code != 0 {
				t.Fatalf("with --known: exit %d\n%s\n%s", code, stdout, stderr)
			}
			res = readResult(t, out)
			if res.Summary.Differs != 1 || res.Summary.New != 0 || len(res.StaleKnown) != 1 || res.StaleKnown[0].Case != "GET /v1/jobs *" {
				t.Errorf("with --known: summary %+v, stale %+v", res.Summary, res.StaleKnown)
			}
			if !strings.Contains(stdout, "(known)") || !strings.Contains(stdout, "stale known") {
				t.Errorf("with --known: stdout\n%s", stdout)
			}
		})
	}
}
