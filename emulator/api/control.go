package api

import "encoding/xml"

// Scenario is the body of GET and PUT /_emulator/scenario: the tenant's scenario in force,
// counted. Its members go out in alphabetical order, as they always have.
type Scenario struct {
	// Available lists the embedded scenarios by name.
	Available []string `json:"available"`
	// Concurrency is how many concurrency rules the scenario has; absent when it has none.
	Concurrency int    `json:"concurrency,omitempty"`
	Description string `json:"description"`
	// Evolution says which forward-compatibility kinds the scenario turns on; absent when none.
	Evolution *Evolution `json:"evolution,omitempty"`
	// Faults is how many of the scenario's faults are still in force.
	Faults    int    `json:"faults"`
	Latency   int    `json:"latency"`
	Name      string `json:"name"`
	Overrides int    `json:"overrides"`
	// RateLimits is how many rate limits the scenario has.
	RateLimits int `json:"rate_limits"`
	// Source is where the scenario came from: an embedded file's path, a user's file, or
	// "request body" for one sent inline.
	Source string `json:"source"`
}

// Evolution is a scenario's forward-compatibility mode: which kinds of what a later version of
// the API might add its answers carry.
type Evolution struct {
	// Members adds an undocumented member to every JSON object a /v1 answer holds.
	Members bool `json:"members" yaml:"members"`
	// Headers adds an undocumented header to every /v1 answer.
	Headers bool `json:"headers" yaml:"headers"`
	// Status passes running jobs through an undocumented status first.
	Status bool `json:"status" yaml:"status"`
	// OutputType lists a model of an undocumented output type.
	OutputType bool `json:"output_type" yaml:"output_type"`
}

// StreamEvent is the data of an event of GET /_emulator/events: which parts of the tenant
// changed (jobs, journal, clock, scenario, accounts, webhooks), so a reader fetches only those.
// Its members go out in alphabetical order, as they always have.
type StreamEvent struct {
	Changed []string `json:"changed"`
	Mode    string   `json:"mode"`     // real, manual or skip
	NextDue *NextDue `json:"next_due"` // null when no job is queued or running
	Now     string   `json:"now"`
	Tenant  string   `json:"tenant"`
	// Version is the tenant's change count; it starts again at a reset.
	Version uint64 `json:"version"`
}

// ControlJob is a job as the control API shows it (GET /_emulator/jobs and
// /_emulator/jobs/{id}): the /v1 job with its account, and in the single-job view its plan.
type ControlJob struct {
	Job
	Account string `json:"account"`
	// OutputType is the model's kind of output (image, video, audio), so a list can show it.
	OutputType string   `json:"output_type,omitempty"`
	Plan       *JobPlan `json:"plan,omitempty"`
	// MediaInputs are the job's media inputs as its generation found them, with inputs
	// fetched (GET /_emulator/jobs/{id} alone); absent when inputs were not fetched.
	MediaInputs []MediaInput `json:"media_inputs,omitempty"`
	// ModelPhase is "deprecated" or "retired" when the scenario's lifecycle says so now.
	ModelPhase string `json:"model_phase,omitempty"`
}

// JobPlan is the course a job was given when it was created, durations as text ("1.5s").
type JobPlan struct {
	Queue        string     `json:"queue"`
	Run          string     `json:"run"`
	QueueTimeout *string    `json:"queue_timeout"` // null: no limit
	Ending       PlanEnding `json:"ending"`
	// DecidedBy is "directive" when the request forced the outcome (Directive names it), or
	// "draw" when the scenario's rates decided it.
	DecidedBy string `json:"decided_by"`
	Directive string `json:"directive,omitempty"`
	// Perturbation is the id of the adversity plan's perturbation that forced the outcome.
	Perturbation string `json:"perturbation,omitempty"`
	// EndedByControl is set when the control API forced the job's end, whatever the plan said.
	EndedByControl bool `json:"ended_by_control"`
	// Filtered is how many outputs the plan filters out (a partial result).
	Filtered int `json:"filtered,omitempty"`
}

// PlanEnding is how a job's plan has it end, unless it is canceled or the control API ends it.
type PlanEnding struct {
	Status  string `json:"status"` // succeeded, failed or expired
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	// At is how far through the run a failure while running happens; zero when it happens as
	// the run starts or in the queue.
	At      float64 `json:"at,omitempty"`
	InQueue bool    `json:"in_queue,omitempty"`
}

// StorageError is the XML body a refused output link answers with, as the storage behind
// real output links (S3) sends it: not a Problem, since storage is not the API. Expires and
// ServerTime are sent when the link has expired.
type StorageError struct {
	XMLName    xml.Name `xml:"Error"`
	Code       string   `xml:"Code"` // AccessDenied, SignatureDoesNotMatch or InvalidArgument
	Message    string   `xml:"Message"`
	Expires    string   `xml:"Expires,omitempty"`
	ServerTime string   `xml:"ServerTime,omitempty"`
	RequestID  string   `xml:"RequestId"`
}
