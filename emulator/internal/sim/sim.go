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
	"github.com/mediagen/mediagen-emulator/emulator/internal/media"
	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
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
	// Budget bounds the bytes all tenants' stores hold together; nil means no bound.
	Budget *budget.Budget
	// Coverage counts the contract's cases over the whole run: every world adds to it, and it
	// outlives resets and dropped tenants. Nil means counts of the tenants' own.
	Coverage *evidence.Counts
	// JournalMax bounds the entries of each world's journal (JournalEntries when ≤ 0).
	JournalMax int

	maker *media.Maker // made from Media by withDefaults, shared by every world
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

// withDefaults fills what the caller left out: the one place the defaults of these settings
// live (emulator.Config passes them through unchanged).
func (c Config) withDefaults() Config {
	if c.MaxWait <= 0 {
		c.MaxWait = DefaultMaxWait
	}
	if c.QuoteTTL <= 0 {
		c.QuoteTTL = DefaultQuoteTTL
	}
	if c.OutputTTL <= 0 {
		c.OutputTTL = DefaultOutputTTL
	}
	if c.JobRetention <= 0 {
		c.JobRetention = DefaultJobRetention
	}
	c.JobRetention = max(c.JobRetention, c.OutputTTL) // a job outlives its outputs
	if c.Start.IsZero() {
		c.Start = ManualStart
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Budget == nil {
		c.Budget = budget.New(0)
	}
	if c.JournalMax <= 0 {
		c.JournalMax = JournalEntries
	}
	if c.Coverage == nil {
		c.Coverage = evidence.NewCounts(nil)
	}
	c.maker = media.NewMaker(c.Media)
	return c
}
