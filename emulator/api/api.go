// Package api holds the emulator's wire types: the bodies its API and control API send and
// take, declared once. The server encodes them and the Go harness (emulatortest) decodes them,
// so the two cannot drift apart; docs/openapi.json describes the same bodies, and the server's
// tests check every answer against it.
//
// Timestamps are RFC 3339 text in UTC with a Z, as the service sends them; the server formats
// them on its own clock, so they are kept as the text it sent.
package api

import (
	"encoding/json"
	"fmt"
	"time"
)

// Problem is the RFC 9457 body of every error answer (application/problem+json). Some codes add
// members of their own, declared after the common ones.
type Problem struct {
	Type      string       `json:"type"`
	Title     string       `json:"title"`
	Status    int          `json:"status"`
	Detail    string       `json:"detail"`
	Code      string       `json:"code"`
	RequestID string       `json:"request_id"`
	Errors    []FieldError `json:"errors,omitempty"`

	Permission       string   `json:"permission,omitempty"`        // permission_denied: the permission the key lacks
	CreditsRequired  *int64   `json:"credits_required,omitempty"`  // insufficient_credits: what the quote costs
	CreditsAvailable *int64   `json:"credits_available,omitempty"` // insufficient_credits: what the account can spend
	JobStatus        string   `json:"job_status,omitempty"`        // job_not_cancelable: the job's status
	Models           []string `json:"models,omitempty"`            // invalid_snapshot: the models the catalog lacks
}

// FieldError is one thing wrong with a request: where (a JSON Pointer into the body, or a query
// parameter) and what.
type FieldError struct {
	Pointer   string `json:"pointer,omitempty"`
	Parameter string `json:"parameter,omitempty"`
	Message   string `json:"message"`
}

// ModelSummary is a model as GET /v1/models lists it. The emulator writes it from bytes
// made once when the catalog loads, so this type documents the shape for a client.
type ModelSummary struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Category    string `json:"category"`
	OutputType  string `json:"output_type"` // image, video, audio
	Status      string `json:"status"`      // ready, or another word for a model that takes no quotes
	Product     string `json:"product"`
	Mode        string `json:"mode"`
	ModelLifecycle
}

// ModelLifecycle is what a model's deprecation in the tenant scenario's lifecycle adds to its
// record: nothing until it is deprecated; SunsetAt and Replacement when the rule gives them.
type ModelLifecycle struct {
	Deprecated   bool   `json:"deprecated,omitempty"`
	DeprecatedAt string `json:"deprecated_at,omitempty"`
	SunsetAt     string `json:"sunset_at,omitempty"`
	Replacement  string `json:"replacement,omitempty"`
}

// ModelDetail is a model as GET /v1/models/{model} shows it: the summary with the JSON Schema
// its input must satisfy, example inputs (null for none) and an OpenAPI document with one
// operation whose request body is that input. Like ModelSummary it documents the shape.
type ModelDetail struct {
	ModelSummary
	InputSchema json.RawMessage   `json:"input_schema"`
	Examples    []json.RawMessage `json:"examples"`
	OpenAPI     json.RawMessage   `json:"openapi"`
}

// Product is one product in GET /v1/models?grouped=true: the models that are its modes.
type Product struct {
	Product     string        `json:"product"`
	Name        string        `json:"name"`
	Description string        `json:"description"`
	Modes       []ProductMode `json:"modes"`
}

// ProductMode is one mode of a product and the model that serves it.
type ProductMode struct {
	Mode       string `json:"mode"`
	Model      string `json:"model"`
	Category   string `json:"category"`
	OutputType string `json:"output_type"`
}

// QuoteRequest is what POST /v1/quotes is sent: the model to price and its input, a JSON
// object whose schema is the model's own (the emulator reads its numbers as json.Number, so
// they stay exact). Unknown members are refused.
type QuoteRequest struct {
	Model string         `json:"model"`
	Input map[string]any `json:"input"`
}

// Validate lists the members q lacks, each at its JSON Pointer, as POST /v1/quotes refuses
// them: a member null or empty is one left out.
func (q QuoteRequest) Validate() []FieldError {
	errs := require(nil, q.Model != "", "model")
	return require(errs, q.Input != nil, "input")
}

