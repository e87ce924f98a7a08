package sim

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mediagen/mediagen-emulator/emulator/api"
	"github.com/mediagen/mediagen-emulator/emulator/internal/budget"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/clock"
	"github.com/mediagen/mediagen-emulator/emulator/internal/evidence"
	"github.com/mediagen/mediagen-emulator/emulator/internal/ids"
	"github.com/mediagen/mediagen-emulator/emulator/internal/ledger"
	"github.com/mediagen/mediagen-emulator/emulator/internal/media"
	"github.com/mediagen/mediagen-emulator/emulator/internal/problem"
)

// DefaultTenant names the tenant of requests that name none. It always exists and is never
// dropped, so an emulator used without tenants behaves as one world.
const DefaultTenant = "default"

// tenantName is what a tenant may be called.
var tenantName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidTenantName reports whether name may name a tenant.
func ValidTenantName(name string) bool { return tenantName.MatchString(name) }

// InvalidTenant is the problem for a tenant name outside the rules.
func InvalidTenant(name string) error {
	if len(name) > 80 {
		name = name[:80] + "…"
	}
	return problem.New(problem.InvalidTenant, "tenant %q is not a valid name: use 1 to 64 of A-Z, a-z, 0-9, _ and -", name)
}

// Tenant is one isolated copy of the emulator's mutable world, reset in place.
type Tenant struct {
	name    string
	created time.Time // real time
	ids     *ids.Generator
	current atomic.Pointer[World]

	lastUsed atomic.Int64 // real time, Unix nanoseconds
	active   atomic.Int64 // requests in progress (gone once dropped); a tenant in use is never idle
	make     func() *World
	// build makes a world on a given clock, id source and ledger (a snapshot's).
	build func(*clock.Clock, *ids.Generator, *ledger.Ledger) *World
	wall  *clock.Clock
	run   *evidence.Run // where the tenant's findings go when a world of it goes

	resetMu sync.Mutex
	ended   bool // dropped or closed: its world is retired for good; guarded by resetMu

	budget   *budget.Budget
	countMu  sync.Mutex
	counted  int64 // what the tenant's world last counted against the budget; guarded by countMu
	finished bool  // dropped: it counts nothing any more; guarded by countMu
}

// Name is the tenant's name.
func (t *Tenant) Name() string { return t.name }

// World is the tenant's current world; a request loads it once and keeps it.
func (t *Tenant) World() *World { return t.current.Load() }

// gone is added to a dropped tenant's count of requests in progress: the count stays negative
// whatever Enter and Leave do after, which is how a request learns it came too late.
const gone = math.MinInt64 / 2

// Reset puts the tenant's whole world back to the configured start. A tenant dropped or closed
// meanwhile is left as it is: a world made for it would never be retired, and its clock would
// run on.
func (t *Tenant) Reset() *World {
	t.resetMu.Lock()
	defer t.resetMu.Unlock()
	if t.ended {
		return t.World()
	}
	w := t.make()
	old := t.current.Swap(w)
	old.retire()
	t.fold(old)
	t.count(true)
	return w
}

// end retires the tenant's world for good and returns it.
func (t *Tenant) end() *World {
	t.resetMu.Lock()
	t.ended = true
	w := t.World()
	t.resetMu.Unlock()
	w.retire()
	return w
}

// fold keeps what the report finds in a world that is going, for the whole run's report.
func (t *Tenant) fold(w *World) { t.run.Later(t.name, w.Judge) }

// Enter marks the tenant in use by a request; Leave ends that use. A tenant is idle from the
// end of its last request. Enter reports false, and the use does not count, when the tenant
// was dropped before it: the request must find the tenant again, which makes a new one.
func (t *Tenant) Enter() bool {
	if t.active.Add(1) <= 0 {
		return false
	}
	t.lastUsed.Store(t.wall.Now().UnixNano())
	return true
}

// Leave ends a use that Enter began, and counts what the tenant now holds against the budget.
func (t *Tenant) Leave() {
	t.lastUsed.Store(t.wall.Now().UnixNano())
	t.active.Add(-1)
	t.count(false)
}

