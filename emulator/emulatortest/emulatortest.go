// Package emulatortest runs the Media Generation Service emulator inside a Go test and controls
// it from there: time, scenarios, forced outcomes, credits, faults and the request journal.
//
// A test starts its own emulator and talks to it with its own HTTP client, exactly as it would
// to the hosted service:
//
//	func TestGenerate(t *testing.T) {
//		emu := emulatortest.Start(t, emulatortest.WithSeed(42))
//		client := mediagen.NewClient(emu.URL, emu.Keys.All) // your client under test
//		job := client.Generate(...)                          // 202, status "queued"
//		// ... GET the job: "running", GET it again: "succeeded"
//	}
//
// Each call to Start builds a separate emulator on its own 127.0.0.1 port, so tests may run in
// parallel without seeing each other's jobs, credits or clock. Start registers a cleanup that
// shuts the emulator down when the test ends: waiting requests are answered, connections are
// closed and no goroutine stays behind.
//
// The emulator's clock skips unless WithManualClock or WithRealClock is given: time stands still,
// but whenever a request waits on a job (a wait=true generation, a poll of a job not yet
// terminal) it jumps to the job's next transition at once, so a client's ordinary flow finishes
// in milliseconds with simulated timestamps, and no test needs to sleep. WithManualClock keeps
// time still until the test calls Advance or SetTime, for tests that look at a job while it is
// queued or running, or at a quote or output just before it expires.
//
// Start takes a TB, the few methods of testing.TB it needs, which *testing.T, *testing.B and
// *testing.F all have. Outside a test (TestMain, Example functions, a program) use Standalone:
//
//	func TestMain(m *testing.M) {
//		var tb emulatortest.Standalone
//		emu = emulatortest.Start(&tb) // one emulator for every test of the package
//		code := m.Run()
//		tb.Close()
//		os.Exit(code)
//	}
//
// In each test, emu.Tenant(t) gives the test a tenant of its own on that shared emulator — its
// own clock, credits, jobs, journal and faults — so such tests run in parallel (t.Parallel())
// and need no reset. emu.For(t) instead reports control failures to t on the default tenant.
package emulatortest

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator"
)

// TB is what Start and the control methods need from a test: the subset of testing.TB that
// *testing.T, *testing.B and *testing.F have. It is an interface of its own because testing.TB
// cannot be implemented outside the testing package; Standalone implements TB for code that
// runs outside a test.
type TB interface {
	Helper()
	Cleanup(func())
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
}

// Keys are the API keys of the embedded default catalog.
type Keys struct {
	// All has models:read and generate, on an account with 1,000,000 credits.
	All string
	// Read has models:read only.
	Read string
	// Generate has generate only, on an account with 1,000,000 credits.
	Generate string
	// Poor has models:read and generate, on an account with 10 credits.
	Poor string
}

// Accounts are the account ids of the embedded default catalog, as SetCredits and Balances
// name them; each belongs to the key of the same field in Keys.
type Accounts struct {
	All, Read, Generate, Poor string
}

// DefaultKeys and DefaultAccounts are the keys and accounts the embedded catalog ships.
var (
	DefaultKeys     = Keys{All: "mg_test_all", Read: "mg_test_read", Generate: "mg_test_generate", Poor: "mg_test_poor"}
	DefaultAccounts = Accounts{All: "acct_all", Read: "acct_read", Generate: "acct_generate", Poor: "acct_poor"}
)

// Emulator is one running emulator. Its control methods call the control API over HTTP and end
// the test with Fatalf when the emulator does not answer as expected; like testing.T.Fatal,
// they must be called from the goroutine running the test.
type Emulator struct {
	// URL is the base URL, such as http://127.0.0.1:41234, with no trailing slash. The API is
	// under URL+"/v1", the control API under URL+"/_emulator".
	URL string
	// Keys are the default catalog's keys; empty when WithCatalog chose another catalog (use
	// the keys that catalog defines).
	Keys Keys
	// Accounts are the default catalog's account ids; empty when WithCatalog is used.
	Accounts Accounts

	// TenantName is the tenant this handle acts in: "" for the default tenant, or the name
	// Tenant(t) made. Keys then carry it (KEY.NAME), and control calls send X-Emulator-Tenant.
	TenantName string

	t          TB
	client     *http.Client
	adminToken string
	// given says the tenant is the one the environment names (FromEnv): Tenant gives it
	// again instead of a fresh one, and nothing deletes it.
	given bool
}

// tenantSeq numbers the tenants Tenant makes, so names stay unique within a process.
var tenantSeq atomic.Uint64