// GenerateRequest is what POST /v1/generate is sent: the model, its input and a quote for
// exactly that model and input (inputs compare as JSON values). Unknown members are refused.
type GenerateRequest struct {
	Model   string         `json:"model"`
	Input   map[string]any `json:"input"`
	QuoteID string         `json:"quote_id"`
}

// Validate lists the members g lacks, as POST /v1/generate refuses them (see
// QuoteRequest.Validate).
func (g GenerateRequest) Validate() []FieldError {
	errs := require(nil, g.Model != "", "model")
	errs = require(errs, g.Input != nil, "input")
	return require(errs, g.QuoteID != "", "quote_id")
}

// require appends to errs that the member name is required, unless it is there.
func require(errs []FieldError, there bool, name string) []FieldError {
	if !there {
		errs = append(errs, FieldError{Pointer: "/" + name, Message: "is required"})
	}
	return errs
}

// Quote is the body of POST /v1/quotes: a price held for a model and input until ExpiresAt.
type Quote struct {
	QuoteID   string `json:"quote_id"`
	Model     string `json:"model"`
	Credits   int64  `json:"credits"`
	ExpiresAt string `json:"expires_at"`
}

// Job is a generation as POST /v1/generate and GET /v1/jobs/{id} show it.
type Job struct {
	ID           string          `json:"id"`
	Model        string          `json:"model"`
	Status       string          `json:"status"` // queued, running, succeeded, failed, canceled, expired
	QuoteID      string          `json:"quote_id"`
	Credits      int64           `json:"credits"`
	CreditStatus string          `json:"credit_status"` // held, charged, refunded
	Input        json.RawMessage `json:"input"`
	CreatedAt    string          `json:"created_at"`
	StartedAt    *string         `json:"started_at"`  // null until the job runs
	FinishedAt   *string         `json:"finished_at"` // null until the job ends
	Progress     float64         `json:"progress"`
	Outputs      []Output        `json:"outputs"`
	Error        *JobError       `json:"error"` // null unless the job failed or expired
	// FilteredOutputs and CreditsCharged appear on a job that succeeded with some outputs
	// filtered out: how many, and what it was charged (the rest of Credits was refunded).
	FilteredOutputs int    `json:"filtered_outputs,omitempty"`
	CreditsCharged  *int64 `json:"credits_charged,omitempty"`
	// QueuePosition appears while the job waits for a slot behind a scenario's concurrency
	// limit: its place in the line, from 1.
	QueuePosition int `json:"queue_position,omitempty"`
}

// Output is one file a succeeded job made, downloadable at URL until it expires.
type Output struct {
	Type        string  `json:"type"` // image, video, audio
	URL         string  `json:"url"`
	ContentType string  `json:"content_type"`
	Width       int     `json:"width,omitempty"`
	Height      int     `json:"height,omitempty"`
	Duration    float64 `json:"duration_seconds,omitempty"`
	SizeBytes   int64   `json:"size_bytes"`
	// ExpiresAt is when the file stops being served, whatever link names it.
	ExpiresAt string `json:"expires_at"`
	// URLExpiresAt appears when the scenario signs links (download.url_ttl): when this URL stops
	// working. Reading the job again gives a fresh one.
	URLExpiresAt string `json:"url_expires_at,omitempty"`
}

