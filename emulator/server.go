// Package emulator serves the Media Generation Service API from a catalog, on a clock and with
// state of its own. NewServer is all a Go test suite needs to run it in-process.
package emulator

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/budget"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/ids"
	"github.com/mediagen/mediagen-emulator/emulator/internal/jobs"
	"github.com/mediagen/mediagen-emulator/emulator/internal/media"
	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
	"github.com/mediagen/mediagen-emulator/fixtures"
)

// Version is the emulator's version, sent as X-Emulator-Version; release builds set it with
// -ldflags "-X github.com/mediagen/mediagen-emulator/emulator.Version=...". Left at "dev", it is
// derived from the build information at start (see version.go).
var Version = "dev"

// DefaultCatalogName is how problems in the embedded default catalog name it.
const DefaultCatalogName = "fixtures/catalog/default.yaml"

// ManualStart is where a manual clock starts unless told otherwise: a fixed instant, so seeded
// runs produce the same timestamps.
var ManualStart = sim.ManualStart

// Config is everything the emulator is built from. The zero value serves the embedded default
// catalog on a real clock with random ids.
type Config struct {
	// CatalogFile is a catalog YAML path; empty means the embedded default.
	CatalogFile string
	// Scenario names an embedded scenario or a scenario file path (default "default").
	Scenario string
	// ManualClock makes time stand still until the control API advances it.
	ManualClock bool
	// SkipClock makes time stand still as ManualClock does, but a request that waits on a job
	// (a wait=true generation, a poll of a job not yet terminal) moves its tenant's clock to
	// the job's next transition at once. It wins over ManualClock.
	SkipClock bool
	// Start is where a manual clock starts (default ManualStart).
	Start time.Time
	// Seeded makes ids, random draws and media bytes reproducible from Seed.
	Seeded bool
	// Seed is the seed used when Seeded is set.
	Seed int64
	// MaxWait bounds how long POST /v1/generate?wait=true waits (default 180 s).
	MaxWait time.Duration
	// QuoteTTL is how long a quote lives (default 10 minutes).
	QuoteTTL time.Duration
	// OutputTTL is how long output files stay downloadable after a job finishes (default 1 h).
	OutputTTL time.Duration
	// JobRetention is how long finished jobs are kept before they are dropped (default 24 h).
	JobRetention time.Duration
	// AdminToken, when set, is required as X-Emulator-Admin-Token by the control API.
	AdminToken string
	// ControlDisabled turns the control API off (health excepted), as on a non-loopback
	// address without an admin token.
	ControlDisabled bool
	// MaxBodyBytes limits request bodies (default 1 MiB).
	MaxBodyBytes int64
	// MaxSnapshotBytes limits the body of PUT /_emulator/snapshot (default 64 MiB), which a
	// busy tenant's snapshot needs rather than the 1 MiB of other requests.
	MaxSnapshotBytes int64
	// MaxJobs bounds the jobs each tenant retains (default 100,000); past it the oldest finished
	// job is dropped and answers 404, as after --job-retention.
	MaxJobs int
	// MaxTenants bounds the named tenants alive at once (default 1,000); past it a request for a
	// new tenant answers 429 too_many_tenants.
	MaxTenants int
	// TenantIdle is how long a named tenant lives without requests (default 1 h, real time).
	TenantIdle time.Duration
	// MemoryBudget bounds the bytes all tenants' quotes, jobs, idempotency keys and journals
	// hold together (default 1 GiB); past it a change that would add more answers 503
	// memory_budget_exhausted, and nothing held is dropped for it.
	MemoryBudget int64
	// CORSOrigins are the origins browsers may call /v1 and /files from: empty or "*" means
	// any (answered "*"), "none" turns CORS off, else origins such as http://localhost:5173.
	CORSOrigins []string
	// Catalog, when set, is the catalog document itself (CatalogFile is then ignored).
	Catalog *Source
	// Media holds the video fixtures outputs are cut from (default: the embedded ones).
	Media fs.FS
	// wall is real time as tenants see it, for their idleness; the package's tests set a manual
	// clock here to drive it (default a real clock).
	wall *clock.Clock
	// journalEntries, when set, bounds each tenant's journal lower than usual, so the
	// package's tests can make it wrap around.
	journalEntries int
	// Logger receives one line per request and every server fault; nil discards them.
	Logger *slog.Logger
	// WebhookURL, when set, is the run's webhook: every tenant's job events are POSTed there,
	// signed with WebhookSecret, until a scenario or PUT /_emulator/webhooks sets another.
	WebhookURL string
	// WebhookSecret ("whsec_" and base64) signs the run's webhook and the scenarios'.
	WebhookSecret string
	// WebhookEvents are the events the run's webhook sends (default a job's end).
	WebhookEvents []string
	// WebhookAllow are the HOST[:PORT] beyond loopback that deliveries may reach.
	WebhookAllow []string
}

