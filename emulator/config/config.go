// Package config declares the emulator's settings once: emulator.Config is this package's
// Settings under another name, the command line's flags default to what WithDefaults fills in,
// and the core reads the settings as they were written, with no copy in between.
package config

import (
	"io/fs"
	"log/slog"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/fixtures"
)

// Settings are everything the emulator is built from, as a Go test or the command line chooses
// them. The zero value serves the embedded default catalog on a real clock with random ids;
// WithDefaults says what every setting left out becomes.
type Settings struct {
	// CatalogFile is a catalog YAML path; empty means the embedded default.
	CatalogFile string
	// Catalog, when set, is the catalog document itself (CatalogFile is then ignored).
	Catalog *Source
	// Scenario names an embedded scenario or a scenario file path (default DefaultScenario).
	Scenario string
	// ManualClock makes time stand still until the control API advances it.
	ManualClock bool
	// SkipClock makes time stand still as ManualClock does, but a request that waits on a job
	// (a wait=true generation, a poll of a job not yet terminal) moves its tenant's clock to
	// the job's next transition at once. It wins over ManualClock.
	SkipClock bool
	// Start is where a manual or skipping clock starts (default ManualStart).
	Start time.Time
	// Seeded makes ids, random draws and media bytes reproducible from Seed.
	Seeded bool
	// Seed is the seed used when Seeded is set.
	Seed int64
	// MaxWait bounds how long POST /v1/generate?wait=true waits (default DefaultMaxWait).
	MaxWait time.Duration
	// QuoteTTL is how long a quote lives unless the scenario says otherwise (default
	// DefaultQuoteTTL).
	QuoteTTL time.Duration
	// OutputTTL is how long output files stay downloadable after a job finishes unless the
	// scenario says otherwise (default DefaultOutputTTL).
	OutputTTL time.Duration
	// JobRetention is how long finished jobs are kept before they are dropped (default
	// DefaultJobRetention); never less than OutputTTL, since a job outlives its outputs.
	JobRetention time.Duration
	// AdminToken, when set, is required as X-Emulator-Admin-Token by the control API.
	AdminToken string
	// ControlDisabled turns the control API off (health excepted), as on a non-loopback
	// address without an admin token.
	ControlDisabled bool
	// MaxBodyBytes limits request bodies (default DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// MaxSnapshotBytes limits the body of PUT /_emulator/snapshot and a --state file (default
	// the MemoryBudget): a tenant holds at most the budget, and its snapshot encodes in less
	// than the budget counts for it, so whatever a tenant holds, its snapshot is read back.
	MaxSnapshotBytes int64
	// MaxJobs bounds the jobs each tenant retains (default DefaultMaxJobs); past it the oldest
	// finished job is dropped and answers 404, as after JobRetention.
	MaxJobs int
	// MaxTenants bounds the named tenants alive at once (default DefaultMaxTenants); past it a
	// request for a new tenant answers 429 too_many_tenants.
	MaxTenants int
	// TenantIdle is how long a named tenant lives without requests, in real time (default
	// DefaultTenantIdle).
	TenantIdle time.Duration
	// MemoryBudget bounds the bytes all tenants' quotes, jobs, idempotency keys and journals
	// hold together (default DefaultMemoryBudget); past it a change that would add more
	// answers 503 memory_budget_exhausted, and nothing held is dropped for it.
	MemoryBudget int64
	// CORSOrigins are the origins browsers may call /v1 and /files from: "*" means any
	// (answered "*"), "none" turns CORS off, else origins such as http://localhost:5173
	// (default DefaultCORSOrigin).
	CORSOrigins []string
	// Media holds the video fixtures outputs are cut from (default: the embedded ones).
	Media fs.FS
	// Logger receives one line per request and every server fault (default: discarded).
	Logger *slog.Logger
	// WebhookURL, when set, is the run's webhook: every tenant's job events are POSTed there,
	// signed with WebhookSecret, until a scenario or PUT /_emulator/webhooks sets another.
	WebhookURL string
	// WebhookSecret ("whsec_" and base64) signs the run's webhook and the scenarios'.
	WebhookSecret string
	// WebhookEvents are the events the run's webhook sends (empty means a job's end, as for
	// a webhook set through the control API).
	WebhookEvents []string
	// WebhookAllow are the HOST[:PORT] beyond loopback that deliveries may reach.
	WebhookAllow []string
	// Inputs is "fetch" to have media inputs fetched under a hosted service's rules, with
	// POST /v1/uploads answering (docs/inputs.md); "" or "off" leaves them unread, as URIs
	// validated and never fetched. A scenario's inputs: overrides it.
	Inputs string
	// InputsAllow are the HOST[:PORT] that inputs are really fetched from (a test's own file
	// server); every other URL outside the emulator's own stands in as a seeded input.
	InputsAllow []string
}