// JobError is why a job failed or expired.
type JobError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// JournalEntry is one /v1 request as the journal recorded it once answered
// (GET /_emulator/requests).
type JournalEntry struct {
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"` // when the answer was written, on the emulator's clock
	// ReceivedAt is when the request arrived, on the emulator's clock: the report orders and
	// times what the client did by it.
	ReceivedAt     time.Time `json:"received_at,omitzero"`
	Method         string    `json:"method"`
	Path           string    `json:"path"`
	Query          string    `json:"query"` // raw, without "?"
	Status         int       `json:"status"`
	Code           string    `json:"code,omitempty"` // the problem code of an error answer
	Account        string    `json:"account,omitempty"`
	Model          string    `json:"model,omitempty"`
	JobID          string    `json:"job_id,omitempty"`
	RequestID      string    `json:"request_id"`
	IdempotencyKey string    `json:"idempotency_key,omitempty"`
	Fault          string    `json:"fault,omitempty"` // the id of the fault rule that answered, if any
	// RetryAfter is the Retry-After the answer carried, in seconds (429 and 503 answers), and
	// RetryAt the instant it names on the emulator's clock: the HTTP-date itself when it was
	// sent as one.
	RetryAfter int       `json:"retry_after,omitempty"`
	RetryAt    time.Time `json:"retry_at,omitzero"`
	// FaultKind is the action of the injected fault (error, delay, malformed, ...).
	FaultKind string `json:"fault_kind,omitempty"`
	// ClientLeft says the client hung up before its answer was written (its own timeout, say).
	ClientLeft bool `json:"client_left,omitempty"`
	// The facts the emulator decided about the request, which the report judges: the quote it
	// made or named and that quote's expires_at, the status of the job it made or showed, and a
	// digest of a generation's canonical input (two generations with the same model and the
	// same input, in any key order or number spelling, have the same digest).
	QuoteID        string    `json:"quote_id,omitempty"`
	QuoteExpiresAt time.Time `json:"quote_expires_at,omitzero"`
	JobStatus      string    `json:"job_status,omitempty"`
	InputDigest    string    `json:"input_digest,omitempty"`
	DurationMS     float64   `json:"duration_ms"`
	// RequestBody and ResponseBody are the bodies as sent, secrets redacted: the JSON itself
	// when it was valid JSON of at most 16 KiB, else a JSON string of the text, cut at 16 KiB
	// and ending "…(truncated)".
	RequestBody  json.RawMessage `json:"request_body,omitempty"`
	ResponseBody json.RawMessage `json:"response_body,omitempty"`
	// RequestHeaders are the request's headers under their canonical names, several values
	// joined with ", ": at most 32, each value cut like the text fields, and Authorization and
	// X-Emulator-Admin-Token shown as "[redacted]".
	RequestHeaders map[string]string `json:"request_headers,omitempty"`
	Tenant         string            `json:"tenant"`
	// Wall is when the request arrived in real time, kept only while the tenant's clock skips
	// (its own time jumps whenever a request waits on a job), so the report can space polls
	// in real time then. It is not part of the journal's JSON.
	Wall time.Time `json:"-"`
	// Conn names the connection the request came on (the client's address and port), so the
	// report can tell a request sent after its client read an answer on the same connection
	// from one sent in parallel on another. It is not part of the journal's JSON.
	Conn string `json:"-"`
}

// Report severities, from the most to the least serious.
const (
	SeverityError   = "error"   // costs money or data in production
	SeverityWarning = "warning" // wasteful or fragile, and noticed by a real service
	SeverityInfo    = "info"    // worth a look
)

// Report is the body of GET /_emulator/report: what the emulator judged of the client's
// behaviour from the journal, for one tenant or for the whole run.
type Report struct {
	Scope    string         `json:"scope"`            // tenant or run
	Tenant   string         `json:"tenant,omitempty"` // the tenant judged, for scope tenant
	Examined int            `json:"examined"`         // journal entries and downloads examined
	Findings []Finding      `json:"findings"`         // oldest first; at most 1,000 for scope run
	Counts   map[string]int `json:"counts"`           // findings per rule id, exact even where Findings is cut
	Rules    []Rule         `json:"rules"`            // every rule the emulator judges by
}

// Finding is one thing a client did that a rule calls wrong.
type Finding struct {
	Rule     string   `json:"rule"`
	Severity string   `json:"severity"`
	Reason   string   `json:"reason"`           // one line
	Entries  []uint64 `json:"entries"`          // the journal seqs that show it, oldest first
	Tenant   string   `json:"tenant,omitempty"` // whose journal the seqs are in, for scope run
}

// Rule is one rule the report judges by.
type Rule struct {
	ID       string `json:"id"`
	Severity string `json:"severity"`
	Title    string `json:"title"`
}