// worldOverhead is what a world costs before it holds anything: its maps, clock, ledger and
// stores, rounded up from what an empty tenant measures.
const worldOverhead = 16 << 10

// holder is a store of a world that says how many bytes it holds, as counted against the
// memory budget.
type holder interface{ Bytes() int64 }

// footprint is what the world holds, as counted against the memory budget.
func (w *World) footprint() int64 {
	n := int64(worldOverhead) + w.expectedBytes() + w.scenarioBytes()
	for _, h := range [...]holder{w.quotes, w.jobs, w.idem, w.journal, w.hooks, w.faults, w.uploads} {
		n += h.Bytes()
	}
	return n
}

// count brings what the tenant counts against the budget up to date. Unless it must, it skips
// when another count of the tenant is under way, which will see much the same: requests then
// never queue to count.
func (t *Tenant) count(must bool) {
	if must {
		t.countMu.Lock()
	} else if !t.countMu.TryLock() {
		return
	}
	defer t.countMu.Unlock()
	if t.finished {
		return
	}
	now := t.World().footprint()
	t.budget.Add(now - t.counted)
	t.counted = now
}

// finish lets go of everything the tenant counted: it has been dropped.
func (t *Tenant) finish() {
	t.countMu.Lock()
	defer t.countMu.Unlock()
	t.finished = true
	t.budget.Add(-t.counted)
	t.counted = 0
}

// admit refuses a change that would add n bytes past the memory budget.
func (w *World) admit(n int64) error {
	b := w.cfg.Budget
	if b.Admit(n) {
		return nil
	}
	return budgetExhausted(b)
}

// budgetExhausted is the problem for a change past the memory budget.
func budgetExhausted(b *budget.Budget) error {
	return &problem.Error{Code: problem.MemoryBudgetExhausted, RetryAfter: 5,
		Detail: fmt.Sprintf("the emulator's memory budget is used up (%d of %d bytes over all tenants, --memory-budget); nothing was changed: delete tenants that are done with DELETE /_emulator/tenants/{name}, reset them, let their quotes expire, or give the emulator a larger budget",
			b.Used(), b.Limit())}
}

// Present describes the tenant now, as GET /_emulator/tenants lists it.
func (t *Tenant) Present() api.Tenant {
	w := t.World()
	return api.Tenant{Name: t.name, CreatedAt: Timestamp(t.created), LastUsedAt: Timestamp(time.Unix(0, t.lastUsed.Load())),
		Jobs: w.Jobs(), Clock: api.TenantClock{Mode: w.ClockMode().String(), Now: Timestamp(w.Now())}}
}

// Tenants makes tenants on first use, drops idle ones and bounds how many live at once.
type Tenants struct {
	cfg     Config
	uploads *UploadGate // snapshot bodies in flight
	ids     *ids.Generator
	files   *media.Cache

	worlds atomic.Uint64 // numbers every world made, for its files' keys in the shared cache
	run    *evidence.Run // the findings of every world gone since the start

	wall    *clock.Clock
	ownWall bool // made here, so closed here

	mu        sync.Mutex
	byName    map[string]*Tenant
	lastSweep time.Time
	sweeper   *clock.Timer // the next periodic sweep
	closed    bool
}

// tooManyTenants is the problem for a new tenant past the bound.
func tooManyTenants(max int) error {
	return problem.New(problem.TooManyTenants, "%d tenants are live, the most this emulator keeps (--max-tenants); delete some with DELETE /_emulator/tenants/{name} or let them idle out", max)
}

// FileCacheBytes bounds the memory that made output files really hold (their capacity, not only
// their length); past it the least recently used are dropped and made again, identically, when
// next requested.
const FileCacheBytes = 256 << 20

// New makes a run's tenants from its configuration: ids seeded as the settings say (random
// without a seed), and one cache of made files, FileCacheBytes large, that every tenant shares.
func New(cfg Config) *Tenants {
	g := ids.NewRandom()
	if cfg.Seeded {
		g = ids.NewSeeded(cfg.Seed)
	}
	return NewTenants(cfg, g, media.NewCache(FileCacheBytes))
}

