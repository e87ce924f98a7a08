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
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/mediagen/mediagen-emulator/emulator"
)

// Advance moves the emulator's clock forward by d and returns once everything that fell due
// has happened: jobs have started and finished, quotes and outputs have expired.
func (e *Emulator) Advance(d time.Duration) {
	e.t.Helper()
	if d < 0 {
		e.t.Fatalf("emulatortest: Advance(%v): the clock only moves forward", d)
		return
	}
	e.do(http.MethodPost, "/_emulator/clock", map[string]string{"advance": d.String()}, http.StatusOK, nil)
}

// SetTime moves the emulator's clock forward to t, like Advance. A time before the clock's
// current time ends the test (Reset starts the clock over).
func (e *Emulator) SetTime(t time.Time) {
	e.t.Helper()
	e.do(http.MethodPost, "/_emulator/clock", map[string]string{"set": t.UTC().Format(time.RFC3339Nano)}, http.StatusOK, nil)
}

// Now is the emulator's current time.
func (e *Emulator) Now() time.Time {
	e.t.Helper()
	var body struct {
		Now string `json:"now"`
	}
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
		e.do(http.MethodPut, "/_emulator/scenario", map[string]string{"name": nameOrPath}, http.StatusOK, nil)
		return
	}
	// Check the file here, so its problems are reported against its own lines.
	if problems := emulator.ValidateFile(nameOrPath); len(problems) > 0 {
		e.t.Fatalf("emulatortest: SetScenario(%q):\n%s", nameOrPath, strings.Join(problems, "\n"))
		return
	}
	doc, err := scenarioJSON(nameOrPath)
	if err != nil {
		e.t.Fatalf("emulatortest: SetScenario(%q): %v", nameOrPath, err)
		return
	}
	e.do(http.MethodPut, "/_emulator/scenario", map[string]any{"scenario": doc}, http.StatusOK, nil)
}

// scenarioJSON reads a scenario YAML file as a JSON object, named after the file unless it
// names itself.
func scenarioJSON(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var raw any
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	v, err := jsonValue(raw)
	if err != nil {
		return nil, err
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("a scenario file is a YAML mapping")
	}
	if _, ok := doc["name"]; !ok {
		doc["name"] = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return doc, nil
}

// jsonValue turns a decoded YAML value into one JSON can carry.
func jsonValue(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		for k, item := range x {
			j, err := jsonValue(item)
			if err != nil {
				return nil, err
			}
			x[k] = j
		}
		return x, nil
	case map[any]any:
		return nil, fmt.Errorf("mapping keys must be strings")
	case []any:
		for i, item := range x {
			j, err := jsonValue(item)
			if err != nil {
				return nil, err
			}
			x[i] = j
		}
		return x, nil
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano), nil
	default:
		return x, nil
	}
}

// ForceComplete makes a job that has not ended succeed now, with real outputs.
func (e *Emulator) ForceComplete(jobID string) {
	e.t.Helper()
	e.do(http.MethodPost, "/_emulator/jobs/"+url.PathEscape(jobID)+"/complete", nil, http.StatusOK, nil)
}

// Failure is how ForceFail ends a job. The zero value is a generation_failed with the
// emulator's usual message.
type Failure struct {
	// Code is the job's error code, such as provider_timeout or content_policy_violation;
	// empty means generation_failed.
	Code string
	// Message is the job's error message; empty means the emulator's usual message for Code.
	Message string
}

// ForceFail makes a job that has not ended fail now, as f says, and refunds its credits:
//
//	emu.ForceFail(jobID, emulatortest.Failure{Code: "provider_timeout"})
func (e *Emulator) ForceFail(jobID string, f Failure) {
	e.t.Helper()
	body := map[string]string{}
	if f.Code != "" {
		body["code"] = f.Code
	}
	if f.Message != "" {
		body["message"] = f.Message
	}
	e.do(http.MethodPost, "/_emulator/jobs/"+url.PathEscape(jobID)+"/fail", body, http.StatusOK, nil)
}

