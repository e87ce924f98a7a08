// Package emulator serves the Media Generation Service API from a catalog, on a clock and with
// state of its own. NewServer is all a Go test suite needs to run it in-process.
package emulator

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/ids"
	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
	"github.com/mediagen/mediagen-emulator/fixtures"
)

// Version is the emulator's version, sent as X-Emulator-Version; release builds set it with
// -ldflags "-X github.com/mediagen/mediagen-emulator/emulator.Version=...".
var Version = "0.1.0"

// DefaultCatalogName is how problems in the embedded default catalog name it.
const DefaultCatalogName = "fixtures/catalog/default.yaml"

// ManualStart is where a manual clock starts unless told otherwise: a fixed instant, so seeded
// runs produce the same timestamps.
var ManualStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Config is everything the emulator is built from. The zero value serves the embedded default
// catalog on a real clock with random ids.
type Config struct {
	// CatalogFile is a catalog YAML path; empty means the embedded default.
	CatalogFile string
	// Scenario names an embedded scenario or a scenario file path (default "default").
	Scenario string
	// ManualClock makes time stand still until the control API advances it.
	ManualClock bool
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
	// Logger receives one line per request and every server fault; nil discards them.
	Logger *slog.Logger
}

// Server is the emulator: an http.Handler over its own state. Close it to stop its clock.
type Server struct {
	cfg      Config
	catalog  *catalog.Catalog
	ids      *ids.Generator
	log      *slog.Logger
	handler  http.Handler
	files    *fileCache
	fixtures fs.FS

	scenarios     map[string]*scenario.Scenario // embedded, by name
	startScenario *scenario.Scenario            // the configured one, which reset returns to

	ready    chan struct{} // closed once the catalog is loaded
	current  atomic.Pointer[state]
	waiting  atomic.Int64 // requests blocked in waitForJob; tests use it to know a wait began
	closing  chan struct{}
	stopOnce sync.Once
}

// NewServer loads the configuration and returns a ready emulator. A bad catalog or scenario
// yields an error listing every problem as FILE:LINE: message.
func NewServer(cfg Config) (*Server, error) {
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = 180 * time.Second
	}
	if cfg.QuoteTTL <= 0 {
		cfg.QuoteTTL = 10 * time.Minute
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.OutputTTL <= 0 {
		cfg.OutputTTL = time.Hour
	}
	if cfg.JobRetention <= 0 {
		cfg.JobRetention = 24 * time.Hour
	}
	if cfg.JobRetention < cfg.OutputTTL {
		cfg.JobRetention = cfg.OutputTTL
	}
	if cfg.Start.IsZero() {
		cfg.Start = ManualStart
	}
	known, err := loadScenarios()
	if err != nil {
		return nil, err
	}
	start, err := resolveScenario(known, cfg.Scenario)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, fixtures: fixtures.FS, files: newFileCache(fileCacheBytes),
		closing: make(chan struct{}), ready: make(chan struct{}), scenarios: known, startScenario: start}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Seeded {
		s.ids = ids.NewSeeded(cfg.Seed)
	} else {
		s.ids = ids.NewRandom()
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
			s.writeError(w, r, errors.New("the embedded catalog failed to load"))
		}))
		s.current.Store(&state{clock: clock.NewManual(s.cfg.Start), gone: make(chan struct{})})
		return
	}
	s.catalog = cat
	s.current.Store(s.newState())
	s.handler = s.routes()
}

// Ready is closed once the catalog is loaded and the server answers requests.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// ServeHTTP answers one request, once the catalog is loaded.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case <-s.ready:
	case <-r.Context().Done():
		return
	}
	s.handler.ServeHTTP(w, r)
}

// state returns the current state; a request loads it once and keeps it.
func (s *Server) state() *state { return s.current.Load() }

// reset puts every piece of state back to the configured start.
func (s *Server) reset() {
	old := s.current.Swap(s.newState())
	old.retire()
	s.files.clear()
}

// Close stops the server's background work. Requests still in flight may finish.
func (s *Server) Close() error {
	<-s.ready
	s.Shutdown()
	s.state().retire()
	return nil
}

// embeddedCatalog is the embedded default catalog, loaded once per process: a catalog is
// immutable, so every emulator in a test binary can share it instead of parsing it again.
var embeddedCatalog = sync.OnceValues(func() (*catalog.Catalog, error) {
	data, err := fs.ReadFile(fixtures.FS, "catalog/default.yaml")
	if err != nil {
		return nil, err
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
	s.stopOnce.Do(func() { close(s.closing) })
}