// ClearFiles drops every made output file from the cache, as a full cache would; the next
// request makes it again. Tests use it.
func (ts *Tenants) ClearFiles() { ts.files.Clear() }

// Uploads is the gate every snapshot body in flight goes through, across tenants: at most
// UploadsInFlight bodies of MaxSnapshotBytes together, counted against the budget.
func (ts *Tenants) Uploads() *UploadGate { return ts.uploads }

// Budget is the memory bound every store of every tenant counts against.
func (ts *Tenants) Budget() *budget.Budget { return ts.cfg.Budget }

// NewTenants builds the tenant set with its default tenant.
func NewTenants(cfg Config, g *ids.Generator, files *media.Cache) *Tenants {
	cfg = cfg.complete()
	cfg.linkKey = g.Secret(linkSecret)
	ts := &Tenants{cfg: cfg, ids: g, files: files, wall: cfg.Wall, byName: map[string]*Tenant{}, run: evidence.NewRun(),
		uploads: &UploadGate{limit: UploadsInFlight * cfg.MaxSnapshotBytes, budget: cfg.Budget}}
	if ts.wall == nil {
		ts.wall, ts.ownWall = clock.NewReal(), true
	}
	cfg.Budget.OnRecount(ts.recount)
	ts.byName[DefaultTenant] = ts.newTenant(DefaultTenant)
	ts.mu.Lock()
	ts.armSweep()
	ts.mu.Unlock()
	return ts
}

// armSweep schedules the next periodic sweep, a tenth of the idle time from now (at least a
// second), so idle tenants' memory goes back even when no request makes a new tenant (which
// sweeps too). Callers hold ts.mu.
func (ts *Tenants) armSweep() {
	if ts.closed {
		return
	}
	every := max(ts.cfg.TenantIdle/10, time.Second)
	ts.sweeper = ts.wall.AfterFunc(ts.wall.Now().Add(every), func() {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		ts.sweepLocked(ts.wall.Now(), true)
		ts.armSweep()
	})
}

func (ts *Tenants) newTenant(name string) *Tenant {
	g, path := ts.ids, "/files/"
	if name != DefaultTenant {
		g, path = ts.ids.For(name), "/files/"+name+"/"
	}
	now := ts.wall.Now()
	t := &Tenant{name: name, created: now.UTC(), ids: g, wall: ts.wall, budget: ts.cfg.Budget, run: ts.run}
	t.lastUsed.Store(now.UnixNano())
	t.build = func(c *clock.Clock, own *ids.Generator, l *ledger.Ledger) *World {
		if own == nil {
			own = g
		}
		w := newWorld(&ts.cfg, own, c, l, ts.files, path, strconv.FormatUint(ts.worlds.Add(1), 10)+":")
		w.journal.GiveWay(ts.cfg.Budget.Full)
		return w
	}
	t.make = func() *World { return t.build(nil, nil, nil) }
	t.current.Store(t.make())
	t.count(true)
	return t
}

// recount brings every tenant's count against the budget up to date, so that bytes the stores
// let go on their own (jobs past their retention, quotes past their end) are counted as gone
// before anything is refused.
func (ts *Tenants) recount() {
	ts.mu.Lock()
	all := slices.Collect(maps.Values(ts.byName))
	ts.mu.Unlock()
	for _, t := range all {
		t.count(true)
	}
}

// RunCoverage counts the contract's cases over every tenant since the tenants were made,
// dropped and reset ones included.
func (ts *Tenants) RunCoverage() *evidence.Counts { return ts.cfg.Coverage }

// Default is the default tenant.
func (ts *Tenants) Default() *Tenant {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.byName[DefaultTenant]
}

