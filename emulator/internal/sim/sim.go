// Package sim is the emulator's application core: the rules of quotes, generations and jobs, the
// simulated world they change, and the tenants that each own a world. It knows nothing of HTTP:
// the transport decodes a request, makes one call here, and encodes the answer or the coded
// problem (package problem) that comes back.
package sim

import (
	"github.com/mediagen/mediagen-emulator/emulator/config"
	"github.com/mediagen/mediagen-emulator/emulator/internal/budget"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
	"github.com/mediagen/mediagen-emulator/emulator/internal/inputs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/media"
	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
	"github.com/mediagen/mediagen-emulator/emulator/internal/webhooks"
)

// Config is what every world is built from: the settings as the user wrote them, and what the
// server made of them. The catalog, scenarios and media fixtures are shared by every tenant;
// everything a world changes is its own.
type Config struct {
	// Settings are the user's settings (emulator.Config), their defaults applied by NewTenants.
	config.Settings

	// Catalog, Scenario and WebhookSecret are what the server made of the settings of those
	// names (a catalog file or document, a scenario name or path, a whsec_ text). Declared
	// here, they hide those settings, which the core never reads.

	// Catalog is the models, products, keys and accounts served.
	Catalog *catalog.Catalog
	// Scenario is the scenario in force at the start and after a reset.
	Scenario *scenario.Scenario
	// WebhookSecret (--webhook-secret) signs the run's webhook and a scenario's.
	WebhookSecret webhooks.Secret
	// Scenarios are the named scenarios a world may switch to.
	Scenarios map[string]*scenario.Scenario
	// Webhook is the run's webhook (--webhook), in force in every world until a scenario or
	// the control API sets another.
	Webhook *webhooks.Config
	// WebhookSender sends every world's deliveries; nil sends none.
	WebhookSender webhooks.Sender
	// Budget is the memory bound itself, shared by every store; nil means one made from
	// MemoryBudget.
	Budget *budget.Budget
	// Coverage counts the contract's cases over the whole run: every world adds to it, and it
	// outlives resets and dropped tenants. Nil means counts of the tenants' own.
	Coverage *evidence.Counts
	// Wall is real time as tenants see it: when one was last used, and when the sweep for idle
	// ones runs. Idleness is real time, unlike a tenant's own clock; tests pass a manual clock
	// to drive it. Nil means a real clock that the tenants own and close.
	Wall *clock.Clock
	// JournalMax, when set, bounds each world's journal below JournalEntries, so tests can
	// make it wrap around.
	JournalMax int

	maker *media.Maker // made from Media by complete, shared by every world
	// categories are the catalog's categories, of every model listed or not, which a
	// listing's category filter may name.
	categories map[string]bool
	linkKey    []byte          // the run's secret for signed output links (links.go), from NewTenants' ids
	fetcher    *inputs.Fetcher // reads inputs from --inputs-allow hosts (media_inputs.go)
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

// complete applies the settings' defaults (config.Settings.WithDefaults, the one place they are
// applied) and makes what the server did not hand over.
func (c Config) complete() Config {
	c.Settings = c.Settings.WithDefaults()
	if c.JournalMax <= 0 {
		c.JournalMax = JournalEntries
	}
	if c.Budget == nil {
		c.Budget = budget.New(c.MemoryBudget)
	}
	if c.Coverage == nil {
		c.Coverage = evidence.NewCounts(nil)
	}
	c.maker = media.NewMaker(c.Media)
	allow, _ := inputs.ParseAllow(c.InputsAllow) // CheckInputSettings refused what does not parse
	c.fetcher = inputs.NewFetcher(allow)
	c.categories = map[string]bool{}
	if c.Catalog != nil {
		for _, m := range c.Catalog.Models {
			c.categories[m.Category] = true
		}
	}
	return c
}
