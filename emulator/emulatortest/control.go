package emulatortest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/cli"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
)

// Advance moves the emulator's clock forward by d and returns once everything that fell due
// has happened: jobs have started and finished, quotes and outputs have expired.
func (e *Emulator) Advance(d time.Duration) {
	e.t.Helper()
	if d < 0 {
		e.t.Fatalf("emulatortest: Advance(%v): the clock only moves forward", d)
		return
	}
	e.do(http.MethodPost, "/_emulator/clock", api.ClockChange{Advance: d.String()}, http.StatusOK, nil)
}

// SetTime moves the emulator's clock forward to t, like Advance. A time before the clock's
// current time ends the test (Reset starts the clock over).
func (e *Emulator) SetTime(t time.Time) {
	e.t.Helper()
	e.do(http.MethodPost, "/_emulator/clock", api.ClockChange{Set: t.UTC().Format(time.RFC3339Nano)}, http.StatusOK, nil)
}

// Now is the emulator's current time.
func (e *Emulator) Now() time.Time {
	e.t.Helper()
	var body api.Clock
	e.do(http.MethodGet, "/_emulator/clock", nil, http.StatusOK, &body)
	now, err := time.Parse(time.RFC3339Nano, body.Now)
	if err != nil {
		e.t.Fatalf("emulatortest: GET /_emulator/clock: now %q is not an RFC 3339 time", body.Now)
	}
	return now
}