// Get returns the named tenant, making it from the configured start on first use. Past the
// bound a new name is refused with too_many_tenants; a live tenant is never evicted for it.
func (ts *Tenants) Get(name string) (*Tenant, error) {
	if name == "" {
		name = DefaultTenant
	}
	if !ValidTenantName(name) {
		return nil, InvalidTenant(name)
	}
	if t, ok := ts.Lookup(name); ok {
		return t, nil
	}
	// Outside ts.mu: admitting may recount every tenant.
	if !ts.cfg.Budget.Admit(worldOverhead) {
		return nil, budgetExhausted(ts.cfg.Budget)
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if t, ok := ts.byName[name]; ok {
		return t, nil
	}
	if ts.closed {
		return nil, problem.New(problem.ServiceUnavailable, "the emulator is shutting down")
	}
	now := ts.wall.Now()
	if len(ts.byName)-1 >= ts.cfg.MaxTenants {
		ts.sweepLocked(now, true)
		if len(ts.byName)-1 >= ts.cfg.MaxTenants {
			return nil, tooManyTenants(ts.cfg.MaxTenants)
		}
	} else {
		ts.sweepLocked(now, false)
	}
	t := ts.newTenant(name)
	ts.byName[name] = t
	return t, nil
}

// Lookup returns a tenant that exists, without making one.
func (ts *Tenants) Lookup(name string) (*Tenant, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t, ok := ts.byName[name]
	return t, ok
}

// sweepLocked drops tenants idle for longer than the idle time. Unless forced it runs at most
// once per tenth of the idle time, so making tenants stays cheap.
func (ts *Tenants) sweepLocked(now time.Time, force bool) {
	if !force && now.Sub(ts.lastSweep) < ts.cfg.TenantIdle/10 {
		return
	}
	ts.lastSweep = now
	for name, t := range ts.byName {
		if name == DefaultTenant || t.active.Load() > 0 {
			continue
		}
		// Only a tenant still unused as it is marked gone is dropped: a request that entered
		// it since the check keeps it, and one that enters after sees it gone.
		if now.Sub(time.Unix(0, t.lastUsed.Load())) >= ts.cfg.TenantIdle && t.active.CompareAndSwap(0, gone) {
			delete(ts.byName, name)
			t.fold(t.end())
			t.finish()
		}
	}
}

// Delete drops a tenant now: its jobs, quotes, journal and clock are gone, and requests that
// were waiting in it get their job's current state.
func (ts *Tenants) Delete(name string) error {
	if name == DefaultTenant {
		return problem.New(problem.TenantNotDeletable, "the default tenant cannot be deleted; POST /_emulator/reset starts it over")
	}
	ts.mu.Lock()
	t, ok := ts.byName[name]
	delete(ts.byName, name)
	ts.mu.Unlock()
	if !ok {
		return problem.New(problem.TenantNotFound, "no tenant %q", name)
	}
	t.active.Add(gone) // requests under way finish in the retired world; new ones make a new tenant
	t.fold(t.end())
	t.finish()
	return nil
}

// Report is the report of the whole run: every world gone since the start, and every live
// tenant judged now.
func (ts *Tenants) Report() api.Report {
	ts.mu.Lock()
	all := slices.Collect(maps.Values(ts.byName))
	ts.mu.Unlock()
	slices.SortFunc(all, func(a, b *Tenant) int { return strings.Compare(a.name, b.name) })
	live := make([]evidence.Live, len(all))
	for i, t := range all {
		n, fs := t.World().Judge()
		live[i] = evidence.Live{Tenant: t.name, Examined: n, Findings: fs}
	}
	return ts.run.Report(live)
}

// List describes every live tenant, the default first, then by name.
func (ts *Tenants) List() []api.Tenant {
	ts.mu.Lock()
	ts.sweepLocked(ts.wall.Now(), false)
	all := slices.Collect(maps.Values(ts.byName))
	ts.mu.Unlock()
	slices.SortFunc(all, func(a, b *Tenant) int {
		if (a.name == DefaultTenant) != (b.name == DefaultTenant) {
			if a.name == DefaultTenant {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	out := make([]api.Tenant, len(all))
	for i, t := range all {
		out[i] = t.Present()
	}
	return out
}

// Len counts the live tenants, the default included.
func (ts *Tenants) Len() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return len(ts.byName)
}

// Close retires every tenant's world, refuses new tenants, and returns once their clocks have
// stopped.
func (ts *Tenants) Close() {
	ts.mu.Lock()
	ts.closed = true
	if ts.sweeper != nil {
		ts.sweeper.Stop()
	}
	if ts.ownWall {
		ts.wall.Close()
	}
	all := slices.Collect(maps.Values(ts.byName))
	ts.mu.Unlock()
	worlds := make([]*World, len(all))
	for i, t := range all {
		worlds[i] = t.end()
	}
	// Leave nothing running: each real clock's loop returns soon after Close.
	if ts.ownWall {
		<-ts.wall.Exited()
	}
	for _, w := range worlds {
		<-w.clock.Exited()
	}
	ts.run.Wait() // no fold of a gone world outlives the emulator
}

// HeaderTenant names the tenant a request belongs to.
const HeaderTenant = "X-Emulator-Tenant"

// Resolve finds the tenant a request names, by its tenant header (HeaderTenant) or by a bearer
// token of the form KEY.NAME (an exact configured key always wins), and the token without its
// suffix. A file URL (path /files/{tenant}/{job}/{name}) names its tenant in its path. No name
// means the default tenant. A tenant not yet made is made only for a request that could act in
// it: one with a valid API key, or a control request controlDenied lets through.
func (ts *Tenants) Resolve(header, token, path string, controlDenied func() error) (*Tenant, string, error) {
	keys := ts.cfg.Catalog
	suffix := ""
	if token != "" {
		if _, exact := keys.Key(token); !exact {
			if i := strings.LastIndexByte(token, '.'); i > 0 {
				if _, ok := keys.Key(token[:i]); ok {
					token, suffix = token[:i], token[i+1:]
				}
			}
		}
	}
	if header != "" && suffix != "" && header != suffix {
		return nil, token, problem.New(problem.InvalidTenant, "%s names tenant %q but the key names tenant %q; send one, or the same in both", HeaderTenant, header, suffix)
	}
	name := header
	if name == "" {
		name = suffix
	}
	if rest, ok := strings.CutPrefix(path, "/files/"); ok && strings.Count(rest, "/") == 2 {
		// /files/{tenant}/{job}/{name}: the URL is the whole address, as a browser sends it.
		t, ok := ts.Lookup(rest[:strings.IndexByte(rest, '/')])
		if !ok {
			return nil, token, problem.New(problem.NotFound, "no file %s", path)
		}
		return t, token, nil
	}
	if name == "" {
		return ts.Default(), token, nil
	}
	if t, ok := ts.Lookup(name); ok {
		return t, token, nil
	}
	if path == "/_emulator/tenants" || strings.HasPrefix(path, "/_emulator/tenants/") {
		// The tenants' own routes act on the tenants named in their path: naming one that does
		// not exist yet (say, the one being deleted) must not make it.
		return ts.Default(), token, nil
	}
	// A client without a key then cannot use up --max-tenants, even where the control API is
	// open to everyone.
	if _, known := keys.Key(token); !known {
		if !strings.HasPrefix(path, "/_emulator/") {
			return nil, token, problem.New(problem.Unauthenticated, "tenant %q does not exist yet: a request makes it only with a valid API key, or with access to the control API", name)
		}
		if denied := controlDenied(); denied != nil {
			return nil, token, denied
		}
	}
	t, err := ts.Get(name)
	return t, token, err
}

// Authorize finds the API key a request's bearer token names and checks it holds perm;
// sent says whether the request had an Authorization header at all.
func (ts *Tenants) Authorize(sent bool, token string, perm catalog.Permission) (*catalog.Key, error) {
	if !sent {
		return nil, problem.New(problem.Unauthenticated, "send your API key as 'Authorization: Bearer <key>'")
	}
	if token == "" {
		return nil, problem.New(problem.Unauthenticated, "the Authorization header must be 'Bearer <key>'")
	}
	key, ok := ts.cfg.Catalog.Key(token)
	if !ok {
		return nil, problem.New(problem.Unauthenticated, "the API key is not known")
	}
	if !key.Can(perm) {
		return nil, &problem.Error{Code: problem.PermissionDenied, Detail: fmt.Sprintf("this key lacks the %q permission", perm),
			Extra: map[string]any{"permission": string(perm)}}
	}
	return key, nil
}