// Tenant returns a handle on a new tenant of this emulator for test t: its own clock, accounts,
// quotes, jobs, journal, faults and scenario, invisible to every other tenant. Many tests can
// share one emulator (started once in TestMain) and still run in parallel:
//
//	func TestX(t *testing.T) {
//		t.Parallel()
//		emu := shared.Tenant(t)
//		client := mediagen.NewClient(emu.URL, emu.Keys.All) // the key names the tenant
//		...
//		emu.Advance(5 * time.Second) // moves this test's clock only
//	}
//
// The tenant is deleted when t ends; when MEDIAGEN_SNAPSHOT_DIR is set and t failed, its
// snapshot is saved there first (see SnapshotOnFailure).
func (e *Emulator) Tenant(t TB) *Emulator {
	t.Helper()
	if e.given {
		// FromEnv's tenant: explore or conformance made it for this run, with its plan.
		return e.For(t)
	}
	name := tenantName(t)
	c := *e
	c.t, c.TenantName = t, name
	if e.Keys != (Keys{}) {
		c.Keys = Keys{All: e.Keys.All + "." + name, Read: e.Keys.Read + "." + name,
			Generate: e.Keys.Generate + "." + name, Poor: e.Keys.Poor + "." + name}
	}
	c.do(http.MethodGet, "/_emulator/health", nil, http.StatusOK, nil) // make it now: a bound refuses here, not mid-test
	t.Cleanup(func() { c.do(http.MethodDelete, "/_emulator/tenants/"+name, nil, http.StatusNoContent, nil) })
	c.snapshotOnFailureFromEnv(t)
	return &c
}

// tenantName makes a tenant name from the test's name (when it has one) and a sequence number.
func tenantName(t TB) string {
	base := "t"
	if named, ok := t.(interface{ Name() string }); ok {
		base = safeName(named.Name())
	}
	suffix := "-" + strconv.FormatUint(tenantSeq.Add(1), 36)
	if len(base)+len(suffix) > 64 {
		base = base[:64-len(suffix)]
	}
	return base + suffix
}

// safeName keeps letters, digits, _ and - and turns every other character into _, so a test's
// name can name a tenant or a file.
func safeName(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, name)
}

// Key returns a configured key in this handle's tenant: KEY.NAME, or KEY in the default tenant.
// Use it for the keys of a catalog given WithCatalog.
func (e *Emulator) Key(key string) string {
	if e.TenantName == "" {
		return key
	}
	return key + "." + e.TenantName
}

// Header holds the headers that put a request in this handle's tenant (none for the default
// tenant); add them to requests whose key does not already name the tenant.
func (e *Emulator) Header() http.Header {
	h := http.Header{}
	if e.TenantName != "" {
		h.Set("X-Emulator-Tenant", e.TenantName)
	}
	return h
}

// HTTPClient returns a client whose requests go to this handle's tenant whatever key they carry.
func (e *Emulator) HTTPClient() *http.Client {
	return &http.Client{Transport: tenantTransport{base: e.client.Transport, tenant: e.TenantName}, Timeout: e.client.Timeout}
}

// tenantTransport adds X-Emulator-Tenant to every request.
type tenantTransport struct {
	base   http.RoundTripper
	tenant string
}

// RoundTrip sends the request with the tenant's header.
func (tt tenantTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if tt.tenant != "" && r.Header.Get("X-Emulator-Tenant") == "" {
		r = r.Clone(r.Context())
		r.Header.Set("X-Emulator-Tenant", tt.tenant)
	}
	return tt.base.RoundTrip(r)
}

// For returns the same emulator reporting its control failures to t. It lets tests share an
// emulator started elsewhere (in TestMain, or by a parent test) and still fail the right test.
func (e *Emulator) For(t TB) *Emulator {
	c := *e
	c.t = t
	return &c
}

// settings are what the options set.
type settings struct {
	cfg emulator.Config
	// exploreSeed and exploreOut are Explore's (WithExploreSeed, WithExploreOut).
	exploreSeed int64
	exploreOut  string
}

// Option changes how Start builds the emulator.
type Option func(*settings)

// WithCatalog serves the catalog YAML file at path instead of the embedded default. Keys and
// Accounts are then left empty.
func WithCatalog(path string) Option {
	return func(s *settings) { s.cfg.CatalogFile = path }
}

// WithScenario starts the emulator in a scenario: an embedded name (default, realistic, flaky,
// slow, expiring, outage, rate-limited) or the path of a scenario YAML file.
func WithScenario(nameOrPath string) Option {
	return func(s *settings) { s.cfg.Scenario = nameOrPath }
}

// WithSeed makes ids, random draws (such as the flaky scenario's failures) and media bytes
// reproducible: the same seed and the same requests give the same results on every run.
// Without it ids are random.
func WithSeed(seed int64) Option {
	return func(s *settings) { s.cfg.Seeded, s.cfg.Seed = true, seed }
}

// WithSkipClock keeps the emulator's clock still, except that a request waiting on a job moves
// it to the job's next transition at once. It is the default, because a test on a real clock
// has to sleep while jobs run and quotes age, and becomes slow and flaky, while on a skipping
// clock a wait=true answers the finished job at once and every timestamp is reproducible.
func WithSkipClock() Option {
	return func(s *settings) { s.cfg.ManualClock, s.cfg.SkipClock = false, true }
}

