package api

import "encoding/json"

// Perturbation is one piece of adversity: where it strikes and what it does. A scenario file's
// plan, PUT /_emulator/plan and POST /_emulator/faults all take this one shape.
//
// Where: At names one request by its route and the tenant's ordinal of it
// ("POST /v1/generate#1", "GET /v1/jobs/{id}#2", "GET /files/**#1") or one job by the order
// the tenant made it ("job#2"); or Match selects requests, each one hit (or Count of them, or
// each with Probability). A perturbation that only Sets knobs strikes nowhere.
//
// What: a fault (Action and its members, Advance), a job Outcome, or knobs (Set).
type Perturbation struct {
	// At strikes exactly one request or job; it stands instead of Match, Count and Probability.
	At    string     `json:"at,omitempty" yaml:"at"`
	Match FaultMatch `json:"match,omitzero" yaml:"match"`

	Action string `json:"action,omitempty" yaml:"action"` // one of FaultActions; empty picks error, download or delay
	Status int    `json:"status,omitempty" yaml:"status"` // for FaultError: 400 to 599
	// Code is the problem code of an error body, or the failure code of an outcome fail.
	Code       string   `json:"code,omitempty" yaml:"code"`
	Delay      Duration `json:"delay,omitempty" yaml:"delay"` // real time before answering, at most 5 minutes, whatever the clock
	RetryAfter int      `json:"retry_after,omitempty" yaml:"retry_after"`
	// RetryAfterFormat is RetryAfterSeconds (the default) or RetryAfterDate.
	RetryAfterFormat string `json:"retry_after_format,omitempty" yaml:"retry_after_format"`
	// Download shapes the body, for FaultDownload.
	Download *Download `json:"download,omitempty" yaml:"download"`
	// After lets the service act first (the job made, the credits held) and then loses its
	// answer as Action says: the write that commits before its response is lost.
	After bool `json:"after,omitempty" yaml:"after"`
	// Advance moves the tenant's clock this far while the request is in flight, before the
	// service acts: time a slow network or a paused client lets pass.
	Advance Duration `json:"advance,omitempty" yaml:"advance"`

	// Outcome forces how the job a struck generation makes ends: one of Outcomes.
	Outcome string `json:"outcome,omitempty" yaml:"outcome"`

	// Set turns knobs for the tenant while the perturbation is in force.
	Set *Knobs `json:"set,omitempty" yaml:"set"`

	// Count is how many matching requests the fault answers before it stops; 0 means all.
	Count int `json:"count,omitempty" yaml:"count"`
	// Probability is the chance a matching request gets the fault; nil means every one.
	Probability *float64 `json:"probability,omitempty" yaml:"probability"`
}

// Outcomes a perturbation (or an X-Emulator-Outcome header) can force on a generation.
var Outcomes = []string{"succeed", "fail", "content_policy", "expire", "slow", "refuse", "partial"}

// Knobs are the settings a plan may turn for a tenant; zero leaves one as the scenario has it.
type Knobs struct {
	QuoteTTL Duration `json:"quote_ttl,omitempty" yaml:"quote_ttl"` // how long a quote lives
	URLTTL   Duration `json:"url_ttl,omitempty" yaml:"url_ttl"`     // sign output links, each valid this long
	// Concurrency runs at most this many jobs of an account at once; the rest wait in line.
	Concurrency int `json:"concurrency,omitempty" yaml:"concurrency"`
	// Latency delays every /v1 answer this long in real time.
	Latency   Duration   `json:"latency,omitempty" yaml:"latency"`
	Evolution *Evolution `json:"evolution,omitempty" yaml:"evolution"` // forward-compatibility kinds on
}

// Plan is an adversity plan: the body of PUT /_emulator/plan, a scenario file's plan, and what
// explore draws, shrinks and replays.
type Plan struct {
	Perturbations []Perturbation `json:"perturbations"`
}

// PlanInForce is the answer of GET and PUT /_emulator/plan: every perturbation in force, the
// scenario's and the control API's, in the order they are tried.
type PlanInForce struct {
	Perturbations []Fault `json:"perturbations"`
}

// Verdict is the answer of GET /_emulator/verdict: whether a run of a client in the tenant
// failed, and why, judged by the report, the ledger and (when given) the command's exit status.
type Verdict struct {
	Failed   bool             `json:"failed"`
	Failures []VerdictFailure `json:"failures"`
	// Reached lists the coverage cases the tenant's traffic reached, for explore to favour
	// the others.
	Reached []string `json:"reached"`
	// Routes counts the tenant's /v1 and file requests by route ("GET /v1/jobs/{id}"), so a
	// plan strikes ordinals the client reaches.
	Routes map[string]int `json:"routes"`
}

// Verdict failure kinds.
const (
	FailureExit      = "exit"      // the command exited non-zero
	FailureFinding   = "finding"   // the report has an error-severity finding
	FailureInvariant = "invariant" // a ledger invariant broke
)

// VerdictFailure is one reason a run failed: a finding of the report (Rule its rule), a
// ledger invariant (Rule nothing-held, one-charge-per-generation or charged-unseen) or the
// command's exit status; Entries are the journal sequence numbers it cites.
type VerdictFailure struct {
	Kind     string  `json:"kind"`
	Rule     string  `json:"rule,omitempty"`
	Severity string  `json:"severity,omitempty"`
	Reason   string  `json:"reason"`
	Entries  []int64 `json:"entries,omitempty"`
}

// Ledger invariants a run of explore must keep.
const (
	InvariantNothingHeld   = "nothing-held"              // no credits held once the run ends
	InvariantOneCharge     = "one-charge-per-generation" // at most one charged job per intended generation
	InvariantChargedUnseen = "charged-unseen"            // every charged job was seen succeeded by the client
)

// DrawRequest is the body of POST /_emulator/explore/draw: the seed and run number a plan is
// drawn from, whether terminal outcomes may be drawn, and what earlier runs reached.
type DrawRequest struct {
	Seed     int64          `json:"seed"`
	Run      int            `json:"run"`
	Terminal bool           `json:"terminal,omitempty"`
	Reached  []string       `json:"reached,omitempty"`
	Routes   map[string]int `json:"routes,omitempty"`
}

// Drawn is the answer of POST /_emulator/explore/draw: the plan and its one-line log.
type Drawn struct {
	Plan Plan   `json:"plan"`
	Log  string `json:"log"`
}

// ShrinkRequest is the body of POST /_emulator/explore/shrink: a plan that failed.
type ShrinkRequest struct {
	Plan Plan `json:"plan"`
}

// Shrunk is the answer of POST /_emulator/explore/shrink: the plans one step smaller than the
// one sent, the most promising first; empty when it cannot shrink.
type Shrunk struct {
	Candidates []Plan `json:"candidates"`
}

// BundleFormat names the format of an explore bundle.
const BundleFormat = "mediagen-explore-bundle/1"

// Bundle is what explore writes for a failure, and GET /_emulator/bundle answers for a tenant:
// enough to replay the run (Plan, Seed) and to read what happened (Verdict, Report, Snapshot).
type Bundle struct {
	Format   string          `json:"format"`
	Seed     int64           `json:"seed"`
	Run      int             `json:"run,omitempty"`
	Command  []string        `json:"command,omitempty"`
	Plan     Plan            `json:"plan"`
	Verdict  Verdict         `json:"verdict"`
	Report   Report          `json:"report"`
	Snapshot json.RawMessage `json:"snapshot"`
}