// Balance is an account's credits (GET /_emulator/accounts, PUT /_emulator/accounts/{id}).
type Balance struct {
	Account   string `json:"account"`
	Available int64  `json:"available"` // what the account can still spend
	Held      int64  `json:"held"`      // held by jobs that have not ended
	Charged   int64  `json:"charged"`   // spent on jobs that succeeded
	// Refunded counts the held credits that went back to available (failed, canceled and
	// expired jobs); it is a running total, not a fourth place credits sit.
	Refunded int64 `json:"refunded"`
}

// Total is what the account started with (or was last set to, plus what moved since).
func (b Balance) Total() int64 { return b.Available + b.Held + b.Charged }

// Health is the body of GET /_emulator/health.
type Health struct {
	Clock    string `json:"clock"` // real, manual or skip
	Control  bool   `json:"control"`
	Models   int    `json:"models"`
	Now      string `json:"now"`
	Scenario string `json:"scenario"`
	Seeded   bool   `json:"seeded"`
	Status   string `json:"status"`
	Tenant   string `json:"tenant"`
	Version  string `json:"version"`
	// Waiting counts the tenant's wait=true requests blocked on a job, so a test can advance
	// the manual clock only once its wait has begun.
	Waiting int64 `json:"waiting"`
}

// Waiting is the body of GET /_emulator/waiting: how many wait=true generations are waiting
// for their job, and whether that reached the count asked for before the timeout.
type Waiting struct {
	Reached bool  `json:"reached"`
	Waiting int64 `json:"waiting"`
}

// Clock is the body of GET and POST /_emulator/clock.
type Clock struct {
	Mode    string   `json:"mode"`     // real, manual or skip
	NextDue *NextDue `json:"next_due"` // null when no job is queued or running
	Now     string   `json:"now"`
}

// NextDue is the next job transition on the clock.
type NextDue struct {
	At     string `json:"at"`
	JobID  string `json:"job_id"`
	Status string `json:"status"` // the status the job leaves then
}

// ScenarioChange is the body of PUT /_emulator/scenario: an embedded scenario's Name, or a
// whole Scenario document in JSON (a scenario file's YAML, converted).
type ScenarioChange struct {
	Name     string          `json:"name,omitempty"`
	Scenario json.RawMessage `json:"scenario,omitempty"`
}

// ResetResult is the body of POST /_emulator/reset.
type ResetResult struct {
	Now    string `json:"now"` // the clock, started over
	Status string `json:"status"`
	Tenant string `json:"tenant"`
}