// WithManualClock keeps the emulator's clock still until Advance or SetTime moves it: a job
// stays queued, a quote valid and an output downloadable for exactly as long as the test says.
// A wait=true then waits until the test advances the clock (see AwaitWaiting).
func WithManualClock() Option {
	return func(s *settings) { s.cfg.ManualClock, s.cfg.SkipClock = true, false }
}

// WithRealClock runs the emulator on the wall clock, as the binary does by default: jobs finish
// on their own after their catalog timing (about a second for images). Advance and SetTime
// still jump it forward.
func WithRealClock() Option {
	return func(s *settings) { s.cfg.ManualClock, s.cfg.SkipClock = false, false }
}

// WithStartTime is where a skipping or manual clock starts (default 2026-01-01T00:00:00Z, as
// emulator.ManualStart). SetTime can only move the clock forward from there.
func WithStartTime(t time.Time) Option {
	return func(s *settings) { s.cfg.Start = t }
}

// WithMaxWait bounds how long POST /v1/generate?wait=true waits for a job (default 180 s), on
// the emulator's clock or in real time, whichever passes first.
func WithMaxWait(d time.Duration) Option {
	return func(s *settings) { s.cfg.MaxWait = d }
}

// WithQuoteTTL sets how long a quote stays valid (default 10 minutes of emulator time).
func WithQuoteTTL(d time.Duration) Option {
	return func(s *settings) { s.cfg.QuoteTTL = d }
}

// WithAdminToken makes the control API require the token as X-Emulator-Admin-Token. The
// control methods send it; use it to test a client's handling of a protected control API.
func WithAdminToken(token string) Option {
	return func(s *settings) { s.cfg.AdminToken = token }
}

// WithLogger sends the emulator's logs (one line per request, and every server fault) to
// logger. By default they are discarded.
func WithLogger(logger *slog.Logger) Option {
	return func(s *settings) { s.cfg.Logger = logger }
}

// shutdownTimeout bounds how long cleanup waits for requests in flight.
const shutdownTimeout = 10 * time.Second

// Start runs an emulator in this process on a free 127.0.0.1 port and returns it ready for
// requests. A bad option (an unknown scenario, a catalog that does not load) ends the test with
// the emulator's message. When MEDIAGEN_SNAPSHOT_DIR is set, a failed test's snapshot of the
// default tenant is saved there (see SnapshotOnFailure). The cleanup Start registers shuts the emulator down: requests waiting
// for jobs are answered with the job as it stands, and every connection and goroutine ends.
func Start(t TB, opts ...Option) *Emulator {
	t.Helper()
	s := settings{cfg: emulator.Config{SkipClock: true}}
	for _, o := range opts {
		o(&s)
	}
	srv, err := emulator.NewServer(s.cfg)
	if err != nil {
		t.Fatalf("emulatortest: cannot start the emulator:\n%v", err)
		return nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = srv.Close()
		t.Fatalf("emulatortest: cannot listen on 127.0.0.1: %v", err)
		return nil
	}
	stop, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	limits := emulator.ServeLimits{BodyTimeout: time.Minute, DrainTimeout: shutdownTimeout}
	go func() { served <- srv.Serve(stop, ln, limits) }()
	transport := &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second}
	e := &Emulator{
		URL:        "http://" + ln.Addr().String(),
		t:          t,
		client:     &http.Client{Transport: transport, Timeout: time.Minute},
		adminToken: s.cfg.AdminToken,
	}
	if s.cfg.CatalogFile == "" {
		e.Keys, e.Accounts = DefaultKeys, DefaultAccounts
	}
	t.Cleanup(func() {
		transport.CloseIdleConnections()
		cancel() // Serve wakes waiting requests, closes unused connections and drains the rest
		if err := <-served; err != nil {
			t.Logf("emulatortest: %v", err)
		}
		_ = srv.Close()
	})
	e.snapshotOnFailureFromEnv(t)
	return e
}

// Standalone is a TB for code that runs outside a test: TestMain, Example functions, a small
// program. Helper does nothing, Logf writes to standard error, Fatalf panics with the message,
// and Close runs the registered cleanups, last first. The zero value is ready to use.
type Standalone struct {
	mu       sync.Mutex
	cleanups []func()
}

var _ TB = (*Standalone)(nil)

// Helper does nothing.
func (s *Standalone) Helper() {}

// Cleanup registers f to run on Close.
func (s *Standalone) Cleanup(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleanups = append(s.cleanups, f)
}

// Fatalf panics with the formatted message.
func (s *Standalone) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}

// Logf writes the formatted message to standard error.
func (s *Standalone) Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

// Close runs the registered cleanups, last registered first, once each.
func (s *Standalone) Close() {
	for {
		s.mu.Lock()
		n := len(s.cleanups)
		if n == 0 {
			s.mu.Unlock()
			return
		}
		f := s.cleanups[n-1]
		s.cleanups = s.cleanups[:n-1]
		s.mu.Unlock()
		f()
	}
}
