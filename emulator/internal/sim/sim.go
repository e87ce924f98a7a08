// Package sim is the emulator's application core: the rules of quotes, generations and jobs, the
// simulated world they change, and the tenants that each own a world. It knows nothing of HTTP:
// the transport decodes a request, makes one call here, and encodes the answer or the coded
// problem (package problem) that comes back.
package sim

import (
	"io/fs"
	"log/slog"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/budget"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/media"
	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
	"github.com/mediagen/mediagen-emulator/emulator/internal/webhooks"
)

// Config is what every world is built from. The catalog, scenarios and media fixtures are shared
// by every tenant; everything a world changes is its own.
type Config struct {
	// Catalog is the models, products, keys and accounts served.
	Catalog *catalog.Catalog
	// Scenarios are the named scenarios a world may switch to.
	Scenarios map[string]*scenario.Scenario
	// Scenario is the scenario in force at the start and after a reset.
	Scenario *scenario.Scenario
	// Media holds the video fixtures outputs are cut from.
	Media fs.FS
	// ManualClock makes each world's time stand still until advanced.
	ManualClock bool
	// SkipClock makes each world's time stand still, but move to a job's next transition when
	// a request waits on the job (see World.SkipAhead); it wins over ManualClock.
	SkipClock bool
	// Start is where a manual clock starts.
	Start time.Time
	// Seeded makes ids, draws and media reproducible from Seed.
	Seeded bool
	// Seed is the seed used when Seeded is set.
	Seed int64
	// MaxWait bounds how long a generation waits for its job.
	MaxWait time.Duration
	// QuoteTTL is how long a quote lives unless the scenario says otherwise.
	QuoteTTL time.Duration
	// OutputTTL is how long outputs are served unless the scenario says otherwise.
	OutputTTL time.Duration
	// JobRetention is how long finished jobs are kept.
	JobRetention time.Duration
	// Logger receives the faults of the emulator itself (never of a client's request).
	Logger *slog.Logger
	// MaxJobs bounds the jobs a world retains; the oldest finished go first (default 100,000).
	MaxJobs int
	// Wall is real time as tenants see it: when one was last used, and when the sweep for idle
	// ones runs. Idleness is real time, unlike a tenant's own clock; tests pass a manual clock
	// to drive it. Nil means a real clock that the tenants own and close.
	Wall *clock.Clock
	// MaxTenants bounds the named tenants alive at once (default DefaultMaxTenants).
	MaxTenants int
	// TenantIdle is how long an unused named tenant lives (default DefaultTenantIdle).
	TenantIdle time.Duration
	// MemoryBudget bounds the bytes all tenants' stores hold together (default
	// budget.DefaultBytes); Budget is made from it unless given.
	MemoryBudget int64
	// Budget is the bound itself, shared by every store.
	Budget *budget.Budget
	// Coverage counts the contract's cases over the whole run: every world adds to it, and it
	// outlives resets and dropped tenants. Nil means counts of the tenants' own.
	Coverage *evidence.Counts
	// JournalMax bounds the entries of each world's journal (JournalEntries when ≤ 0).
	JournalMax int
	// Webhook is the run's webhook (--webhook), in force in every world until a scenario or
	// the control API sets another; WebhookSecret (--webhook-secret) also signs a scenario's.
	Webhook       *webhooks.Config
	WebhookSecret webhooks.Secret
	// WebhookSender sends every world's deliveries; nil sends none.
	WebhookSender webhooks.Sender
	// WebhookRender is a job as GET /v1/jobs/{id} shows it to a client reaching the emulator
	// at base, a delivery's data.
	WebhookRender func(base string, v jobs.View) ([]byte, error)

	maker *media.Maker // made from Media by withDefaults, shared by every world
}

// clockMode is the mode a new world's clock starts in.
func (c *Config) clockMode() clock.Mode {
	switch {
	case c.SkipClock:
		return clock.Skip
	case c.ManualClock:
		return clock.Manual
	}
	return clock.Real
}

// ManualStart is where a manual clock starts unless Config.Start says otherwise.
var ManualStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Defaults of the settings a Config may leave out.
const (
	DefaultMaxWait      = 180 * time.Second
	DefaultQuoteTTL     = 10 * time.Minute
	DefaultOutputTTL    = time.Hour
	DefaultJobRetention = 24 * time.Hour
)

// withDefaults fills what the caller left out: the one place the defaults of the world's
// settings are applied (emulator.Config passes them through unchanged).
func (c Config) withDefaults() Config {
	orDefault(&c.MaxJobs, jobs.DefaultMaxJobs)
	orDefault(&c.MaxTenants, DefaultMaxTenants)
	orDefault(&c.JournalMax, JournalEntries)
	orDefault(&c.MemoryBudget, budget.DefaultBytes)
	orDefault(&c.TenantIdle, DefaultTenantIdle)
	orDefault(&c.MaxWait, DefaultMaxWait)
	orDefault(&c.QuoteTTL, DefaultQuoteTTL)
	orDefault(&c.OutputTTL, DefaultOutputTTL)
	orDefault(&c.JobRetention, DefaultJobRetention)
	c.JobRetention = max(c.JobRetention, c.OutputTTL) // a job outlives its outputs
	if c.Start.IsZero() {
		c.Start = ManualStart
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Budget == nil {
		c.Budget = budget.New(c.MemoryBudget)
	}
	if c.Coverage == nil {
		c.Coverage = evidence.NewCounts(nil)
	}
	c.maker = media.NewMaker(c.Media)
	return c
}

// orDefault sets a setting left at zero (or below) to its default.
func orDefault[T int | int64 | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}