// Request is one /v1 request as the emulator's journal recorded it, once answered.
type Request struct {
	Seq            uint64    `json:"seq"`
	Time           time.Time `json:"time"` // on the emulator's clock
	Method         string    `json:"method"`
	Path           string    `json:"path"`
	Query          string    `json:"query"` // raw, without "?"
	Status         int       `json:"status"`
	Code           string    `json:"code"` // the problem code of an error answer
	Account        string    `json:"account"`
	Model          string    `json:"model"`
	JobID          string    `json:"job_id"`
	RequestID      string    `json:"request_id"`
	IdempotencyKey string    `json:"idempotency_key"`
	Fault          string    `json:"fault"` // the id of the fault rule that answered, if any
	DurationMS     float64   `json:"duration_ms"`
}

// RequestFilter selects journal entries; empty fields match everything.
type RequestFilter struct {
	Method  string
	Path    string // exact, or a prefix when it ends in *
	Account string
	Model   string
	Code    string
	Status  int
}

// Requests lists the /v1 requests the emulator answered, oldest first, optionally filtered
// (give at most one filter). The journal keeps the latest 10,000.
func (e *Emulator) Requests(filter ...RequestFilter) []Request {
	e.t.Helper()
	if len(filter) > 1 {
		e.t.Fatalf("emulatortest: Requests takes at most one RequestFilter, got %d", len(filter))
		return nil
	}
	q := url.Values{}
	if len(filter) == 1 {
		f := filter[0]
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
	out := []Request{}
	for {
		q.Set("limit", strconv.Itoa(page))
		q.Set("offset", strconv.Itoa(len(out)))
		var body struct {
			Data    []Request `json:"data"`
			HasMore bool      `json:"has_more"`
		}
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

// Fault actions: what a matching request gets instead of its answer.
const (
	FaultError     = "error"     // Status with a problem body of Code (the default when Status is set)
	FaultReset     = "reset"     // the connection drops without an answer
	FaultMalformed = "malformed" // 200 with a body that is not valid JSON
	FaultTruncated = "truncated" // a body shorter than its Content-Length, then the connection closes
	FaultDelay     = "delay"     // the answer comes normally, Delay later (the default when only Delay is set)
)

// FaultMatch selects the requests a fault applies to; every field given must match.
type FaultMatch struct {
	Method     string `json:"method,omitempty"`
	Path       string `json:"path,omitempty"` // * matches any run of characters
	Model      string `json:"model,omitempty"`
	Category   string `json:"category,omitempty"`
	OutputType string `json:"output_type,omitempty"`
}

// Fault is an HTTP fault rule, as the control API's POST /_emulator/faults takes it.
type Fault struct {
	Match      FaultMatch
	Action     string        // one of the Fault* actions; empty picks error or delay
	Status     int           // for FaultError: 400 to 599
	Code       string        // the problem code of the error body, such as service_unavailable
	RetryAfter int           // seconds, sent as Retry-After
	Delay      time.Duration // real time before answering, at most 5 minutes
	// Count is how many matching requests the fault answers before it stops; 0 means all.
	Count int
	// Probability is the chance a matching request gets the fault; 0 means every one.
	Probability float64
}

// MarshalJSON writes the fault as the control API reads it.
func (f Fault) MarshalJSON() ([]byte, error) {
	body := map[string]any{"match": f.Match}
	if f.Action != "" {
		body["action"] = f.Action
	}
	if f.Status != 0 {
		body["status"] = f.Status
	}
	if f.Code != "" {
		body["code"] = f.Code
	}
	if f.RetryAfter != 0 {
		body["retry_after"] = f.RetryAfter
	}
	if f.Delay != 0 {
		body["delay"] = f.Delay.String()
	}
	if f.Count != 0 {
		body["count"] = f.Count
	}
	if f.Probability != 0 {
		body["probability"] = f.Probability
	}
	return json.Marshal(body)
}

// AddFault adds a fault rule and returns its id. It lasts until its Count runs out, ClearFaults
// or Reset; a scenario change leaves it in place.
func (e *Emulator) AddFault(f Fault) string {
	e.t.Helper()
	var rule struct {
		ID string `json:"id"`
	}
	e.do(http.MethodPost, "/_emulator/faults", f, http.StatusCreated, &rule)
	return rule.ID
}

// ClearFaults removes every fault rule AddFault added. The scenario's own faults stay (switch to
// the default scenario to drop them).
func (e *Emulator) ClearFaults() {
	e.t.Helper()
	e.do(http.MethodDelete, "/_emulator/faults", nil, http.StatusNoContent, nil)
}

// Balance is an account's credits.
type Balance struct {
	Account   string `json:"account"`
	Available int64  `json:"available"` // what the account can still spend
	Held      int64  `json:"held"`      // held by jobs that have not ended
	Charged   int64  `json:"charged"`   // spent on jobs that succeeded
	Refunded  int64  `json:"refunded"`  // given back by jobs that failed, expired or were canceled
}

// Balances lists every account's credits, by account id.
func (e *Emulator) Balances() []Balance {
	e.t.Helper()
	var body struct {
		Data []Balance `json:"data"`
	}
	e.do(http.MethodGet, "/_emulator/accounts", nil, http.StatusOK, &body)
	return body.Data
}

// SetCredits sets what an account can spend to n credits; held and charged credits stay.
func (e *Emulator) SetCredits(account string, n int64) {
	e.t.Helper()
	e.do(http.MethodPut, "/_emulator/accounts/"+url.PathEscape(account), map[string]int64{"credits": n}, http.StatusOK, nil)
}

// Balance is one account's credits.
func (e *Emulator) Balance(account string) Balance {
	e.t.Helper()
	for _, b := range e.Balances() {
		if b.Account == account {
			return b
		}
	}
	e.t.Fatalf("emulatortest: no account %q", account)
	return Balance{}
}

// AwaitWaiting returns once at least n wait=true generations are blocked waiting for their job
// in this tenant, so a test advances the manual clock only after its wait has begun. It ends
// the test if that has not happened within a minute of real time.
func (e *Emulator) AwaitWaiting(n int) {
	e.t.Helper()
	var body struct {
		Waiting int  `json:"waiting"`
		Reached bool `json:"reached"`
	}
	e.do(http.MethodGet, "/_emulator/waiting?count="+strconv.Itoa(n)+"&timeout=60s", nil, http.StatusOK, &body)
	if !body.Reached {
		e.t.Fatalf("emulatortest: AwaitWaiting(%d): only %d generations waiting after a minute", n, body.Waiting)
	}
}

// Job returns any account's job as the API shows it, decoded into a map.
func (e *Emulator) Job(id string) map[string]any {
	e.t.Helper()
	var job map[string]any
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
	var body io.Reader
	if in != nil {
		raw, err := json.Marshal(in)
		if err != nil {
			e.t.Fatalf("emulatortest: %s %s: %v", method, path, err)
			return
		}
		body = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, e.URL+path, body)
	if err != nil {
		e.t.Fatalf("emulatortest: %s %s: %v", method, path, err)
		return
	}
	if in != nil {
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
		e.t.Fatalf("emulatortest: %s %s: %v", method, path, err)
		return
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("emulatortest: %s %s: reading the answer: %v", method, path, err)
		return
	}
	if resp.StatusCode != want {
		var p struct {
			Code   string `json:"code"`
			Detail string `json:"detail"`
		}
		if json.Unmarshal(data, &p) == nil && p.Code != "" {
			e.t.Fatalf("emulatortest: %s %s: %d %s: %s", method, path, resp.StatusCode, p.Code, p.Detail)
		} else {
			e.t.Fatalf("emulatortest: %s %s: status %d, want %d: %.200s", method, path, resp.StatusCode, want, data)
		}
		return
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			e.t.Fatalf("emulatortest: %s %s: decoding %.200q: %v", method, path, data, err)
		}
	}
}