// JobFailure is the body of POST /_emulator/jobs/{id}/fail; empty fields take the emulator's
// usual code (generation_failed) and message.
type JobFailure struct {
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// CreditsChange is the body of PUT /_emulator/accounts/{id}.
type CreditsChange struct {
	Credits int64 `json:"credits"`
}

// Page is a page of a paged list (models, jobs, the journal): the items of [Offset,
// Offset+Limit), how many match in all, and whether more follow.
type Page[T any] struct {
	Data    []T  `json:"data"`
	Total   int  `json:"total"`
	Limit   int  `json:"limit"`
	Offset  int  `json:"offset"`
	HasMore bool `json:"has_more"`
}

// List is a list given whole (categories, faults, accounts, tenants): its items alone.
type List[T any] struct {
	Data []T `json:"data"`
}

// Category is a task category with the number of ready models in it (GET
// /v1/models/categories).
type Category struct {
	ID         string `json:"id"`
	OutputType string `json:"output_type"`
	ModelCount int    `json:"model_count"`
}

// Tenant is a live tenant as GET /_emulator/tenants lists it.
type Tenant struct {
	Name       string      `json:"name"`
	CreatedAt  string      `json:"created_at"`
	LastUsedAt string      `json:"last_used_at"`
	Jobs       int         `json:"jobs"`
	Clock      TenantClock `json:"clock"`
}

// TenantClock is a tenant's clock: its mode (real, manual or skip) and its time.
type TenantClock struct {
	Mode string `json:"mode"`
	Now  string `json:"now"`
}

// ClockChange is the body of POST /_emulator/clock: a Mode, one of Advance or Set, or a Mode
// with one of them (the mode changes first).
type ClockChange struct {
	Mode    string `json:"mode,omitempty"`    // real, manual or skip
	Advance string `json:"advance,omitempty"` // a duration such as 90s or 5m
	Set     string `json:"set,omitempty"`     // an RFC 3339 time
}

// Fault actions: what a request a fault matches gets instead of its answer. A new action is
// added here, to FaultActions, to the traffic code's switch and to docs/openapi.json; a test
// names each of those that lacks it.
const (
	FaultError     = "error"     // Status with a problem body of Code (the default when Status is set)
	FaultReset     = "reset"     // the connection drops without an answer
	FaultMalformed = "malformed" // 200 with a body that is not valid JSON
	FaultTruncated = "truncated" // a body shorter than its Content-Length, then the connection closes
	FaultDelay     = "delay"     // the answer comes normally, Delay later (the default when only Delay is set)
	FaultGateway   = "gateway"   // 502 (or Status 504) as a proxy answers: an HTML page, no X-Request-Id, no problem body
	FaultDownload  = "download"  // the answer comes normally, its body shaped by Download (the default when Download is set)
)

// FaultActions lists the fault actions in the order the documentation gives them.
var FaultActions = []string{FaultError, FaultReset, FaultMalformed, FaultTruncated, FaultDelay, FaultGateway, FaultDownload}

// Retry-After formats: seconds (the default) or an HTTP-date (RFC 9110 §10.2.3).
const (
	RetryAfterSeconds = "seconds"
	RetryAfterDate    = "date"
)

// Download shapes how a body goes out; every field is optional, zero does nothing. A scenario's
// download block and a fault's download member are this shape.
type Download struct {
	BytesPerSecond int      `json:"bytes_per_second,omitempty" yaml:"bytes_per_second"` // throttle the body to this rate
	ChunkBytes     int      `json:"chunk_bytes,omitempty" yaml:"chunk_bytes"`           // write it in chunks of this size (default a tenth of a second's bytes, or 16 KiB)
	Pause          Duration `json:"pause,omitempty" yaml:"pause"`                       // wait this long between chunks, at most 10s
	CutAfter       int      `json:"cut_after,omitempty" yaml:"cut_after"`               // close the connection after this many bytes of body
	LengthDelta    int      `json:"length_delta,omitempty" yaml:"length_delta"`         // Content-Length says this many bytes more (or fewer) than are sent
	// URLTTL signs output links, each valid this long from the job read that gave it (a
	// scenario's download only; a fault shapes a body, not a link).
	URLTTL Duration `json:"url_ttl,omitempty" yaml:"url_ttl"`
	// RejectAuthorization answers a signed link fetched with an Authorization header 400, as S3
	// does; without it the header is ignored, as MinIO in development does.
	RejectAuthorization bool `json:"reject_authorization,omitempty" yaml:"reject_authorization"`
}

// Shapes reports whether the download changes how a body goes out, beyond how links are signed.
func (d Download) Shapes() bool {
	return d.BytesPerSecond != 0 || d.ChunkBytes != 0 || d.Pause != 0 || d.CutAfter != 0 || d.LengthDelta != 0
}

// FaultMatch selects the requests a fault, rate limit or latency rule applies to; every field
// given must match. Path and Model are globs: * within a segment, ** across.
type FaultMatch struct {
	Method     string `json:"method,omitempty" yaml:"method"`
	Path       string `json:"path,omitempty" yaml:"path"`
	Model      string `json:"model,omitempty" yaml:"model"`
	Category   string `json:"category,omitempty" yaml:"category"`
	OutputType string `json:"output_type,omitempty" yaml:"output_type"`
}

// Fault is a fault rule in force, as the control API lists it.
type Fault struct {
	ID     string `json:"id"`
	Source string `json:"source"` // api (added by POST) or scenario
	Perturbation
	Remaining int `json:"remaining"` // matching requests it still answers; 0 means no limit
	Fired     int `json:"fired"`
	// Seen is how many requests (or jobs) an ordinal (At) has counted so far.
	Seen int `json:"seen,omitempty"`
}

// Duration is a time.Duration sent as text such as "250ms" or "1m30s".
type Duration time.Duration

// MarshalJSON writes the duration as time.Duration.String does. That text is digits, letters,
// '.', '-' and 'µ', none of which JSON escapes, so it is quoted as it is: a snapshot holds
// tens of thousands of durations.
func (d Duration) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 24)
	b = append(b, '"')
	b = append(b, time.Duration(d).String()...)
	return append(b, '"'), nil
}

