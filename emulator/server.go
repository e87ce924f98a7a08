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

	"github.com/mediagen/mediagen-emulator/emulator/config"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/hangup"
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

// ManualStart is where a manual or skipping clock starts unless Config.Start says otherwise: a
// fixed instant, so seeded runs produce the same timestamps.
var ManualStart = config.ManualStart

// Config is everything the emulator is built from: config.Settings, where each field is
// documented with its default. The zero value serves the embedded default catalog on a real
// clock with random ids; Config.WithDefaults says what every field left out becomes.
type Config = config.Settings

// Source is a named document, such as a catalog read from anywhere: problems name it.
type Source = config.Source

// Server is the emulator: an http.Handler over its tenants' worlds. Close it to stop their
// clocks.
type Server struct {
	cfg     Config
	catalog *catalog.Catalog
	log     *slog.Logger
	handler http.Handler
	tenants *sim.Tenants

	scenarios     map[string]*scenario.Scenario // embedded, by name
	startScenario *scenario.Scenario            // the configured one, which reset returns to

	webhooks sim.WebhookRun    // the run's webhook settings and transport
	wire     func(*sim.Config) // the tests' hook (newServer)

	ready    chan struct{} // closed once the catalog is loaded
	closing  chan struct{}
	stopOnce sync.Once

	parkedMu sync.Mutex
	parked   map[*parking]*sim.Waiter // wait=true generations answered later (park.go)
	stopping bool
	parkedWG sync.WaitGroup
	hangups  hangup.Watcher // notices parked clients that hang up
}

// NewServer loads the configuration and returns a ready emulator. A bad catalog or scenario
// yields an error listing every problem as FILE:LINE: message.
func NewServer(cfg Config) (*Server, error) { return newServer(cfg, nil) }

// newServer is NewServer with a hook the package's tests use to change the core's wiring (its
// wall clock, the journal's bound) before the tenants are made.
func newServer(cfg Config, wire func(*sim.Config)) (*Server, error) {
	cfg = cfg.WithDefaults()
	known, err := loadScenarios()
	if err != nil {
		return nil, err
	}
	start, err := resolveScenario(known, cfg.Scenario)
	if err != nil {
		return nil, err
	}
	hooks, err := sim.NewWebhookRun(cfg, "mediagen-emulator/"+Version)
	if err != nil {
		return nil, err
	}
	if err := sim.CheckInputSettings(cfg); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, parked: map[*parking]*sim.Waiter{},
		closing: make(chan struct{}), ready: make(chan struct{}), scenarios: known, startScenario: start, webhooks: hooks, wire: wire}
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
	wiring := sim.Config{
		Settings:      s.cfg,
		Catalog:       cat,
		Scenarios:     s.scenarios,
		Scenario:      s.startScenario,
		Webhook:       s.webhooks.Config,
		WebhookSecret: s.webhooks.Secret,
		WebhookSender: s.webhooks.Transport,
	}
	if s.wire != nil {
		s.wire(&wiring)
	}
	s.tenants = sim.New(wiring)
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
	s.webhooks.Transport.Close()
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
		s.hangups.Stop()
	})
}