// Source is a named document, such as a catalog read from anywhere: problems name it.
type Source struct {
	Name string
	Data []byte
}

// ManualStart is where a manual or skipping clock starts unless Settings.Start says otherwise:
// a fixed instant, so seeded runs produce the same timestamps.
var ManualStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// The defaults of the settings a Settings leaves at zero.
const (
	DefaultScenario     = "default"
	DefaultMaxWait      = 180 * time.Second
	DefaultQuoteTTL     = 10 * time.Minute
	DefaultOutputTTL    = time.Hour
	DefaultJobRetention = 24 * time.Hour
	DefaultMaxBodyBytes = 1 << 20
	// DefaultMaxSnapshotBytes is the snapshot bound under the default memory budget; a run
	// given another budget has that one as its bound (see Settings.MaxSnapshotBytes).
	DefaultMaxSnapshotBytes = DefaultMemoryBudget
	DefaultMaxJobs          = jobs.DefaultMaxJobs // the engine's own bound for a zero Options
	DefaultMaxTenants       = 1000
	DefaultTenantIdle       = time.Hour
	// DefaultMemoryBudget is 1 GiB of counted bytes. Resident memory runs about 2.3 times what
	// is counted (the stores' own overheads beyond their estimates, and the garbage
	// collector's headroom), so about 2.5 GB, which a CI runner with 7 GB holds beside the
	// tests it runs.
	DefaultMemoryBudget = 1 << 30
	DefaultCORSOrigin   = "*"
)

// The defaults of emulator.ServeLimits, the bounds of the connections Serve accepts: its
// WithDefaults applies them.
const (
	DefaultBodyTimeout  = 30 * time.Second
	DefaultIdleTimeout  = 60 * time.Second
	DefaultDrainTimeout = 60 * time.Second
)

// WithDefaults returns the settings with every one left out filled in: the one place the
// emulator's defaults are applied. A setting at zero or below is left out; JobRetention is
// raised to OutputTTL when shorter.
func (s Settings) WithDefaults() Settings {
	if s.Scenario == "" {
		s.Scenario = DefaultScenario
	}
	if s.Start.IsZero() {
		s.Start = ManualStart
	}
	orDefault(&s.MaxWait, DefaultMaxWait)
	orDefault(&s.QuoteTTL, DefaultQuoteTTL)
	orDefault(&s.OutputTTL, DefaultOutputTTL)
	orDefault(&s.JobRetention, DefaultJobRetention)
	s.JobRetention = max(s.JobRetention, s.OutputTTL)
	orDefault(&s.MaxBodyBytes, DefaultMaxBodyBytes)
	orDefault(&s.MaxJobs, DefaultMaxJobs)
	orDefault(&s.MaxTenants, DefaultMaxTenants)
	orDefault(&s.TenantIdle, DefaultTenantIdle)
	orDefault(&s.MemoryBudget, DefaultMemoryBudget)
	// After the budget, which it follows.
	orDefault(&s.MaxSnapshotBytes, s.MemoryBudget)
	if len(s.CORSOrigins) == 0 {
		s.CORSOrigins = []string{DefaultCORSOrigin}
	}
	if s.Media == nil {
		s.Media = fixtures.FS
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	return s
}

// orDefault sets a setting left at zero (or below) to its default.
func orDefault[T int | int64 | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}