// UnmarshalText reads a duration written as time.ParseDuration takes it; a YAML scenario file
// gives durations this way.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	*d = Duration(v)
	return err
}

// UnmarshalJSON reads a duration written as time.ParseDuration takes it.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"250ms\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// HomeIndex is the home page (GET /) as JSON, for a script that asks for it.
type HomeIndex struct {
	Name    string     `json:"name"`
	Version string     `json:"version"`
	Docs    string     `json:"docs"`
	Links   []HomeLink `json:"links"`
}

// HomeLink is one place the home page points to.
type HomeLink struct {
	Rel   string `json:"rel"`
	Href  string `json:"href"`
	Title string `json:"title"`
	Note  string `json:"note,omitempty"`
}

// RequestPattern describes journal entries (POST /_emulator/verify, POST
// /_emulator/expected-errors, and the query of GET /_emulator/requests); every field given must
// match, and the empty pattern matches every entry. Path and Model are globs: * for any run of
// characters other than /, ** for any run at all; Headers are compared by canonical name and
// exact value; Body matches when every member it has is in the recorded body with an equal JSON
// value (objects recursively); Pointers maps a JSON Pointer into the recorded body to the value
// that must be there. Headers, pointers and body members together are at most 64.
type RequestPattern struct {
	Method   string            `json:"method,omitempty"`
	Path     string            `json:"path,omitempty"`
	Status   int               `json:"status,omitempty"`
	Code     string            `json:"code,omitempty"`
	Account  string            `json:"account,omitempty"` // the key's account, exactly
	Model    string            `json:"model,omitempty"`   // the model, as a glob
	Headers  map[string]string `json:"headers,omitempty"`
	Body     map[string]any    `json:"body,omitempty"`
	Pointers map[string]any    `json:"pointers,omitempty"`
}

// Verification is the answer of POST /_emulator/verify: how many journal entries match, the
// first 100 of their seqs (oldest first) and, when none match, the closest entries.
type Verification struct {
	Count   int      `json:"count"`
	Matches []uint64 `json:"matches"`
	// NearMisses are at most 5 entries, those that missed the fewest fields first, then the
	// newest; only when Count is 0.
	NearMisses []NearMiss `json:"near_misses,omitempty"`
}

// NearMiss is a journal entry that did not match a pattern, and what it missed.
type NearMiss struct {
	Entry  JournalEntry `json:"entry"`
	Missed []Miss       `json:"missed"`
}

// Miss is one part of a pattern an entry did not match: Field is a JSON Pointer into the
// pattern, Want the pattern's value and Got the entry's (null when it has none).
type Miss struct {
	Field string `json:"field"`
	Want  any    `json:"want"`
	Got   any    `json:"got"`
}

// ExpectedErrors is the list of GET and POST /_emulator/expected-errors.
type ExpectedErrors struct {
	Data []RequestPattern `json:"data"`
}

// UnexpectedError is an error answer no expected pattern covers, with its problem's detail.
type UnexpectedError struct {
	Entry  JournalEntry `json:"entry"`
	Detail string       `json:"detail"`
}

// UnexpectedErrors is the answer of GET /_emulator/unexpected: a page of them, oldest first, in
// the envelope every paged list has.
type UnexpectedErrors = Page[UnexpectedError]

// Coverage is the answer of GET /_emulator/coverage: every case of the contract with how often
// it happened, in the tenant (Scope "tenant") or in every tenant since the emulator started
// (Scope "run").
type Coverage struct {
	Scope     string         `json:"scope"`
	Tenant    string         `json:"tenant,omitempty"`
	Exercised int            `json:"exercised"` // cases with a count above 0
	Total     int            `json:"total"`
	Cases     []CoverageCase `json:"cases"`
	// RequiredMissing are the cases that match a require glob and never happened.
	RequiredMissing []string `json:"required_missing"`
}

// CoverageCase is one case and how many times it happened. Group is errors, jobs, flows or
// faults.
type CoverageCase struct {
	ID    string `json:"id"`
	Group string `json:"group"`
	Count int64  `json:"count"`
}