// SetScenario puts a scenario in force from now on, for new requests and new jobs: an embedded
// name (default, realistic, flaky, slow, expiring, outage, rate-limited) or the path of a
// scenario YAML file (anything with a slash or a .yaml/.yml ending). Faults added with AddFault
// stay; the previous scenario's faults and rate-limit windows go.
func (e *Emulator) SetScenario(nameOrPath string) {
	e.t.Helper()
	if !strings.ContainsAny(nameOrPath, `/\`) && !strings.HasSuffix(nameOrPath, ".yaml") && !strings.HasSuffix(nameOrPath, ".yml") {
		e.do(http.MethodPut, "/_emulator/scenario", api.ScenarioChange{Name: nameOrPath}, http.StatusOK, nil)
		return
	}
	// Check the file here, so its problems are reported against its own lines.
	if problems := cli.ValidateFile(nameOrPath); len(problems) > 0 {
		e.t.Fatalf("emulatortest: SetScenario(%q):\n%s", nameOrPath, strings.Join(problems, "\n"))
		return
	}
	doc, err := scenarioJSON(nameOrPath)
	if err != nil {
		e.t.Fatalf("emulatortest: SetScenario(%q): %v", nameOrPath, err)
		return
	}
	e.do(http.MethodPut, "/_emulator/scenario", api.ScenarioChange{Scenario: doc}, http.StatusOK, nil)
}

// scenarioJSON reads a scenario YAML file as JSON, the way the catalog converts its YAML, named
// after the file unless it names itself.
func scenarioJSON(path string) (json.RawMessage, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	raw, err := catalog.YAMLToJSON(path, data)
	if err != nil {
		return nil, err
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	if _, ok := doc["name"]; !ok {
		doc["name"], _ = json.Marshal(strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
	}
	return json.Marshal(doc)
}

// ForceComplete makes a job that has not ended succeed now, with real outputs.
func (e *Emulator) ForceComplete(jobID string) {
	e.t.Helper()
	e.do(http.MethodPost, "/_emulator/jobs/"+url.PathEscape(jobID)+"/complete", nil, http.StatusOK, nil)
}

// ForceFail makes a job that has not ended fail now, as f says, and refunds its credits. Empty
// fields take the emulator's usual code (generation_failed) and message:
//
//	emu.ForceFail(jobID, api.JobFailure{Code: "provider_timeout"})
func (e *Emulator) ForceFail(jobID string, f api.JobFailure) {
	e.t.Helper()
	e.do(http.MethodPost, "/_emulator/jobs/"+url.PathEscape(jobID)+"/fail", f, http.StatusOK, nil)
}

// Requests lists the /v1 requests the emulator answered, oldest first, optionally filtered by a
// request pattern (give at most one) on its method, path and model (globs: * within a segment,
// ** across), account, code and status; match headers and bodies with Verify. The journal keeps
// the latest 10,000.
func (e *Emulator) Requests(filter ...Pattern) []api.JournalEntry {
	e.t.Helper()
	if len(filter) > 1 {
		e.t.Fatalf("emulatortest: Requests takes at most one pattern, got %d", len(filter))
		return nil
	}
	q := url.Values{}
	if len(filter) == 1 {
		f := filter[0]
		if len(f.Headers) > 0 || f.Body != nil || f.Pointers != nil {
			e.t.Fatalf("emulatortest: Requests filters by method, path, model, account, code and status; match headers and bodies with Verify")
			return nil
		}
		for k, v := range map[string]string{"method": f.Method, "path": f.Path, "account": f.Account, "model": f.Model, "code": f.Code} {
			if v != "" {
				q.Set(k, v)
			}
		}
		if f.Status != 0 {
			q.Set("status", strconv.Itoa(f.Status))
		}
	}
	const page = 500
	out := []api.JournalEntry{}
	for {
		q.Set("limit", strconv.Itoa(page))
		q.Set("offset", strconv.Itoa(len(out)))
		var body api.Page[api.JournalEntry]
		e.do(http.MethodGet, "/_emulator/requests?"+q.Encode(), nil, http.StatusOK, &body)
		out = append(out, body.Data...)
		if !body.HasMore || len(body.Data) == 0 {
			return out
		}
	}
}

// ClearRequests empties the journal.
func (e *Emulator) ClearRequests() {
	e.t.Helper()
	e.do(http.MethodDelete, "/_emulator/requests", nil, http.StatusNoContent, nil)
}

// AddFault adds a fault rule and returns its id. It lasts until its Count runs out, ClearFaults
// or Reset; a scenario change leaves it in place.
func (e *Emulator) AddFault(f api.Perturbation) string {
	e.t.Helper()
	var rule api.Fault
	e.do(http.MethodPost, "/_emulator/faults", f, http.StatusCreated, &rule)
	return rule.ID
}

// ClearFaults removes every fault rule AddFault added. The scenario's own faults stay (switch to
// the default scenario to drop them).
func (e *Emulator) ClearFaults() {
	e.t.Helper()
	e.do(http.MethodDelete, "/_emulator/faults", nil, http.StatusNoContent, nil)
}

// Balances lists every account's credits, by account id.
func (e *Emulator) Balances() []api.Balance {
	e.t.Helper()
	var body api.List[api.Balance]
	e.do(http.MethodGet, "/_emulator/accounts", nil, http.StatusOK, &body)
	return body.Data
}

// SetCredits sets what an account can spend to n credits; held and charged credits stay.
func (e *Emulator) SetCredits(account string, n int64) {
	e.t.Helper()
	e.do(http.MethodPut, "/_emulator/accounts/"+url.PathEscape(account), api.CreditsChange{Credits: n}, http.StatusOK, nil)
}

// Balance is one account's credits.
func (e *Emulator) Balance(account string) api.Balance {
	e.t.Helper()
	for _, b := range e.Balances() {
		if b.Account == account {
			return b
		}
	}
	e.t.Fatalf("emulatortest: no account %q", account)
	return api.Balance{}
}

// AwaitWaiting returns once at least n wait=true generations are blocked waiting for their job
// in this tenant, so a test advances the manual clock only after its wait has begun. It ends
// the test if that has not happened within a minute of real time, and at once on a skipping
// clock, where a wait=true never blocks.
func (e *Emulator) AwaitWaiting(n int) {
	e.t.Helper()
	var clock api.Clock
	e.do(http.MethodGet, "/_emulator/clock", nil, http.StatusOK, &clock)
	if clock.Mode == "skip" {
		e.t.Fatalf(`emulatortest: AwaitWaiting(%d): the clock skips, so a wait=true answers at once and never waits; start the emulator WithManualClock() (or POST /_emulator/clock {"mode": "manual"}) to advance the clock under a waiting request`, n)
		return
	}
	var body api.Waiting
	e.do(http.MethodGet, "/_emulator/waiting?count="+strconv.Itoa(n)+"&timeout=60s", nil, http.StatusOK, &body)
	if !body.Reached {
		e.t.Fatalf("emulatortest: AwaitWaiting(%d): only %d generations waiting after a minute", n, body.Waiting)
	}
}

// Job returns any account's job as the API shows it.
func (e *Emulator) Job(id string) api.Job {
	e.t.Helper()
	var job api.Job
	e.do(http.MethodGet, "/_emulator/jobs/"+url.PathEscape(id), nil, http.StatusOK, &job)
	return job
}

// Reset puts the emulator back to how it started: quotes, jobs, idempotency keys, balances,
// journal, faults, scenario and clock.
func (e *Emulator) Reset() {
	e.t.Helper()
	e.do(http.MethodPost, "/_emulator/reset", nil, http.StatusOK, nil)
}

// do calls the control API and decodes the answer into out; any other status than want ends
// the test with the emulator's problem detail.
func (e *Emulator) do(method, path string, in any, want int, out any) {
	e.t.Helper()
	var body []byte
	if in != nil {
		raw, err := json.Marshal(in)
		if err != nil {
			e.t.Fatalf("emulatortest: %s %s: %v", method, path, err)
			return
		}
		body = raw
	}
	status, data, err := e.roundTrip(method, path, body)
	if err != nil {
		e.t.Fatalf("emulatortest: %s %s: %v", method, path, err)
		return
	}
	if status != want {
		e.t.Fatalf("emulatortest: %s %s: %s", method, path, describeRefusal(status, want, data))
		return
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			e.t.Fatalf("emulatortest: %s %s: decoding %.200q: %v", method, path, data, err)
		}
	}
}

// roundTrip sends one control request as this handle (its tenant and admin token) with a JSON
// body when body is not nil, and reads the whole answer.
func (e *Emulator) roundTrip(method, path string, body []byte) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, e.URL+path, r)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if e.adminToken != "" {
		req.Header.Set("X-Emulator-Admin-Token", e.adminToken)
	}
	if e.TenantName != "" {
		req.Header.Set("X-Emulator-Tenant", e.TenantName)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("reading the answer: %w", err)
	}
	return resp.StatusCode, data, nil
}

// describeRefusal says why an answer was not the one wanted: the problem's code and detail, and
// each of its errors (a snapshot refused names every problem with its JSON Pointer).
func describeRefusal(status, want int, data []byte) string {
	var p api.Problem
	if json.Unmarshal(data, &p) != nil || p.Code == "" {
		return fmt.Sprintf("status %d, want %d: %.200s", status, want, data)
	}
	msg := fmt.Sprintf("%d %s: %s", status, p.Code, p.Detail)
	if len(p.Errors) > 1 {
		for _, fe := range p.Errors {
			msg += "\n  " + fe.Pointer + fe.Parameter + ": " + fe.Message
		}
	}
	return msg
}

// Report is the emulator's report on the client's behaviour (GET /_emulator/report): for scope
// "tenant" (or "") this handle's tenant, for "run" every tenant since the emulator started.
// docs/verification.md lists every rule.
func (e *Emulator) Report(t TB, scope string) api.Report {
	t.Helper()
	q := url.Values{}
	if scope != "" {
		q.Set("scope", scope)
	}
	var rep api.Report
	e.For(t).do(http.MethodGet, "/_emulator/report?"+q.Encode(), nil, http.StatusOK, &rep)
	return rep
}

// AssertNoFindings fails t now when this handle's tenant has findings of the given rules (of any
// rule when none is given), listing each with its reason and journal entries.
func (e *Emulator) AssertNoFindings(t TB, rules ...string) {
	t.Helper()
	var bad []string
	for _, f := range e.Report(t, "tenant").Findings {
		if len(rules) == 0 || slices.Contains(rules, f.Rule) {
			bad = append(bad, fmt.Sprintf("  %s %s: %s (journal entries %v)", f.Severity, f.Rule, f.Reason, f.Entries))
		}
	}
	if len(bad) > 0 {
		t.Fatalf("emulatortest: the report on the client found %d problem(s):\n%s", len(bad), strings.Join(bad, "\n"))
	}
}

// FailOnRules checks, once t ends, that this handle's tenant has no findings of the given rules
// (of any rule when none is given), and fails t when it has, as AssertNoFindings does. Call it
// after Tenant(t), so that it runs before the tenant is deleted.
func (e *Emulator) FailOnRules(t TB, rules ...string) {
	t.Helper()
	t.Cleanup(func() { e.AssertNoFindings(t, rules...) })
}