// Source is a named document, such as a catalog read from anywhere: problems name it.
type Source struct {
	Name string
	Data []byte
}

// Server is the emulator: an http.Handler over its tenants' worlds. Close it to stop their
// clocks.
type Server struct {
	cfg     Config
	catalog *catalog.Catalog
	ids     *ids.Generator
	log     *slog.Logger
	handler http.Handler
	files   *media.Cache
	tenants *sim.Tenants
	uploads *uploadGate // bounds snapshot bodies in flight (uploads.go)

	scenarios     map[string]*scenario.Scenario // embedded, by name
	startScenario *scenario.Scenario            // the configured one, which reset returns to

	webhooks webhookRun // the run's webhook settings and transport (webhook_handlers.go)

	ready    chan struct{} // closed once the catalog is loaded
	closing  chan struct{}
	stopOnce sync.Once

	parkedMu sync.Mutex
	parked   map[*parking]*sim.Waiter // wait=true generations answered later (park.go)
	stopping bool
	parkedWG sync.WaitGroup
	hangups  hangups // notices parked clients that hang up
}

// Defaults returns the Config NewServer fills a zero Config's settings from: the one source of
// the defaults a command line shows for its flags.
func Defaults() Config {
	return Config{
		Scenario:         "default",
		MaxWait:          sim.DefaultMaxWait,
		QuoteTTL:         sim.DefaultQuoteTTL,
		OutputTTL:        sim.DefaultOutputTTL,
		JobRetention:     sim.DefaultJobRetention,
		MaxBodyBytes:     1 << 20,
		MaxSnapshotBytes: DefaultMaxSnapshotBytes,
		MaxJobs:          jobs.DefaultMaxJobs,
		MaxTenants:       sim.DefaultMaxTenants,
		TenantIdle:       sim.DefaultTenantIdle,
		MemoryBudget:     budget.DefaultBytes,
	}
}

// NewServer loads the configuration and returns a ready emulator. A bad catalog or scenario
// yields an error listing every problem as FILE:LINE: message.
func NewServer(cfg Config) (*Server, error) {
	// The world's settings (clock, TTLs, waits, bounds) take their defaults in sim.Config,
	// once; only what the HTTP layer itself uses is settled here.
	d := Defaults()
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = d.MaxBodyBytes
	}
	if cfg.MaxSnapshotBytes <= 0 {
		cfg.MaxSnapshotBytes = d.MaxSnapshotBytes
	}
	if cfg.MemoryBudget <= 0 {
		// The upload gate holds the budget every store shares, so it is settled here, not in
		// sim.Config, which takes the budget it is given.
		cfg.MemoryBudget = d.MemoryBudget
	}
	known, err := loadScenarios()
	if err != nil {
		return nil, err
	}
	start, err := resolveScenario(known, cfg.Scenario)
	if err != nil {
		return nil, err
	}
	if cfg.Media == nil {
		cfg.Media = fixtures.FS
	}
	hooks, err := newWebhookRun(cfg)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, files: media.NewCache(fileCacheBytes), parked: map[*parking]*sim.Waiter{},
		closing: make(chan struct{}), ready: make(chan struct{}), scenarios: known, startScenario: start, webhooks: hooks}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if cfg.Seeded {
		s.ids = ids.NewSeeded(cfg.Seed)
	} else {
		s.ids = ids.NewRandom()
	}
	if cfg.Catalog != nil {
		cat, err := catalog.Parse(cfg.Catalog.Name, cfg.Catalog.Data)
		if err != nil {
			return nil, err
		}
		s.finishLoading(cat, nil)
		return s, nil
	}
	if cfg.CatalogFile == "" {
		// The embedded catalog is checked by the emulator's own tests, so it cannot fail here;
		// loading it in the background lets the emulator listen within milliseconds. Requests
		// that arrive first wait for it.
		go func() { s.finishLoading(embeddedCatalog()) }()
		return s, nil
	}
	cat, err := loadCatalog(cfg.CatalogFile)
	if err != nil {
		return nil, err
	}
	s.finishLoading(cat, nil)
	return s, nil
}

// finishLoading builds what depends on the catalog and opens the server to requests.
func (s *Server) finishLoading(cat *catalog.Catalog, err error) {
	defer close(s.ready)
	if err != nil {
		s.log.Error("cannot load the embedded catalog", "error", err)
		s.handler = s.frame(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.answer(w, r, reply{}, errors.New("the embedded catalog failed to load"))
		}))
		return
	}
	s.catalog = cat
	s.uploads = &uploadGate{limit: uploadsInFlight * s.cfg.MaxSnapshotBytes, budget: budget.New(s.cfg.MemoryBudget)}
	s.tenants = sim.NewTenants(sim.Config{
		Catalog:      cat,
		Scenarios:    s.scenarios,
		Scenario:     s.startScenario,
		Media:        s.cfg.Media,
		ManualClock:  s.cfg.ManualClock,
		SkipClock:    s.cfg.SkipClock,
		Start:        s.cfg.Start,
		Seeded:       s.cfg.Seeded,
		Seed:         s.cfg.Seed,
		MaxWait:      s.cfg.MaxWait,
		QuoteTTL:     s.cfg.QuoteTTL,
		OutputTTL:    s.cfg.OutputTTL,
		JobRetention: s.cfg.JobRetention,
		MaxJobs:      s.cfg.MaxJobs,
		Logger:       s.log,
		Wall:         s.cfg.wall,
		MaxTenants:   s.cfg.MaxTenants,
		TenantIdle:   s.cfg.TenantIdle,
		MemoryBudget: s.cfg.MemoryBudget,
		Budget:       s.uploads.budget,
		JournalMax:   s.cfg.journalEntries,

		Webhook:       s.webhooks.config,
		WebhookSecret: s.webhooks.secret,
		WebhookSender: s.webhooks.transport,
		WebhookRender: s.renderJob,
	}, s.ids, s.files)
	s.handler = s.routes()
}

// Ready is closed once the catalog is loaded and the server answers requests.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// ServeHTTP answers one request, once the catalog is loaded. A request that arrives first waits
// for it even if its client half-closes meanwhile, so it still gets a whole answer.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	<-s.ready
	s.handler.ServeHTTP(w, r)
}

// world returns the default tenant's current world; the package's own tests look inside it.
func (s *Server) world() *sim.World { return s.tenants.Default().World() }

// Close stops the server's background work. Requests still in flight may finish.
func (s *Server) Close() error {
	<-s.ready
	s.Shutdown()
	if s.tenants != nil {
		s.tenants.Close()
	}
	s.webhooks.transport.Close()
	return nil
}

// embeddedCatalog is the embedded default catalog, loaded once per process: a catalog is
// immutable, so every emulator in a test binary can share it instead of parsing it again.
var embeddedCatalog = sync.OnceValues(func() (*catalog.Catalog, error) {
	data, err := fs.ReadFile(fixtures.FS, "catalog/default.yaml")
	if err != nil {
		return nil, err
	}
	// The snapshot `go generate ./fixtures` wrote from the fully checked catalog loads in a few
	// milliseconds; a test fails when it is stale, and a stale or missing one is parsed instead.
	if snap, err := fs.ReadFile(fixtures.FS, "catalog/default.snapshot"); err == nil {
		if c, err := catalog.LoadSnapshot(snap, data); err == nil {
			go func() { _ = c.Compile() }() // warm every schema before its first quote needs it
			return c, nil
		}
	}
	// Its schemas compile on first use (and in the background): the catalog's own tests load it
	// fully checked, so startup need not check it again.
	c, err := catalog.ParseWith(DefaultCatalogName, data, catalog.Options{Workers: runtime.GOMAXPROCS(0), Trusted: true})
	if err == nil {
		go func() { _ = c.Compile() }() // warm every schema before its first quote needs it
	}
	return c, err
})

// loadCatalog reads a catalog file, or the embedded default when path is empty. The error lists
// every problem as FILE:LINE: message.
func loadCatalog(path string) (*catalog.Catalog, error) {
	name, data, err := readCatalog(path)
	if err != nil {
		return nil, err
	}
	return catalog.Parse(name, data)
}

func readCatalog(path string) (string, []byte, error) {
	if path == "" {
		data, err := fs.ReadFile(fixtures.FS, "catalog/default.yaml")
		return DefaultCatalogName, data, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil, fmt.Errorf("%s: no such file", path)
		}
		return "", nil, fmt.Errorf("%s: %w", path, errors.Unwrap(err))
	}
	return path, data, nil
}

// Shutdown tells requests that are waiting for jobs to answer with the state they have now;
// http.Server.RegisterOnShutdown calls it so a graceful stop does not wait out long polls.
func (s *Server) Shutdown() {
	s.stopOnce.Do(func() {
		close(s.closing)
		s.endParked()
		s.hangups.stop()
	})
}
